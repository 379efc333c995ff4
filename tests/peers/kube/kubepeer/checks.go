// SPDX-License-Identifier: Apache-2.0

package kubepeer

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Reader is how an autoscaler of one era reads the externalgrpc answers.
type Reader int

const (
	// Deprecated reads what cluster-autoscaler 1.30 to 1.34 read: the
	// template node embedded in field 1, the options' apimachinery
	// durations 3-5 (dereferenced with no nil check), and sends its
	// defaults the same way.
	Deprecated Reader = iota
	// Current reads what 1.35 on read: nodeBytes (2), the protobuf
	// durations 8-10 and the newest fields 11-12.
	Current
)

// The autoscaler's own defaults (its flags' defaults).
const (
	defUnneeded  = 10 * time.Minute
	defUnready   = 20 * time.Minute
	defProvision = 15 * time.Minute
	defStartup   = 15 * time.Minute
)

func fd(m protoreflect.Message, name string) protoreflect.FieldDescriptor {
	f := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if f == nil {
		panic("no field " + name + " in " + string(m.Descriptor().FullName()))
	}
	return f
}

func has(m *dynamicpb.Message, name string) bool { return m.Has(fd(m, name)) }

func get(m *dynamicpb.Message, name string) protoreflect.Value { return m.Get(fd(m, name)) }

func sub(m *dynamicpb.Message, name string) *dynamicpb.Message {
	return get(m, name).Message().Interface().(*dynamicpb.Message)
}

func set(m *dynamicpb.Message, name string, v any) { m.Set(fd(m, name), protoreflect.ValueOf(v)) }

// setBytes fills a message field from another library's encoding of it.
func setBytes(t *testing.T, m *dynamicpb.Message, name string, b []byte) {
	t.Helper()
	f := fd(m, name)
	s := m.Mutable(f).Message().Interface()
	if err := proto.Unmarshal(b, s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func idRequest(e *Env, msg string, id string) *dynamicpb.Message {
	m := e.New(msg)
	set(m, "id", id)
	return m
}

// The template node as the reader's autoscaler decodes it: v1.Node's own
// Unmarshal, from field 1 or field 2.
func templateNode(t *testing.T, e *Env, r Reader, id string) *v1.Node {
	t.Helper()
	resp, err := e.Call("NodeGroupTemplateNodeInfo",
		idRequest(e, "NodeGroupTemplateNodeInfoRequest", id), "NodeGroupTemplateNodeInfoResponse")
	if err != nil {
		t.Fatalf("NodeGroupTemplateNodeInfo %s: %v", id, err)
	}
	var raw []byte
	if r == Deprecated {
		if !has(resp, "nodeInfo") {
			t.Fatalf("NodeGroupTemplateNodeInfo %s: no nodeInfo (1): an autoscaler before 1.35 has no template node, so no scale-up from zero", id)
		}
		raw = marshal(t, sub(resp, "nodeInfo"))
	} else {
		raw = get(resp, "nodeBytes").Bytes()
		if len(raw) == 0 {
			t.Fatalf("NodeGroupTemplateNodeInfo %s: no nodeBytes (2)", id)
		}
	}
	n := &v1.Node{}
	if err := n.Unmarshal(raw); err != nil {
		t.Fatalf("NodeGroupTemplateNodeInfo %s: v1.Node.Unmarshal: %v", id, err)
	}
	return n
}

// fits is the part of the scheduler's filters a template node decides:
// requests against allocatable, the node selector, the taints.
func fits(n *v1.Node, p *v1.Pod) bool {
	if !labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	for _, taint := range n.Spec.Taints {
		if taint.Effect != v1.TaintEffectNoSchedule && taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		ok := false
		// ToleratesTaint's signature differs between k8s.io/api
		// versions: its rule for Equal and Exists, spelled out
		for _, tol := range p.Spec.Tolerations {
			ok = ok || ((tol.Effect == "" || tol.Effect == taint.Effect) &&
				(tol.Key == "" || tol.Key == taint.Key) &&
				(tol.Operator == v1.TolerationOpExists || tol.Value == taint.Value))
		}
		if !ok {
			return false
		}
	}
	want := v1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for k, q := range c.Resources.Requests {
			sum := want[k]
			sum.Add(q)
			want[k] = sum
		}
	}
	for k, q := range want {
		have, ok := n.Status.Allocatable[k]
		if !ok || have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

func pod(cpu, mem, eph string, tolerate bool) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeSelector: map[string]string{"vmact.io/group": "web"},
			Containers: []v1.Container{{
				Name: "c",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU:              resource.MustParse(cpu),
					v1.ResourceMemory:           resource.MustParse(mem),
					v1.ResourceEphemeralStorage: resource.MustParse(eph),
				}},
			}},
		},
	}
	if tolerate {
		p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual,
			Value: "web", Effect: v1.TaintEffectNoSchedule}}
	}
	return p
}

