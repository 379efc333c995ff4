// SPDX-License-Identifier: Apache-2.0

// Package kubepeer drives vmact-cloudprovider with Kubernetes' own Go
// types (k8s.io/api, k8s.io/apimachinery) at the version the module that
// imports it pins, the way a cluster-autoscaler built on that version
// reads the externalgrpc answers: the template node through
// v1.Node.Unmarshal, the durations of the options through apimachinery's
// meta/v1 Duration or protobuf's. The messages are the test peers' own
// description of the contract (tests/peers/proto), compiled at run time;
// nothing of vmact's .proto or C is shared with the server.
//
// The groups come from tests/peers/fake-groupd.js (doc/cloudprovider.md,
// "Tests and the benchmark"); the provider is the build's
// vmact-cloudprovider over mTLS, as the autoscaler's cloud-config sets it up.
package kubepeer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

const service = "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"
const pkgPrefix = "clusterautoscaler.cloudprovider.v1.externalgrpc."

// The autoscaler's own default per call (its cloud-config's grpc_timeout).
const callTimeout = 5 * time.Second

// Bounds a broken build or a wedged peer; every wait below ends as soon as
// the state it waits for is there.
const startLimit = 60 * time.Second

// Env is one provider with its groupd stand-in and a client connection.
type Env struct {
	t        *testing.T
	dir      string
	conn     *grpc.ClientConn
	files    map[string]protoreflect.MessageDescriptor
	groupd   *exec.Cmd
	gstdin   io.WriteCloser
	cp       *exec.Cmd
	cpLog    string
	cpExited chan struct{}
	cpErr    error // its exit, once cpExited is closed
	stopped  bool
}

func top() string {
	if d := os.Getenv("VMACT_TOP"); d != "" {
		return d
	}
	// the test binary runs in its package's directory:
	// tests/peers/kube/<module>
	d, _ := filepath.Abs("../../../..")
	return d
}

func cpBinary() string {
	if d := os.Getenv("VMACT_CP_BUILD"); d != "" {
		return filepath.Join(d, "vmact-cloudprovider")
	}
	return filepath.Join(top(), "build", "vmact-cloudprovider")
}

var (
	childrenMu sync.Mutex
	children   = map[int]bool{}
	dirs       = map[string]bool{}
	onSignal   sync.Once
)

func track(pid int, alive bool) {
	childrenMu.Lock()
	defer childrenMu.Unlock()
	if alive {
		children[pid] = true
	} else {
		delete(children, pid)
	}
}

// A test binary stopped from outside (check-upstream.sh's timeout) leaves
// no provider or groupd stand-in behind.
func killChildrenOnSignal() {
	onSignal.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			s := <-ch
			childrenMu.Lock()
			for pid := range children {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			for d := range dirs {
				os.RemoveAll(d)
			}
			childrenMu.Unlock()
			fmt.Fprintf(os.Stderr, "kubepeer: %v: stopped\n", s)
			os.Exit(2)
		}()
	})
}

// Start brings up fake-groupd.js, vmact-cloudprovider with mTLS and a
// connection as the autoscaler makes it; all of it ends with the test.
func Start(t *testing.T) *Env {
	t.Helper()
	killChildrenOnSignal()
	dir, err := os.MkdirTemp("", "vmact-kubepeer.")
	if err != nil {
		t.Fatal(err)
	}
	// the provider may run as nobody: the directory is open to it
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	childrenMu.Lock()
	dirs[dir] = true
	childrenMu.Unlock()
	e := &Env{t: t, dir: dir}
	t.Cleanup(e.stop)
	e.loadProtos()
	e.startGroupd()
	ca, caKey := e.makeCA()
	e.makeLeaf("server", ca, caKey, true)
	e.makeLeaf("client", ca, caKey, false)
	port := e.startProvider()
	e.dial(port)
	return e
}

func (e *Env) path(name string) string { return filepath.Join(e.dir, name) }

func (e *Env) loadProtos() {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: []string{filepath.Join(top(), "tests", "peers", "proto")},
		}),
	}
	files, err := c.Compile(context.Background(), "cloudprovider.proto")
	if err != nil {
		e.t.Fatalf("tests/peers/proto/cloudprovider.proto: %v", err)
	}
	e.files = map[string]protoreflect.MessageDescriptor{}
	msgs := files[0].Messages()
	for i := 0; i < msgs.Len(); i++ {
		e.files[string(msgs.Get(i).Name())] = msgs.Get(i)
	}
}

// New is an empty message of the contract, by its name.
func (e *Env) New(name string) *dynamicpb.Message {
	d, ok := e.files[name]
	if !ok {
		e.t.Fatalf("no message %s in tests/peers/proto/cloudprovider.proto", name)
	}
	return dynamicpb.NewMessage(d)
}

func (e *Env) startGroupd() {
	sock := e.path("groupd.sock")
	cmd := exec.Command("node", filepath.Join(top(), "tests", "peers", "fake-groupd.js"), sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if e.gstdin, err = cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	log, err := os.Create(e.path("groupd.err"))
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("node tests/peers/fake-groupd.js: %v", err)
	}
	track(cmd.Process.Pid, true)
	e.groupd = cmd
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev struct{ Event string }
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "listening" {
				ready <- nil
				// the rest of its output (one line per request)
				// is drained so that it never blocks
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("fake-groupd.js ended before listening")
	}()
	select {
	case err := <-ready:
		if err != nil {
			e.t.Fatal(err)
		}
	case <-time.After(startLimit):
		e.t.Fatal("fake-groupd.js did not listen")
	}
}