func testTemplate(t *testing.T, e *Env, r Reader) {
	n := templateNode(t, e, r, "web")
	if n.Name != "web-template" || n.Labels["vmact.io/group"] != "web" ||
		n.Labels["kubernetes.io/arch"] != "amd64" || n.Labels["kubernetes.io/os"] != "linux" ||
		n.Labels["kubernetes.io/hostname"] != n.Name {
		t.Errorf("template node's name and labels: %s %v", n.Name, n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" ||
		n.Spec.Taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("template node's taints: %v", n.Spec.Taints)
	}
	want := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("2"),
		v1.ResourceMemory:           resource.MustParse("2Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	for _, l := range []struct {
		what string
		rl   v1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		if len(l.rl) != len(want) {
			t.Errorf("template node's %s: %v, want %v", l.what, l.rl, want)
		}
		for k, q := range want {
			if got, ok := l.rl[k]; !ok || got.Cmp(q) != 0 {
				t.Errorf("template node's %s[%s]: %v, want %v", l.what, k, l.rl[k], q)
			}
		}
	}
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == v1.NodeReady && c.Status == v1.ConditionTrue)
	}
	if !ready || n.Status.NodeInfo.Architecture != "amd64" || n.Status.NodeInfo.OperatingSystem != "linux" {
		t.Errorf("template node's status: %+v", n.Status)
	}
	// what the autoscaler's scale-up simulation asks of the template
	if !fits(n, pod("1", "1Gi", "5Gi", true)) {
		t.Errorf("a pending pod requesting 5Gi of ephemeral-storage does not fit the template node")
	}
	if fits(n, pod("1", "1Gi", "30Gi", true)) {
		t.Errorf("a pod requesting 30Gi of ephemeral-storage fits a node of 20Gi")
	}
	if fits(n, pod("1", "1Gi", "1Gi", false)) {
		t.Errorf("a pod that does not tolerate the group's taint fits its template node")
	}
}

// Both fields hold the same node, whichever an autoscaler reads.
func testTemplateFields(t *testing.T, e *Env) {
	old := templateNode(t, e, Deprecated, "web")
	cur := templateNode(t, e, Current, "web")
	if !reflect.DeepEqual(old, cur) {
		t.Errorf("nodeInfo (1) and nodeBytes (2) differ:\n%+v\n%+v", old, cur)
	}
}

func k8sDuration(t *testing.T, m *dynamicpb.Message, name string) (time.Duration, bool) {
	if !has(m, name) {
		return 0, false
	}
	var d metav1.Duration
	if err := d.Unmarshal(marshal(t, sub(m, name))); err != nil {
		t.Fatalf("%s: metav1.Duration.Unmarshal: %v", name, err)
	}
	return d.Duration, true
}

func pbDuration(t *testing.T, m *dynamicpb.Message, name string) (time.Duration, bool) {
	if !has(m, name) {
		return 0, false
	}
	var d durationpb.Duration
	if err := proto.Unmarshal(marshal(t, sub(m, name)), &d); err != nil {
		t.Fatal(err)
	}
	return d.AsDuration(), true
}

// The defaults as the reader's autoscaler sends them.
func defaults(t *testing.T, e *Env, r Reader, id string) *dynamicpb.Message {
	req := idRequest(e, "NodeGroupAutoscalingOptionsRequest", id)
	d := req.Mutable(fd(req, "defaults")).Message().Interface().(*dynamicpb.Message)
	set(d, "scaleDownUtilizationThreshold", 0.5)
	set(d, "scaleDownGpuUtilizationThreshold", 0.5)
	set(d, "zeroOrMaxNodeScaling", false)
	set(d, "ignoreDaemonSetsUtilization", false)
	if r == Deprecated {
		for name, v := range map[string]time.Duration{"scaleDownUnneededTime": defUnneeded,
			"scaleDownUnreadyTime": defUnready, "MaxNodeProvisionTime": defProvision} {
			b, err := (&metav1.Duration{Duration: v}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			setBytes(t, d, name, b)
		}
		return req
	}
	for name, v := range map[string]time.Duration{"scaleDownUnneededDuration": defUnneeded,
		"scaleDownUnreadyDuration": defUnready, "MaxNodeProvisionDuration": defProvision,
		"maxNodeStartupDuration": defStartup} {
		setBytes(t, d, name, marshal(t, durationpb.New(v)))
	}
	set(d, "allowNonAtomicScaleUpToMax", false)
	return req
}

type options struct {
	util, gpu                    float64
	unneeded, unready, provision time.Duration
	startup                      time.Duration
	zeroOrMax, nonAtomic         bool
}

// readOptions reads the answer as the reader's autoscaler does; nil when
// it has no message (the autoscaler's defaults).
func readOptions(t *testing.T, e *Env, r Reader, id string) *options {
	t.Helper()
	resp, err := e.Call("NodeGroupGetOptions", defaults(t, e, r, id), "NodeGroupAutoscalingOptionsResponse")
	if err != nil {
		t.Fatalf("NodeGroupGetOptions %s: %v", id, err)
	}
	if !has(resp, "nodeGroupAutoscalingOptions") {
		return nil
	}
	m := sub(resp, "nodeGroupAutoscalingOptions")
	o := &options{
		util:      get(m, "scaleDownUtilizationThreshold").Float(),
		gpu:       get(m, "scaleDownGpuUtilizationThreshold").Float(),
		zeroOrMax: get(m, "zeroOrMaxNodeScaling").Bool(),
	}
	durations := []struct {
		old, cur string
		out      *time.Duration
	}{
		{"scaleDownUnneededTime", "scaleDownUnneededDuration", &o.unneeded},
		{"scaleDownUnreadyTime", "scaleDownUnreadyDuration", &o.unready},
		{"MaxNodeProvisionTime", "MaxNodeProvisionDuration", &o.provision},
	}
	for _, d := range durations {
		var ok bool
		if r == Deprecated {
			// pbOpts.GetScaleDownUnneededTime().Duration: a nil
			// message is a nil pointer dereference there
			if *d.out, ok = k8sDuration(t, m, d.old); !ok {
				t.Errorf("NodeGroupGetOptions %s: no %s: an autoscaler before 1.35 panics", id, d.old)
			}
		} else if *d.out, ok = pbDuration(t, m, d.cur); !ok {
			t.Errorf("NodeGroupGetOptions %s: no %s: the autoscaler takes it as zero", id, d.cur)
		}
	}
	if r == Current {
		o.nonAtomic = get(m, "allowNonAtomicScaleUpToMax").Bool()
		var ok bool
		if o.startup, ok = pbDuration(t, m, "maxNodeStartupDuration"); !ok {
			t.Errorf("NodeGroupGetOptions %s: the maxNodeStartupDuration of the defaults did not come back", id)
		}
	}
	return o
}

func testOptions(t *testing.T, e *Env, r Reader) {
	o := readOptions(t, e, r, "web")
	want := options{util: 0.3, gpu: 0.5, unneeded: defUnneeded, unready: defUnready,
		provision: 420 * time.Second, zeroOrMax: true}
	if r == Current {
		want.startup = defStartup
	}
	if o == nil || *o != want {
		t.Errorf("NodeGroupGetOptions web: %+v, want %+v", o, want)
	}
	if o := readOptions(t, e, r, "batch"); o != nil {
		t.Errorf("NodeGroupGetOptions batch (sets none): %+v, want no message", o)
	}
	// busy sets only the newest two: an old autoscaler still gets every
	// field it reads, the newest the group's values
	o = readOptions(t, e, r, "busy")
	want = options{util: 0.5, gpu: 0.5, unneeded: defUnneeded, unready: defUnready,
		provision: defProvision}
	if r == Current {
		want.startup, want.nonAtomic = 300*time.Second, true
	}
	if o == nil || *o != want {
		t.Errorf("NodeGroupGetOptions busy: %+v, want %+v", o, want)
	}
}

func groups(t *testing.T, e *Env) map[string][2]int32 {
	t.Helper()
	resp, err := e.Call("NodeGroups", e.New("NodeGroupsRequest"), "NodeGroupsResponse")
	if err != nil {
		t.Fatalf("NodeGroups: %v", err)
	}
	out := map[string][2]int32{}
	l := get(resp, "nodeGroups").List()
	for i := 0; i < l.Len(); i++ {
		g := l.Get(i).Message().Interface().(*dynamicpb.Message)
		out[get(g, "id").String()] = [2]int32{int32(get(g, "minSize").Int()), int32(get(g, "maxSize").Int())}
	}
	return out
}

type instance struct {
	id      string
	state   string
	errCode string
	class   int32
}

func instances(t *testing.T, e *Env, id string) []instance {
	t.Helper()
	resp, err := e.Call("NodeGroupNodes", idRequest(e, "NodeGroupNodesRequest", id), "NodeGroupNodesResponse")
	if err != nil {
		t.Fatalf("NodeGroupNodes %s: %v", id, err)
	}
	var out []instance
	l := get(resp, "instances").List()
	for i := 0; i < l.Len(); i++ {
		m := l.Get(i).Message().Interface().(*dynamicpb.Message)
		in := instance{id: get(m, "id").String()}
		if has(m, "status") {
			st := sub(m, "status")
			v := get(st, "instanceState").Enum()
			in.state = string(fd(st, "instanceState").Enum().Values().ByNumber(v).Name())
			if has(st, "errorInfo") {
				ei := sub(st, "errorInfo")
				in.errCode = get(ei, "errorCode").String()
				in.class = int32(get(ei, "instanceErrorClass").Int())
			}
		}
		out = append(out, in)
	}
	return out
}

// externalGrpcNode is the message the autoscaler makes of a Kubernetes
// node: its name, spec.providerID, labels and annotations.
func externalGrpcNode(e *Env, parent *dynamicpb.Message, field string, n *v1.Node) {
	var m *dynamicpb.Message
	f := fd(parent, field)
	if f.IsList() {
		l := parent.Mutable(f).List()
		m = l.NewElement().Message().Interface().(*dynamicpb.Message)
		l.Append(protoreflect.ValueOfMessage(m))
	} else {
		m = parent.Mutable(f).Message().Interface().(*dynamicpb.Message)
	}
	set(m, "name", n.Name)
	set(m, "providerID", n.Spec.ProviderID)
	for k, v := range map[string]map[string]string{"labels": n.Labels, "annotations": n.Annotations} {
		mp := m.Mutable(fd(m, k)).Map()
		for a, b := range v {
			mp.Set(protoreflect.ValueOfString(a).MapKey(), protoreflect.ValueOfString(b))
		}
	}
}

func groupOf(t *testing.T, e *Env, n *v1.Node) string {
	t.Helper()
	req := e.New("NodeGroupForNodeRequest")
	externalGrpcNode(e, req, "node", n)
	resp, err := e.Call("NodeGroupForNode", req, "NodeGroupForNodeResponse")
	if err != nil {
		t.Fatalf("NodeGroupForNode %s: %v", n.Name, err)
	}
	return get(sub(resp, "nodeGroup"), "id").String()
}

func testNodes(t *testing.T, e *Env) {
	if _, err := e.Call("Refresh", e.New("RefreshRequest"), "RefreshResponse"); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	g := groups(t, e)
	if g["web"] != [2]int32{0, 3} || g["batch"] != [2]int32{1, 5} || len(g) != 3 {
		t.Errorf("NodeGroups: %v", g)
	}
	in := instances(t, e, "batch")
	if len(in) != 1 || in[0].state != "instanceRunning" || in[0].errCode != "" {
		t.Fatalf("NodeGroupNodes batch: %+v", in)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "batch-node",
		Labels: map[string]string{"kubernetes.io/hostname": "batch-node"}},
		Spec: v1.NodeSpec{ProviderID: in[0].id}}
	if got := groupOf(t, e, node); got != "batch" {
		t.Errorf("NodeGroupForNode of batch's node: %q", got)
	}
	// nodes of no group are left alone: an empty id
	for _, pid := range []string{"aws:///eu-west-1a/i-0123456789abcdef0", "libvirt://fakehost/00000000-0000-0000-0000-000000000000", ""} {
		other := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: v1.NodeSpec{ProviderID: pid}}
		if got := groupOf(t, e, other); got != "" {
			t.Errorf("NodeGroupForNode of a node outside every group (%q): %q", pid, got)
		}
	}
}