// Control applies one fake-groupd.js command (tests/peers/fake-groupd.js),
// answered once applied.
func (e *Env) Control(cmd map[string]any) {
	b, _ := json.Marshal(cmd)
	c := http.Client{
		Timeout: callTimeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", e.path("groupd.sock"))
			},
		},
	}
	resp, err := c.Post("http://groupd/control", "application/json", bytes.NewReader(b))
	if err != nil {
		e.t.Fatalf("fake-groupd.js /control: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("fake-groupd.js /control: %s", resp.Status)
	}
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644)
}

func (e *Env) makeCA() (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vmact kubepeer test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := writePEM(e.path("ca.crt"), "CERTIFICATE", der); err != nil {
		e.t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		e.t.Fatal(err)
	}
	return ca, key
}

func (e *Env) makeLeaf(name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, server bool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "vmact kubepeer " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		e.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := writePEM(e.path(name+".crt"), "CERTIFICATE", der); err != nil {
		e.t.Fatal(err)
	}
	if err := writePEM(e.path(name+".key"), "PRIVATE KEY", kder); err != nil {
		e.t.Fatal(err)
	}
}

var servingRe = regexp.MustCompile(`serving .* on [^\n]*:([0-9]+)`)

func (e *Env) startProvider() int {
	args := []string{cpBinary(), "--groupd-socket", e.path("groupd.sock"),
		"--listen", "127.0.0.1:0", "--key", e.path("server.key"),
		"--cert", e.path("server.crt"), "--cacert", e.path("ca.crt")}
	// it refuses root's rights (doc/cloudprovider.md, "Running it")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			e.t.Fatal(err)
		}
		args = append([]string{"setpriv", "--reuid=" + u.Uid, "--regid=" + u.Gid,
			"--clear-groups"}, args...)
	}
	e.cpLog = e.path("cloudprovider.log")
	log, err := os.Create(e.cpLog)
	if err != nil {
		e.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("%s: %v", args[0], err)
	}
	e.cp = cmd
	track(cmd.Process.Pid, true)
	exited := make(chan struct{})
	go func() { e.cpErr = cmd.Wait(); track(cmd.Process.Pid, false); close(exited) }()
	deadline := time.Now().Add(startLimit)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(e.cpLog)
		if m := servingRe.FindSubmatch(b); m != nil {
			port, _ := strconv.Atoi(string(m[1]))
			e.cpExited = exited
			return port
		}
		select {
		case <-exited:
			e.t.Fatalf("vmact-cloudprovider exited:\n%s", e.providerLog())
		case <-time.After(20 * time.Millisecond):
		}
	}
	e.t.Fatalf("vmact-cloudprovider did not start serving:\n%s", e.providerLog())
	return 0
}

func (e *Env) providerLog() string {
	b, _ := os.ReadFile(e.cpLog)
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// dial connects as the autoscaler's externalgrpc provider does when its
// cloud-config names cert, key and cacert: its own certificate, the CA
// that signed the server's, the address's host as the server name.
func (e *Env) dial(port int) {
	cert, err := tls.LoadX509KeyPair(e.path("client.crt"), e.path("client.key"))
	if err != nil {
		e.t.Fatal(err)
	}
	caPEM, err := os.ReadFile(e.path("ca.crt"))
	if err != nil {
		e.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	address := fmt.Sprintf("127.0.0.1:%d", port)
	host, _, _ := net.SplitHostPort(address)
	creds := credentials.NewTLS(&tls.Config{
		ServerName:   host,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
	})
	e.conn, err = grpc.NewClient(address, grpc.WithTransportCredentials(creds))
	if err != nil {
		e.t.Fatal(err)
	}
}

// Call makes one unary call with the autoscaler's deadline; the answer is
// a message of the named type.
func (e *Env) Call(method string, req proto.Message, answer string) (*dynamicpb.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp := e.New(answer)
	err := e.conn.Invoke(ctx, "/"+service+"/"+method, req, resp)
	return resp, err
}

// Log is the provider's log, for a failure's message.
func (e *Env) Log() string { return e.providerLog() }

func (e *Env) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	if e.conn != nil {
		e.conn.Close()
	}
	if e.cp != nil && e.cp.Process != nil {
		_ = syscall.Kill(e.cp.Process.Pid, syscall.SIGTERM)
	}
	if e.cpExited != nil {
		select {
		case <-e.cpExited:
			// a clean stop, no sanitizer report
			if e.cpErr != nil {
				e.t.Errorf("vmact-cloudprovider on SIGTERM: %v\n%s", e.cpErr, e.providerLog())
			}
		case <-time.After(20 * time.Second):
			e.t.Errorf("vmact-cloudprovider did not stop on SIGTERM")
		}
	}
	if e.groupd != nil {
		e.gstdin.Close()
		_ = e.groupd.Process.Kill()
		_ = e.groupd.Wait()
		track(e.groupd.Process.Pid, false)
	}
	if !e.t.Failed() || os.Getenv("VMACT_KEEP") == "" {
		os.RemoveAll(e.dir)
	}
	childrenMu.Lock()
	delete(dirs, e.dir)
	childrenMu.Unlock()
}