func targetSize(t *testing.T, e *Env, id string) int64 {
	t.Helper()
	resp, err := e.Call("NodeGroupTargetSize", idRequest(e, "NodeGroupTargetSizeRequest", id), "NodeGroupTargetSizeResponse")
	if err != nil {
		t.Fatalf("NodeGroupTargetSize %s: %v", id, err)
	}
	return get(resp, "targetSize").Int()
}

func change(e *Env, method, id string, delta int32) error {
	req := idRequest(e, "NodeGroup"+method+"Request", id)
	set(req, "delta", delta)
	_, err := e.Call("NodeGroup"+method, req, "NodeGroup"+method+"Response")
	return err
}

// until polls the provider until cond holds (a state, not a time).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(startLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testScale(t *testing.T, e *Env) {
	if err := change(e, "IncreaseSize", "web", 2); err != nil {
		t.Fatalf("NodeGroupIncreaseSize web +2: %v", err)
	}
	if n := targetSize(t, e, "web"); n != 2 {
		t.Fatalf("NodeGroupTargetSize web after +2: %d", n)
	}
	var in []instance
	until(t, "web's two instances running", func() bool {
		in = instances(t, e, "web")
		return len(in) == 2 && in[0].state == "instanceRunning" && in[1].state == "instanceRunning"
	})
	// past max: refused, the target unchanged
	err := change(e, "IncreaseSize", "web", 2)
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("NodeGroupIncreaseSize web past max: %v, want FailedPrecondition", err)
	}
	// the autoscaler names a node it deletes by its spec.providerID
	req := idRequest(e, "NodeGroupDeleteNodesRequest", "web")
	externalGrpcNode(e, req, "nodes", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "web-a"},
		Spec: v1.NodeSpec{ProviderID: in[0].id}})
	if _, err := e.Call("NodeGroupDeleteNodes", req, "NodeGroupDeleteNodesResponse"); err != nil {
		t.Fatalf("NodeGroupDeleteNodes web: %v", err)
	}
	if n := targetSize(t, e, "web"); n != 2-1 {
		t.Errorf("NodeGroupTargetSize web after deleting one: %d", n)
	}
	// a node of another group is refused
	req = idRequest(e, "NodeGroupDeleteNodesRequest", "batch")
	externalGrpcNode(e, req, "nodes", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "web-b"},
		Spec: v1.NodeSpec{ProviderID: in[1].id}})
	if _, err := e.Call("NodeGroupDeleteNodes", req, "NodeGroupDeleteNodesResponse"); status.Code(err) != codes.NotFound {
		t.Errorf("NodeGroupDeleteNodes batch with web's node: %v, want NotFound", err)
	}
}

// An instance that cannot come up: creating with errorInfo, which the
// autoscaler counts as a failed scale-up of that group; it then deletes
// the instance by a node whose name and providerID are the instance id.
func testErrorInfo(t *testing.T, e *Env) {
	if err := change(e, "IncreaseSize", "busy", 1); err != nil {
		t.Fatalf("NodeGroupIncreaseSize busy +1: %v", err)
	}
	e.Control(map[string]any{"cmd": "error", "group": "busy", "index": 0,
		"error": map[string]any{"class": "out-of-resources", "code": "HOST_CAPACITY",
			"message": "0/1 hosts fit"}})
	in := instances(t, e, "busy")
	if len(in) != 1 || in[0].state != "instanceCreating" || in[0].errCode != "HOST_CAPACITY" ||
		in[0].class != 1 {
		t.Fatalf("NodeGroupNodes busy: %+v, want one creating with HOST_CAPACITY, class 1 (out of resources)", in)
	}
	req := idRequest(e, "NodeGroupDeleteNodesRequest", "busy")
	externalGrpcNode(e, req, "nodes", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: in[0].id},
		Spec: v1.NodeSpec{ProviderID: in[0].id}})
	if _, err := e.Call("NodeGroupDeleteNodes", req, "NodeGroupDeleteNodesResponse"); err != nil {
		t.Fatalf("NodeGroupDeleteNodes busy (the failed instance): %v", err)
	}
	if n := targetSize(t, e, "busy"); n != 0 {
		t.Errorf("NodeGroupTargetSize busy after deleting its failed instance: %d", n)
	}
}

// Pricing: vmact has no prices, which the autoscaler learns from
// UNIMPLEMENTED (12) — also from requests in each era's encoding (a pod
// and apimachinery times before 1.35, pod_bytes and Timestamps after).
func testPricing(t *testing.T, e *Env, r Reader) {
	p := pod("1", "1Gi", "1Gi", true)
	podRaw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	node := e.New("PricingNodePriceRequest")
	externalGrpcNode(e, node, "node", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec: v1.NodeSpec{ProviderID: "libvirt://fakehost/x"}})
	podReq := e.New("PricingPodPriceRequest")
	if r == Deprecated {
		for _, m := range []*dynamicpb.Message{node, podReq} {
			for name, at := range map[string]time.Time{"startTime": now, "endTime": now.Add(time.Hour)} {
				b, err := (&metav1.Time{Time: at}).Marshal()
				if err != nil {
					t.Fatal(err)
				}
				setBytes(t, m, name, b)
			}
		}
		set(podReq, "pod", podRaw)
	} else {
		for _, f := range [][3]string{{"PricingNodePriceRequest", "startTimestamp", "endTimestamp"},
			{"PricingPodPriceRequest", "startTimestamp", "endTimestamp"}} {
			m := node
			if f[0] == "PricingPodPriceRequest" {
				m = podReq
			}
			setBytes(t, m, f[1], marshal(t, timestamppb.New(now)))
			setBytes(t, m, f[2], marshal(t, timestamppb.New(now.Add(time.Hour))))
		}
		set(podReq, "pod_bytes", podRaw)
	}
	if _, err := e.Call("PricingNodePrice", node, "PricingNodePriceResponse"); status.Code(err) != codes.Unimplemented {
		t.Errorf("PricingNodePrice: %v, want Unimplemented (no pricing)", err)
	}
	if _, err := e.Call("PricingPodPrice", podReq, "PricingPodPriceResponse"); status.Code(err) != codes.Unimplemented {
		t.Errorf("PricingPodPrice: %v, want Unimplemented (no pricing)", err)
	}
}

// Run drives every scenario as an autoscaler reading with r; each is a
// subtest ("--- PASS: TestX/name").
func Run(t *testing.T, r Reader) {
	e := Start(t)
	for _, s := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"template-node", func(t *testing.T) { testTemplate(t, e, r) }},
		{"template-node-both-fields", func(t *testing.T) { testTemplateFields(t, e) }},
		{"options", func(t *testing.T) { testOptions(t, e, r) }},
		{"groups-and-nodes", func(t *testing.T) { testNodes(t, e) }},
		{"scale-up-and-down", func(t *testing.T) { testScale(t, e) }},
		{"error-info", func(t *testing.T) { testErrorInfo(t, e) }},
		{"pricing", func(t *testing.T) { testPricing(t, e, r) }},
	} {
		if !t.Run(s.name, s.fn) {
			t.Logf("vmact-cloudprovider's log:\n%s", e.Log())
		}
	}
}
