#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// cluster-autoscaler's side of the externalgrpc contract for
// vmact-cloudprovider's tests, on @grpc/grpc-js and protobufjs (no code of
// vmact's, and the peers' own .proto files in proto/): it calls the RPCs
// the way the autoscaler's Go client does (a deadline per call, 5 s unless
// --timeout-ms) and checks what comes back.
//
// Usage: ca-client.js --address HOST:PORT [--cacert F --cert F --key F
//        [--servername NAME]] [--groupd SOCKET] [--timeout-ms MS] SCENARIO
//   contract   every RPC against fake-groupd.js (--groupd: its socket)
//   cache      answers stay those of the last Refresh (fake-groupd.js)
//   errors     groupd's failures as status codes (fake-groupd.js)
//   bad-input  oversized, garbage and wrongly typed messages, unknown methods
//   stall      a call whose message never completes ends DEADLINE_EXCEEDED
//              (needs --request-timeout on the server; --expect-ms bounds it)
//   served     one call: NodeGroups must answer (mTLS checks)
//   refused    one call: NodeGroups must fail UNAVAILABLE (no certificate)
//   watch      a call every 200 ms on one connection until stdin closes;
//              prints {"event":"call",...} per call, fails if one failed
// Against the real vmact-groupd (--groupd: its socket, read as root for
// what the autoscaler cannot see; --wait-s bounds each wait, default 600):
//   real-scale  --group G: 0 -> 2 -> 1, the template node at 0; stops at
//               {"event":"running"} and {"event":"deleted"} until a line
//               on stdin (the test looks at libvirt meanwhile)
//   real-warm   --group G: a VM taken from the running tier
//   real-sick   --group G: a VM that never becomes healthy is reported
//               with its error and replaced, then deleted as the
//               autoscaler deletes failed instances
//   real-bad    --group G --other H: the refusals, with their codes
//   increase    --group G --delta N [--kill-pid P --kill-after-ms D]: one
//               increase, any outcome; with --kill-pid, SIGKILLs process P
//               D ms after the call went out (the provider mid-call)
//   settle      --group G: every member running, as many as the target
//   drain       --group G: every member deleted
//   provision   --group G --runs N [--tier T]: increase -> Running, timed
//               through gRPC, then deleted and the pool refilled
//
// Prints "ok WHAT" / "FAIL WHAT" per check; exits 1 on any failure.
'use strict';

const fs = require('fs');
const http = require('http');
const http2 = require('http2');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const args = process.argv.slice(2);
const opt = {};
let scenario = null;
for (let i = 0; i < args.length; i++) {
	if (args[i].startsWith('--'))
		opt[args[i].slice(2)] = args[++i];
	else
		scenario = args[i];
}
const timeoutMs = Number(opt['timeout-ms'] || 5000);
const SERVICE = 'clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider';
const CODE = grpc.status;

const def = loader.loadSync(path.join(__dirname, 'proto', 'cloudprovider.proto'),
	{ keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
		includeDirs: [path.join(__dirname, 'proto')] });
const pkg = grpc.loadPackageDefinition(def).clusterautoscaler.cloudprovider.v1.externalgrpc;
const k8s = protobuf.loadSync(path.join(__dirname, 'proto', 'k8s-core-v1.proto'));
const NodeType = k8s.lookupType('k8s.io.api.core.v1.Node');
// The template answer's two node fields as plain bytes, to compare them.
const BothNodes = new protobuf.Type('BothNodes')
	.add(new protobuf.Field('nodeInfo', 1, 'bytes'))
	.add(new protobuf.Field('nodeBytes', 2, 'bytes'));

let failures = 0;
function check(cond, what) {
	console.log(`${cond ? 'ok' : 'FAIL'} ${what}`);
	if (!cond)
		failures++;
}

function credentials() {
	if (!opt.cert)
		return grpc.credentials.createInsecure();
	return grpc.credentials.createSsl(fs.readFileSync(opt.cacert),
		opt.key ? fs.readFileSync(opt.key) : null, fs.readFileSync(opt.cert));
}

function channelOptions() {
	const o = { 'grpc.max_receive_message_length': 64 << 20 };
	if (opt.servername)
		o['grpc.ssl_target_name_override'] = opt.servername;
	return o;
}

function newClient() {
	return new pkg.CloudProvider(opt.address, opt.cert || opt.cacert
		? (opt.cert ? credentials() : grpc.credentials.createSsl(fs.readFileSync(opt.cacert)))
		: grpc.credentials.createInsecure(), channelOptions());
}

// One call as the autoscaler makes it: {code, details, value}.
function call(client, method, req, ms = timeoutMs) {
	return new Promise((resolve) => {
		client[method](req, { deadline: new Date(Date.now() + ms) }, (e, v) =>
			resolve(e ? { code: e.code, details: e.details, value: null } : { code: 0, value: v }));
	});
}

function raw(client, method, bytes, ms = timeoutMs) {
	return new Promise((resolve) => {
		client.makeUnaryRequest(`/${SERVICE}/${method}`, (b) => b, (b) => b, bytes,
			new grpc.Metadata(), { deadline: new Date(Date.now() + ms) },
			(e, v) => resolve(e ? { code: e.code, details: e.details } : { code: 0, value: v }));
	});
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function groupd(method, p, body) {
	return new Promise((resolve, reject) => {
		const data = body ? JSON.stringify(body) : '';
		const req = http.request({ socketPath: opt.groupd, path: p, method,
			headers: { 'Content-Type': 'application/json', 'Content-Length': data.length } },
		(res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString() || '{}')));
		});
		req.on('error', reject);
		req.end(data);
	});
}
const control = (c) => groupd('POST', '/control', c);
const seen = async () => (await groupd('GET', '/control/requests')).requests;

async function waitFor(what, fn, ms = 20000, step = 100) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await fn();
		if (v)
			return v;
		if (Date.now() > end) {
			check(false, `${what} (gave up after ${ms} ms)`);
			return null;
		}
		await sleep(step);
	}
}

const seconds = (d) => (d ? Number(d.seconds || 0) + (d.nanos || 0) / 1e9 : null);
const nanos = (d) => (d ? Number(d.duration || 0) : null);

// ---- scenarios ------------------------------------------------------------

async function contract() {
	const c = newClient();
	let r = await call(c, 'Refresh', {});
	check(r.code === 0, 'Refresh answers OK');
	r = await call(c, 'NodeGroups', {});
	const ids = r.value ? r.value.nodeGroups.map((g) => g.id).sort() : [];
	check(JSON.stringify(ids) === '["batch","busy","web"]', `NodeGroups lists web, batch, busy (${ids})`);
	const batch = r.value && r.value.nodeGroups.find((g) => g.id === 'batch');
	check(batch && batch.minSize === 1 && batch.maxSize === 5 && /batch/.test(batch.debug),
		'NodeGroups: batch min 1, max 5, a debug line naming it');

	r = await call(c, 'GPULabel', {});
	check(r.code === 0 && typeof r.value.label === 'string', `GPULabel answers (${r.value && r.value.label})`);
	r = await call(c, 'GetAvailableGPUTypes', {});
	check(r.code === 0 && Object.keys(r.value.gpuTypes || {}).length === 0, 'GetAvailableGPUTypes: none');
	r = await call(c, 'PricingNodePrice', { node: { providerID: 'libvirt://h/x', name: 'x' },
		startTimestamp: { seconds: 1, nanos: 0 }, endTimestamp: { seconds: 3601, nanos: 0 } });
	check(r.code === CODE.UNIMPLEMENTED, `PricingNodePrice: UNIMPLEMENTED (12) (${r.code})`);
	r = await call(c, 'PricingPodPrice', { pod_bytes: Buffer.from([0x0a, 0x00]) });
	check(r.code === CODE.UNIMPLEMENTED, `PricingPodPrice: UNIMPLEMENTED (12) (${r.code})`);

	r = await call(c, 'NodeGroupTargetSize', { id: 'batch' });
	check(r.code === 0 && r.value.targetSize === 1, 'NodeGroupTargetSize batch: 1');
	r = await call(c, 'NodeGroupNodes', { id: 'batch' });
	const inst = r.value ? r.value.instances : [];
	check(inst.length === 1 && /^libvirt:\/\/fakehost\//.test(inst[0].id) &&
		inst[0].status.instanceState === 'instanceRunning' &&
		!(inst[0].status.errorInfo && inst[0].status.errorInfo.errorCode),
	'NodeGroupNodes batch: one instance, libvirt:// id, running, no error');
	const batchNode = inst[0] && inst[0].id;

	r = await call(c, 'NodeGroupForNode', { node: { providerID: batchNode, name: 'n1', labels: { a: 'b' } } });
	check(r.code === 0 && r.value.nodeGroup.id === 'batch' && r.value.nodeGroup.maxSize === 5,
		'NodeGroupForNode: a batch node is in batch (max 5)');
	r = await call(c, 'NodeGroupForNode', { node: { providerID: 'aws:///us-east-1a/i-0123', name: 'n2' } });
	check(r.code === 0 && !(r.value.nodeGroup && r.value.nodeGroup.id), 'NodeGroupForNode: a foreign node has the empty id');
	r = await call(c, 'NodeGroupForNode', { node: { name: 'n3' } });
	check(r.code === 0 && !(r.value.nodeGroup && r.value.nodeGroup.id), 'NodeGroupForNode: no providerID, the empty id');

	// 0 -> 2 -> 1 on web
	r = await call(c, 'NodeGroupIncreaseSize', { id: 'web', delta: 2 });
	check(r.code === 0, `NodeGroupIncreaseSize web +2: OK (${r.code} ${r.details || ''})`);
	r = await call(c, 'NodeGroupTargetSize', { id: 'web' });
	check(r.code === 0 && r.value.targetSize === 2, 'NodeGroupTargetSize web: 2 as soon as the increase returned');
	r = await call(c, 'NodeGroupNodes', { id: 'web' });
	check(r.code === 0 && r.value.instances.length === 2, 'NodeGroupNodes web: two instances');
	const running = await waitFor('web instances running', async () => {
		const x = await call(c, 'NodeGroupNodes', { id: 'web' });
		return x.code === 0 && x.value.instances.length === 2 &&
			x.value.instances.every((i) => i.status.instanceState === 'instanceRunning') && x.value.instances;
	});
	check(!!running, 'NodeGroupNodes web: both instanceRunning');
	r = await call(c, 'NodeGroupIncreaseSize', { id: 'web', delta: 2 });
	check(r.code === CODE.FAILED_PRECONDITION, `NodeGroupIncreaseSize web +2 past max 3: FAILED_PRECONDITION (${r.code})`);
	r = await call(c, 'NodeGroupIncreaseSize', { id: 'nope', delta: 1 });
	check(r.code === CODE.NOT_FOUND, `NodeGroupIncreaseSize unknown group: NOT_FOUND (${r.code})`);
	r = await call(c, 'NodeGroupIncreaseSize', { id: 'web', delta: 0 });
	check(r.code === CODE.INVALID_ARGUMENT, `NodeGroupIncreaseSize delta 0: INVALID_ARGUMENT (${r.code})`);
	if (running) {
		// as the autoscaler does for an instance that never registered:
		// a made-up node whose name and providerID are the instance id
		const id = running[0].id;
		r = await call(c, 'NodeGroupDeleteNodes', { id: 'web', nodes: [{ providerID: id, name: id }] });
		check(r.code === 0, `NodeGroupDeleteNodes web, one node named by its id: OK (${r.details || ''})`);
		r = await call(c, 'NodeGroupTargetSize', { id: 'web' });
		check(r.code === 0 && r.value.targetSize === 1, 'NodeGroupTargetSize web: 1 as soon as the delete returned');
		r = await call(c, 'NodeGroupNodes', { id: 'web' });
		const gone = r.value && r.value.instances.find((i) => i.id === id);
		check(!gone || gone.status.instanceState === 'instanceDeleting', 'the deleted node is deleting or gone');
	}
	r = await call(c, 'NodeGroupDeleteNodes', { id: 'web', nodes: [{ providerID: 'aws:///z/i-1', name: 'x' }] });
	check(r.code === CODE.NOT_FOUND, `NodeGroupDeleteNodes of a foreign node: NOT_FOUND (${r.code})`);
	r = await call(c, 'NodeGroupDeleteNodes', { id: 'web', nodes: [{ providerID: batchNode, name: 'n1' }] });
	check(r.code === CODE.NOT_FOUND, `NodeGroupDeleteNodes of another group's node: NOT_FOUND (${r.code})`);
	r = await call(c, 'NodeGroupDeleteNodes', { id: 'batch', nodes: [{ providerID: batchNode, name: 'n1' }] });
	check(r.code === CODE.FAILED_PRECONDITION, `NodeGroupDeleteNodes below min: FAILED_PRECONDITION (${r.code})`);
	r = await call(c, 'NodeGroupDeleteNodes', { id: 'batch', nodes: [] });
	check(r.code === CODE.INVALID_ARGUMENT, `NodeGroupDeleteNodes of no node: INVALID_ARGUMENT (${r.code})`);
	r = await call(c, 'NodeGroupTargetSize', { id: 'batch' });
	check(r.code === 0 && r.value.targetSize === 1, 'batch still has target 1 after the refusals');

	// busy's VMs never finish booting: the decrease gives them up
	r = await call(c, 'NodeGroupIncreaseSize', { id: 'busy', delta: 2 });
	check(r.code === 0, 'NodeGroupIncreaseSize busy +2: OK');
	r = await call(c, 'NodeGroupDecreaseTargetSize', { id: 'busy', delta: -1 });
	check(r.code === 0, `NodeGroupDecreaseTargetSize busy -1 (a VM not yet running): OK (${r.details || ''})`);
	r = await call(c, 'NodeGroupTargetSize', { id: 'busy' });
	check(r.code === 0 && r.value.targetSize === 1, 'NodeGroupTargetSize busy: 1');
	r = await call(c, 'NodeGroupDecreaseTargetSize', { id: 'batch', delta: -1 });
	check(r.code === CODE.FAILED_PRECONDITION,
		`NodeGroupDecreaseTargetSize that would need a running node: FAILED_PRECONDITION (${r.code})`);
	r = await call(c, 'NodeGroupDecreaseTargetSize', { id: 'busy', delta: 1 });
	check(r.code === CODE.INVALID_ARGUMENT, `NodeGroupDecreaseTargetSize delta +1: INVALID_ARGUMENT (${r.code})`);
	r = await call(c, 'NodeGroupNodes', { id: 'batch' });
	check(r.code === 0 && r.value.instances.length === 1 && r.value.instances[0].status.instanceState === 'instanceRunning',
		'batch\'s running node untouched');

	await templateNode(c);
	await options(c);
	r = await call(c, 'Cleanup', {});
	check(r.code === 0, 'Cleanup answers OK');
	c.close();
}

async function templateNode(c) {
	let r = await call(c, 'NodeGroupTemplateNodeInfo', { id: 'web' });
	check(r.code === 0 && r.value.nodeBytes && r.value.nodeBytes.length > 0, 'NodeGroupTemplateNodeInfo web: nodeBytes');
	if (r.code !== 0)
		return;
	const node = NodeType.toObject(NodeType.decode(r.value.nodeBytes), { longs: Number });
	console.log(`# template node: ${JSON.stringify(node)}`);
	const labels = node.metadata.labels || {};
	check(labels['vmact.io/group'] === 'web' && labels['node.kubernetes.io/instance-type'] === 'tcg-2',
		'template node: the group\'s labels');
	check(labels['kubernetes.io/arch'] === 'amd64' && labels['kubernetes.io/os'] === 'linux' &&
		labels['kubernetes.io/hostname'] === node.metadata.name,
	'template node: kubernetes.io/arch amd64, os linux, hostname its name');
	const t = (node.spec.taints || [])[0];
	check(node.spec.taints && node.spec.taints.length === 1 && t.key === 'dedicated' && t.value === 'web' &&
		t.effect === 'NoSchedule', 'template node: taint dedicated=web:NoSchedule');
	const q = (m) => Object.fromEntries(Object.entries(m || {}).map(([k, v]) => [k, v.string]));
	const cap = q(node.status.capacity), alloc = q(node.status.allocatable);
	check(cap.cpu === '2' && cap.memory === '2Gi' && cap.pods === '110' && cap['ephemeral-storage'] === '20Gi',
		`template node: capacity cpu 2, ephemeral-storage 20Gi, memory 2Gi, pods 110 (${JSON.stringify(cap)})`);
	check(JSON.stringify(alloc) === JSON.stringify(cap), 'template node: allocatable as capacity');
	const ready = (node.status.conditions || []).find((x) => x.type === 'Ready');
	check(ready && ready.status === 'True', 'template node: Ready True');
	check(node.status.nodeInfo && node.status.nodeInfo.architecture === 'amd64' &&
		node.status.nodeInfo.operatingSystem === 'linux', 'template node: nodeInfo amd64/linux');
	// An autoscaler before 1.35 reads the embedded node (1) and never
	// nodeBytes: the same node must be there, decoded as that message.
	const old = r.value.nodeInfo;
	check(old && old.metadata.name === node.metadata.name && old.status.capacity.cpu.string === '2' &&
		old.status.capacity['ephemeral-storage'].string === '20Gi',
	'template node: the deprecated nodeInfo (1), read as the embedded Node message');
	check(r.value.resourceSliceBytes.length === 0, 'template node: no DRA resource slices');
	const both = await raw(c, 'NodeGroupTemplateNodeInfo',
		pkg.CloudProvider.service.NodeGroupTemplateNodeInfo.requestSerialize({ id: 'web' }));
	const m = both.code === 0 ? BothNodes.decode(both.value) : null;
	check(m && Buffer.compare(Buffer.from(m.nodeInfo), Buffer.from(m.nodeBytes)) === 0,
		'template node: nodeInfo (1) and nodeBytes (2) hold the same node, byte for byte');
	r = await call(c, 'NodeGroupTemplateNodeInfo', { id: 'batch' });
	check(r.code === 0 && !('ephemeral-storage' in
		(NodeType.decode(r.value.nodeBytes).status.capacity || {})),
	'template node of a group that does not say its storage: no ephemeral-storage');
	r = await call(c, 'NodeGroupTemplateNodeInfo', { id: 'nope' });
	check(r.code === CODE.NOT_FOUND, `NodeGroupTemplateNodeInfo unknown group: NOT_FOUND (${r.code})`);
}

async function options(c) {
	const defaults = {
		scaleDownUtilizationThreshold: 0.5, scaleDownGpuUtilizationThreshold: 0.5,
		zeroOrMaxNodeScaling: false, ignoreDaemonSetsUtilization: false,
		scaleDownUnneededDuration: { seconds: 600, nanos: 0 },
		scaleDownUnreadyDuration: { seconds: 1200, nanos: 0 },
		MaxNodeProvisionDuration: { seconds: 900, nanos: 0 },
	};
	let r = await call(c, 'NodeGroupGetOptions', { id: 'web', defaults });
	const o = r.value && r.value.nodeGroupAutoscalingOptions;
	check(r.code === 0 && o, 'NodeGroupGetOptions web: options');
	if (o) {
		check(o.scaleDownUtilizationThreshold === 0.3 && seconds(o.MaxNodeProvisionDuration) === 420 &&
			o.zeroOrMaxNodeScaling === true, 'NodeGroupGetOptions web: the group\'s three settings');
		check(o.scaleDownGpuUtilizationThreshold === 0.5 && seconds(o.scaleDownUnneededDuration) === 600 &&
			seconds(o.scaleDownUnreadyDuration) === 1200 && !o.ignoreDaemonSetsUtilization,
		'NodeGroupGetOptions web: the defaults for the rest');
	}
	if (o) {
		// the same durations as an autoscaler before 1.35 reads them
		check(nanos(o.scaleDownUnneededTime) === 600e9 && nanos(o.scaleDownUnreadyTime) === 1200e9 &&
			nanos(o.MaxNodeProvisionTime) === 420e9,
		`NodeGroupGetOptions web: the deprecated durations 3-5 beside 8-10 (${JSON.stringify(o)})`);
		check(o.maxNodeStartupDuration === null && o.allowNonAtomicScaleUpToMax === false,
			'NodeGroupGetOptions web: no startup duration when neither the group nor the defaults have one');
	}
	r = await call(c, 'NodeGroupGetOptions', { id: 'batch', defaults });
	check(r.code === 0 && !r.value.nodeGroupAutoscalingOptions, 'NodeGroupGetOptions batch (sets none): no message, the defaults');

	// cluster-autoscaler 1.30 to 1.34: its defaults in the old fields only,
	// the answer read from the old fields only
	const oldDefaults = {
		scaleDownUtilizationThreshold: 0.5, scaleDownGpuUtilizationThreshold: 0.5,
		scaleDownUnneededTime: { duration: 600e9 }, scaleDownUnreadyTime: { duration: 1200e9 },
		MaxNodeProvisionTime: { duration: 900e9 },
	};
	r = await call(c, 'NodeGroupGetOptions', { id: 'web', defaults: oldDefaults });
	const p = r.value && r.value.nodeGroupAutoscalingOptions;
	check(r.code === 0 && p && nanos(p.scaleDownUnneededTime) === 600e9 &&
		nanos(p.scaleDownUnreadyTime) === 1200e9 && nanos(p.MaxNodeProvisionTime) === 420e9,
	`NodeGroupGetOptions web, an old autoscaler's defaults: the old durations, the group's over them (${JSON.stringify(p)})`);
	check(p && seconds(p.scaleDownUnneededDuration) === 600 && seconds(p.MaxNodeProvisionDuration) === 420,
		'NodeGroupGetOptions web, an old autoscaler\'s defaults: the new durations as well');

	// the newest autoscaler: 11 and 12 come back, the group's over them
	const newest = Object.assign({}, defaults, {
		maxNodeStartupDuration: { seconds: 900, nanos: 0 }, allowNonAtomicScaleUpToMax: false,
	});
	r = await call(c, 'NodeGroupGetOptions', { id: 'web', defaults: newest });
	const w = r.value && r.value.nodeGroupAutoscalingOptions;
	check(r.code === 0 && w && seconds(w.maxNodeStartupDuration) === 900 && w.allowNonAtomicScaleUpToMax === false,
		'NodeGroupGetOptions web, the newest defaults: maxNodeStartupDuration carried back');
	newest.allowNonAtomicScaleUpToMax = true;
	r = await call(c, 'NodeGroupGetOptions', { id: 'web', defaults: newest });
	check(r.code === 0 && r.value.nodeGroupAutoscalingOptions.allowNonAtomicScaleUpToMax === true,
		'NodeGroupGetOptions web, the newest defaults: allowNonAtomicScaleUpToMax carried back');
	r = await call(c, 'NodeGroupGetOptions', { id: 'busy', defaults: Object.assign({}, newest,
		{ allowNonAtomicScaleUpToMax: false }) });
	const b = r.value && r.value.nodeGroupAutoscalingOptions;
	check(r.code === 0 && b && seconds(b.maxNodeStartupDuration) === 300 && b.allowNonAtomicScaleUpToMax === true &&
		b.scaleDownUtilizationThreshold === 0.5 && seconds(b.scaleDownUnneededDuration) === 600 &&
		nanos(b.scaleDownUnneededTime) === 600e9 && seconds(b.MaxNodeProvisionDuration) === 900,
	`NodeGroupGetOptions busy: the group's two newest settings over the defaults (${JSON.stringify(b)})`);
	r = await call(c, 'NodeGroupGetOptions', { id: 'nope', defaults });
	check(r.code === CODE.NOT_FOUND, `NodeGroupGetOptions unknown group: NOT_FOUND (${r.code})`);
}

async function cache() {
	const c = newClient();
	const listings = async () => (await seen()).filter((x) => x.method === 'GET' && x.path === '/v1/groups').length;
	let r = await call(c, 'Refresh', {});
	check(r.code === 0, 'Refresh');
	const base = await listings();
	r = await call(c, 'NodeGroups', {});
	const web = (x) => x.value.nodeGroups.find((g) => g.id === 'web');
	check(r.code === 0 && web(r).maxSize === 3, 'NodeGroups: web max 3');
	await control({ cmd: 'bounds', group: 'web', min: 0, max: 10 });
	await control({ cmd: 'add-group', id: 'late' });
	r = await call(c, 'NodeGroups', {});
	check(r.code === 0 && web(r).maxSize === 3 && !r.value.nodeGroups.some((g) => g.id === 'late'),
		'NodeGroups between Refreshes: still max 3, no new group');
	r = await call(c, 'NodeGroupTemplateNodeInfo', { id: 'late' });
	check(r.code === CODE.NOT_FOUND, 'a group added since the Refresh is unknown until the next');
	r = await call(c, 'NodeGroupNodes', { id: 'batch' });
	const node = r.value.instances[0].id;
	r = await call(c, 'NodeGroupForNode', { node: { providerID: node, name: 'b1' } });
	check(r.code === 0 && r.value.nodeGroup.id === 'batch', 'NodeGroupForNode: batch');
	check(await listings() === base, 'no listing from groupd for any of that (only the Refresh asked)');
	r = await call(c, 'Refresh', {});
	r = await call(c, 'NodeGroups', {});
	check(r.code === 0 && web(r).maxSize === 10 && r.value.nodeGroups.some((g) => g.id === 'late'),
		'after Refresh: web max 10, the new group listed');
	await control({ cmd: 'bounds', group: 'web', min: 0, max: 3 });
	await call(c, 'Refresh', {});
	c.close();
}

async function errors() {
	const c = newClient();
	await call(c, 'Refresh', {});
	const cases = [
		[503, 'unavailable', CODE.UNAVAILABLE],
		[500, 'internal', CODE.INTERNAL],
		[409, 'precondition', CODE.FAILED_PRECONDITION],
		[409, 'out-of-range', CODE.FAILED_PRECONDITION],
		[404, 'not-found', CODE.NOT_FOUND],
		[400, 'invalid', CODE.INVALID_ARGUMENT],
		[502, 'something-new', CODE.INTERNAL],
	];
	for (const [status, reason, code] of cases) {
		await control({ cmd: 'fail', status, reason, count: 1 });
		const r = await call(c, 'NodeGroupTargetSize', { id: 'web' });
		check(r.code === code && /injected/.test(r.details || ''),
			`groupd ${status} ${reason}: ${Object.keys(CODE).find((k) => CODE[k] === code)} with groupd's sentence (${r.code} ${r.details})`);
	}
	await control({ cmd: 'garbage', count: 1 });
	let r = await call(c, 'NodeGroupNodes', { id: 'web' });
	check(r.code === CODE.INTERNAL, `groupd answering garbage: INTERNAL (${r.code})`);
	await control({ cmd: 'fail', status: 503, reason: 'unavailable', count: 1 });
	r = await call(c, 'Refresh', {});
	check(r.code === CODE.UNAVAILABLE, 'Refresh while groupd is unavailable: UNAVAILABLE');
	r = await call(c, 'NodeGroups', {});
	check(r.code === 0 && r.value.nodeGroups.length >= 3, 'NodeGroups after a failed Refresh asks groupd again');
	// groupd slower than the client's deadline: the provider answers
	// DEADLINE_EXCEEDED itself before the client gives up
	await control({ cmd: 'delay', ms: 3000 });
	r = await call(c, 'NodeGroupTargetSize', { id: 'web' }, 1000);
	check(r.code === CODE.DEADLINE_EXCEEDED, `groupd slower than the call's deadline: DEADLINE_EXCEEDED (${r.code})`);
	await control({ cmd: 'delay', ms: 0 });
	await sleep(3000);
	r = await call(c, 'NodeGroupTargetSize', { id: 'web' });
	check(r.code === 0, 'served again once groupd is fast');
	c.close();
}

function varint(n) {
	const out = [];
	while (n > 127) {
		out.push((n & 127) | 128);
		n >>>= 7;
	}
	out.push(n);
	return Buffer.from(out);
}

async function badInput() {
	const c = newClient();
	let r = await raw(c, 'NodeGroupTargetSize', Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]));
	check(r.code === CODE.INVALID_ARGUMENT, `garbage bytes as a request: INVALID_ARGUMENT (${r.code} ${r.details})`);
	// field 1 (id, a string) sent as a varint
	r = await raw(c, 'NodeGroupTargetSize', Buffer.from([0x08, 0x05]));
	check(r.code === CODE.INVALID_ARGUMENT, `a field of the wrong wire type: INVALID_ARGUMENT (${r.code})`);
	// a length that runs past the end
	r = await raw(c, 'NodeGroupTargetSize', Buffer.from([0x0a, 0x40, 0x61]));
	check(r.code === CODE.INVALID_ARGUMENT, `a truncated field: INVALID_ARGUMENT (${r.code})`);
	// 2 MiB of annotations on one node
	const big = Buffer.alloc(2 << 20, 0x61);
	const entry = Buffer.concat([Buffer.from([0x0a, 0x01, 0x6b, 0x12]), varint(big.length), big]);
	const node = Buffer.concat([Buffer.from([0x22]), varint(entry.length), entry]);
	const msg = Buffer.concat([Buffer.from([0x0a]), varint(node.length), node, Buffer.from([0x12, 0x03, 0x77, 0x65, 0x62])]);
	r = await raw(c, 'NodeGroupDeleteNodes', msg);
	check(r.code === CODE.RESOURCE_EXHAUSTED, `a 2 MiB request: RESOURCE_EXHAUSTED (${r.code} ${r.details})`);
	// many tiny map entries: small on the wire, large once decoded
	const tiny = Buffer.alloc(900 * 1024);
	for (let i = 0; i < tiny.length; i += 2) {
		tiny[i] = 0x1a; // labels entry, empty
		tiny[i + 1] = 0x00;
	}
	const n2 = Buffer.concat([Buffer.from([0x0a]), varint(tiny.length), tiny]);
	r = await raw(c, 'NodeGroupDeleteNodes', Buffer.concat([n2, Buffer.from([0x12, 0x01, 0x77])]));
	check(r.code === CODE.RESOURCE_EXHAUSTED || r.code === CODE.NOT_FOUND || r.code === CODE.INVALID_ARGUMENT,
		`460 000 empty labels in 900 KiB: refused or answered, no crash (${r.code} ${r.details})`);
	r = await raw(c, 'NoSuchMethod', Buffer.alloc(0));
	check(r.code === CODE.UNIMPLEMENTED, `an unknown method: UNIMPLEMENTED (${r.code})`);
	r = await new Promise((resolve) => c.makeUnaryRequest('/some.Other/Service', (b) => b, (b) => b,
		Buffer.alloc(0), { deadline: new Date(Date.now() + timeoutMs) },
		(e) => resolve({ code: e ? e.code : 0 })));
	check(r.code === CODE.UNIMPLEMENTED, `another service: UNIMPLEMENTED (${r.code})`);
	r = await call(c, 'NodeGroupTargetSize', { id: 'x'.repeat(300) });
	check(r.code === CODE.INVALID_ARGUMENT, `a 300-byte group id: INVALID_ARGUMENT (${r.code})`);
	r = await call(c, 'NodeGroupTargetSize', { id: 'a/../b?c=d' });
	check(r.code === CODE.NOT_FOUND, `an id with / ? =: escaped, NOT_FOUND (${r.code})`);
	r = await call(c, 'NodeGroups', {});
	check(r.code === 0, 'still serving after all of that');
	c.close();
}

// A call whose message never completes: gRPC's own framing, written by
// hand over Node's HTTP/2 client.
async function stall() {
	const expectMs = Number(opt['expect-ms'] || 15000);
	const s = http2.connect(`http://${opt.address}`);
	const start = Date.now();
	const req = s.request({ ':method': 'POST', ':path': `/${SERVICE}/NodeGroups`,
		'content-type': 'application/grpc', te: 'trailers' });
	req.write(Buffer.from([0, 0, 0, 0, 100, 0x0a, 0x01]));
	const status = await new Promise((resolve) => {
		let st = null;
		req.on('response', (h) => { if (h['grpc-status']) st = Number(h['grpc-status']); });
		req.on('trailers', (t) => { st = Number(t['grpc-status']); });
		req.on('close', () => resolve(st));
		req.on('error', () => resolve(st));
		req.resume();
		setTimeout(() => resolve('timeout'), expectMs + 5000);
	});
	const took = Date.now() - start;
	check(status === CODE.DEADLINE_EXCEEDED || status === CODE.CANCELLED,
		`a stalled request message ends DEADLINE_EXCEEDED (${status}) after ${took} ms`);
	check(took <= expectMs, `within ${expectMs} ms`);
	s.close();
	const c = newClient();
	const r = await call(c, 'NodeGroups', {});
	check(r.code === 0, 'a well-formed call is answered after it');
	c.close();
}

async function served() {
	const c = newClient();
	const r = await call(c, 'NodeGroups', {});
	check(r.code === 0, `NodeGroups answered (${r.code} ${r.details || ''})`);
	c.close();
}

async function refused() {
	const c = newClient();
	const r = await call(c, 'NodeGroups', {});
	check(r.code === CODE.UNAVAILABLE, `NodeGroups refused: UNAVAILABLE (${r.code} ${r.details || ''})`);
	c.close();
}

async function watch() {
	const c = newClient();
	let stop = false, calls = 0, bad = 0;
	process.stdin.on('end', () => { stop = true; });
	process.stdin.resume();
	while (!stop) {
		const t = Date.now();
		const r = await call(c, 'NodeGroupTargetSize', { id: opt.group || 'batch' });
		calls++;
		if (r.code !== 0)
			bad++;
		console.log(JSON.stringify({ event: 'call', code: r.code, ms: Date.now() - t, details: r.details }));
		await sleep(200);
	}
	check(calls > 0 && bad === 0, `${calls} calls on one connection, ${bad} failed`);
	c.close();
}

// ---- against the real vmact-groupd -----------------------------------------

const waitMs = Number(opt['wait-s'] || 600) * 1000;
const GROUP = opt.group;

async function members(c, id = GROUP) {
	const r = await call(c, 'NodeGroupNodes', { id });
	return r.code === 0 ? r.value.instances : null;
}

const running = (i) => i.status && i.status.instanceState === 'instanceRunning';

let stdinLines = null;
function nextLine() {
	if (!stdinLines) {
		stdinLines = [];
		let buf = '';
		process.stdin.on('data', (d) => {
			buf += d;
			let k;
			while ((k = buf.indexOf('\n')) >= 0) {
				stdinLines.push(buf.slice(0, k));
				buf = buf.slice(k + 1);
			}
		});
		process.stdin.on('end', () => stdinLines.push(null));
	}
	return waitFor('the test\'s go-ahead', async () => (stdinLines.length ? stdinLines.shift() || 'eof' : null),
		waitMs);
}

async function pause(event) {
	console.log(JSON.stringify(event));
	await nextLine();
}

async function groupdGet(p) {
	return groupd('GET', p);
}

async function realScale() {
	const c = newClient();
	let r = await waitFor('groupd ready (Refresh OK)', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	r = await call(c, 'NodeGroups', {});
	const g = r.value && r.value.nodeGroups.find((x) => x.id === GROUP);
	check(!!g, `NodeGroups lists ${GROUP} (${g && g.debug})`);
	r = await call(c, 'NodeGroupTargetSize', { id: GROUP });
	check(r.code === 0 && r.value.targetSize === 0, `${GROUP} starts at 0`);
	// scale from zero: what the autoscaler simulates on
	r = await call(c, 'NodeGroupTemplateNodeInfo', { id: GROUP });
	check(r.code === 0 && r.value.nodeBytes && r.value.nodeBytes.length > 0, 'NodeGroupTemplateNodeInfo at size 0');
	if (r.code === 0) {
		const node = NodeType.toObject(NodeType.decode(r.value.nodeBytes));
		console.log(`# template node: ${JSON.stringify(node)}`);
		const cap = Object.fromEntries(Object.entries(node.status.capacity || {}).map(([k, v]) => [k, v.string]));
		const want = JSON.parse(opt.capacity || '{}');
		check(Object.keys(want).every((k) => cap[k] === want[k]),
			`template node capacity ${JSON.stringify(cap)} is the group's ${JSON.stringify(want)}`);
		// what an autoscaler before 1.35 reads instead
		const old = r.value.nodeInfo;
		check(old && old.metadata.name === node.metadata.name &&
			Object.keys(want).every((k) => old.status.capacity[k] && old.status.capacity[k].string === want[k]),
		'template node: the same node in the deprecated nodeInfo (1)');
		check(node.metadata.labels['vmact.io/group'] === GROUP && node.metadata.labels['kubernetes.io/arch'] === 'amd64',
			'template node: the group\'s labels and the kubelet\'s');
		check((node.spec.taints || []).some((t) => t.key === 'dedicated' && t.effect === 'NoSchedule'),
			'template node: the group\'s taint');
	}
	const t0 = Date.now();
	r = await call(c, 'NodeGroupIncreaseSize', { id: GROUP, delta: 2 });
	check(r.code === 0, `NodeGroupIncreaseSize +2: OK in ${Date.now() - t0} ms (${r.details || ''})`);
	r = await call(c, 'NodeGroupTargetSize', { id: GROUP });
	check(r.code === 0 && r.value.targetSize === 2, 'target 2 as soon as the increase returned');
	const up = await waitFor('two instances running', async () => {
		const m = await members(c);
		return m && m.length === 2 && m.every(running) && m;
	}, waitMs);
	if (!up)
		return;
	check(up.every((i) => /^libvirt:\/\/[a-z0-9-]+\/[0-9a-f-]{36}$/.test(i.id)), 'instance ids are libvirt://HOST/UUID');
	console.log(`# both running after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
	await pause({ event: 'running', ids: up.map((i) => i.id) });
	r = await call(c, 'NodeGroupForNode', { node: { providerID: up[0].id, name: 'node-a' } });
	check(r.code === 0 && r.value.nodeGroup.id === GROUP, 'NodeGroupForNode: the instance is the group\'s');
	r = await call(c, 'NodeGroupDeleteNodes', { id: GROUP, nodes: [{ providerID: up[1].id, name: up[1].id }] });
	check(r.code === 0, `NodeGroupDeleteNodes one: OK (${r.details || ''})`);
	r = await call(c, 'NodeGroupTargetSize', { id: GROUP });
	check(r.code === 0 && r.value.targetSize === 1, 'target 1 as soon as the delete returned');
	const gone = await waitFor('the deleted instance gone', async () => {
		const m = await members(c);
		return m && m.length === 1 && m[0].id === up[0].id && running(m[0]);
	}, waitMs);
	check(!!gone, 'one instance left, the other, still running');
	await pause({ event: 'deleted', id: up[1].id, kept: up[0].id });
	c.close();
}

async function poolReady(id, tier) {
	const g = await groupdGet(`/v1/groups/${encodeURIComponent(id)}`);
	return g.pool && g.pool[tier] && g.pool[tier].ready >= 1;
}

async function realWarm() {
	const c = newClient();
	await waitFor('groupd ready', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	check(!!await waitFor('a ready VM in the running tier', () => poolReady(GROUP, 'running'), waitMs),
		`${GROUP}'s running tier has a ready VM`);
	const before = await members(c);
	const t0 = Date.now();
	let r = await call(c, 'NodeGroupIncreaseSize', { id: GROUP, delta: 1 });
	check(r.code === 0, 'NodeGroupIncreaseSize +1: OK');
	const inst = await waitFor('the new instance running', async () => {
		const m = await members(c);
		return m && m.find((i) => !before.some((b) => b.id === i.id) && running(i));
	}, waitMs);
	const ms = Date.now() - t0;
	const nodes = (await groupdGet(`/v1/groups/${encodeURIComponent(GROUP)}/nodes`)).nodes || [];
	const n = inst && nodes.find((x) => x.provider_id === inst.id);
	check(n && n.tier === 'running', `the instance came from the running tier (${n && n.tier}), Running after ${ms} ms`);
	console.log(JSON.stringify({ event: 'warm', id: inst && inst.id, ms }));
	c.close();
}

async function realSick() {
	const c = newClient();
	await waitFor('groupd ready', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	let r = await call(c, 'NodeGroupIncreaseSize', { id: GROUP, delta: 1 });
	check(r.code === 0, 'NodeGroupIncreaseSize +1 on a group whose VMs never become healthy: OK');
	const failed = await waitFor('the instance reported in error', async () => {
		const m = await members(c);
		return m && m.length === 1 && m[0].status.errorInfo && m[0].status.errorInfo.errorCode && m[0];
	}, waitMs);
	if (!failed)
		return;
	const e = failed.status.errorInfo;
	console.log(`# ${JSON.stringify(failed)}`);
	check(failed.status.instanceState === 'instanceCreating' && e.errorCode === 'BOOT_TIMEOUT' &&
		e.instanceErrorClass === 99 && e.errorMessage.length > 0,
	'instanceCreating with errorInfo BOOT_TIMEOUT, class 99 (other), a message: a failed scale-up to the autoscaler');
	// groupd destroys the VM and boots another for the same member
	const again = await waitFor('a second boot of the member', async () => {
		const vms = (await groupdGet('/v1/vms')).vms || [];
		const v = vms.find((x) => x.provider_id === failed.id || (x.group === GROUP && x.role === 'member'));
		return v && v.attempts >= 2 && v;
	}, waitMs);
	check(!!again, `replaced: the member booted again (attempts ${again && again.attempts})`);
	// the autoscaler deletes failed instances by their id
	const m = await members(c);
	r = await call(c, 'NodeGroupDeleteNodes', { id: GROUP, nodes: m.map((i) => ({ providerID: i.id, name: i.id })) });
	check(r.code === 0, `NodeGroupDeleteNodes of the failed instance: OK (${r.details || ''})`);
	check(!!await waitFor('the group empty', async () => { const x = await members(c); return x && x.length === 0; }, waitMs),
		'nothing left of it');
	c.close();
}

async function realBad() {
	const c = newClient();
	await waitFor('groupd ready', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	let r = await call(c, 'NodeGroupIncreaseSize', { id: 'no-such-group', delta: 1 });
	check(r.code === CODE.NOT_FOUND, `unknown group: NOT_FOUND (${r.code} ${r.details})`);
	r = await call(c, 'NodeGroupTargetSize', { id: 'no-such-group' });
	check(r.code === CODE.NOT_FOUND, `TargetSize of an unknown group: NOT_FOUND (${r.code})`);
	r = await call(c, 'NodeGroupIncreaseSize', { id: GROUP, delta: 100 });
	check(r.code === CODE.FAILED_PRECONDITION, `delta past max: FAILED_PRECONDITION (${r.code} ${r.details})`);
	r = await call(c, 'NodeGroupDeleteNodes', { id: GROUP, nodes: [{ providerID: 'aws:///eu-west-1a/i-0abc', name: 'foreign' }] });
	check(r.code === CODE.NOT_FOUND, `deleting a foreign node: NOT_FOUND (${r.code} ${r.details})`);
	const other = opt.other && await members(c, opt.other);
	if (other && other.length) {
		r = await call(c, 'NodeGroupDeleteNodes', { id: GROUP, nodes: [{ providerID: other[0].id, name: 'x' }] });
		check(r.code === CODE.NOT_FOUND, `deleting another group's node: NOT_FOUND (${r.code})`);
	}
	r = await call(c, 'NodeGroupForNode', { node: { providerID: 'libvirt://h1/00000000-0000-0000-0000-000000000000', name: 'ghost' } });
	check(r.code === 0 && !(r.value.nodeGroup && r.value.nodeGroup.id), 'a libvirt id of no VM: not ours');
	r = await call(c, 'NodeGroupDecreaseTargetSize', { id: GROUP, delta: -1 });
	check(r.code === CODE.FAILED_PRECONDITION, `a decrease that would need a running node: FAILED_PRECONDITION (${r.code} ${r.details})`);
	c.close();
}

async function increase() {
	const c = newClient();
	// connected first, so that the line below comes just before the call
	await call(c, 'GPULabel', {});
	console.log(JSON.stringify({ event: 'calling' }));
	const pending = call(c, 'NodeGroupIncreaseSize', { id: GROUP, delta: Number(opt.delta || 1) }, 30000);
	const t0 = process.hrtime.bigint();
	if (opt['kill-pid'])
		setTimeout(() => {
			process.kill(Number(opt['kill-pid']), 'SIGKILL');
			console.log(JSON.stringify({ event: 'killed', after_us: Number(process.hrtime.bigint() - t0) / 1000 }));
		}, Number(opt['kill-after-ms'] || 0));
	const r = await pending;
	console.log(JSON.stringify({ event: 'increase', code: r.code, details: r.details || '' }));
	c.close();
}

async function settle() {
	const c = newClient();
	await waitFor('provider and groupd answer', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	const r = await call(c, 'NodeGroupTargetSize', { id: GROUP });
	const target = r.code === 0 ? r.value.targetSize : -1;
	const m = await waitFor(`${target} members running`, async () => {
		const x = await members(c);
		return x && x.length === target && x.every(running) && x;
	}, waitMs);
	check(!!m, `target ${target}: as many members, all running`);
	console.log(JSON.stringify({ event: 'settled', target, ids: m ? m.map((i) => i.id) : [] }));
	c.close();
}

async function drain() {
	const c = newClient();
	await waitFor('provider and groupd answer', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	const empty = await waitFor(`${GROUP} drained`, async () => {
		const m = await members(c);
		if (!m)
			return false;
		if (!m.length)
			return true;
		const live = m.filter((i) => i.status.instanceState !== 'instanceDeleting');
		if (live.length)
			await call(c, 'NodeGroupDeleteNodes', { id: GROUP, nodes: live.map((i) => ({ providerID: i.id, name: i.id })) });
		return false;
	}, waitMs);
	check(!!empty, `${GROUP}: no member left`);
	c.close();
}

// NodeGroupForNode for a real Node (--provider-id, --name), as the
// autoscaler asks for every Node it lists: the group's id, or null.
async function forNode() {
	const c = newClient();
	const r = await call(c, 'NodeGroupForNode', { node: { providerID: opt['provider-id'], name: opt.name } });
	check(r.code === 0, `NodeGroupForNode: code ${r.code} ${r.details || ''}`);
	const id = r.code === 0 && r.value.nodeGroup ? r.value.nodeGroup.id : null;
	console.log(JSON.stringify({ event: 'for-node', group: id || null }));
	c.close();
}

// NodeGroupDeleteNodes of one instance (--provider-id, --name), as the
// autoscaler deletes an instance it scales down or gives up on.
async function deleteOne() {
	const c = newClient();
	const r = await call(c, 'NodeGroupDeleteNodes',
		{ id: GROUP, nodes: [{ providerID: opt['provider-id'], name: opt.name || opt['provider-id'] }] });
	check(r.code === 0, `NodeGroupDeleteNodes: code ${r.code} ${r.details || ''}`);
	console.log(JSON.stringify({ event: 'deleted', code: r.code }));
	c.close();
}

// NodeGroupTemplateNodeInfo of --group after a Refresh, as the autoscaler
// reads it to scale the group up from zero: its name, labels, capacity and
// allocatable.
async function template() {
	const c = newClient();
	await call(c, 'Refresh', {});
	const r = await call(c, 'NodeGroupTemplateNodeInfo', { id: GROUP });
	check(r.code === 0 && r.value.nodeBytes && r.value.nodeBytes.length > 0,
		`NodeGroupTemplateNodeInfo ${GROUP}: code ${r.code} ${r.details || ''}`);
	if (r.code === 0) {
		const node = NodeType.toObject(NodeType.decode(r.value.nodeBytes));
		const q = (m) => Object.fromEntries(Object.entries(m || {}).map(([k, v]) => [k, v.string]));
		console.log(JSON.stringify({ event: 'template', name: node.metadata.name,
			labels: node.metadata.labels || {}, capacity: q(node.status.capacity),
			allocatable: q(node.status.allocatable) }));
	}
	c.close();
}

const pct = (xs, p) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};

// NodeGroupIncreaseSize -> the new instance Running in NodeGroupNodes, as
// the autoscaler would see it (polled every 20 ms), --runs times.
async function provision() {
	const c = newClient();
	const runs = Number(opt.runs || 10), tier = opt.tier || 'cold', times = [];
	await waitFor('groupd ready', async () => (await call(c, 'Refresh', {})).code === 0, waitMs);
	for (let i = 0; i < runs; i++) {
		if (tier !== 'cold' && !await waitFor(`${tier} tier ready`, () => poolReady(GROUP, tier), waitMs))
			break;
		const before = await members(c);
		const t0 = process.hrtime.bigint();
		const r = await call(c, 'NodeGroupIncreaseSize', { id: GROUP, delta: 1 });
		if (r.code !== 0) {
			check(false, `run ${i}: increase ${r.code} ${r.details}`);
			break;
		}
		const inst = await waitFor('Running', async () => {
			const m = await members(c);
			return m && m.find((x) => !before.some((b) => b.id === x.id) && running(x));
		}, waitMs, 20);
		if (!inst)
			break;
		const ms = Number(process.hrtime.bigint() - t0) / 1e6;
		times.push(ms);
		console.log(JSON.stringify({ event: 'run', tier, i, ms }));
		await call(c, 'NodeGroupDeleteNodes', { id: GROUP, nodes: [{ providerID: inst.id, name: inst.id }] });
		await waitFor('deleted', async () => { const m = await members(c); return m && !m.some((x) => x.id === inst.id); }, waitMs);
		await sleep(20);
	}
	check(times.length === runs, `${times.length} of ${runs} runs`);
	console.log(JSON.stringify({ event: 'provision', tier, runs: times.length, p50_ms: pct(times, 50), p90_ms: pct(times, 90), ms: times }));
	c.close();
}

const scenarios = { contract, cache, errors, 'bad-input': badInput, stall, served, refused, watch,
	'real-scale': realScale, 'real-warm': realWarm, 'real-sick': realSick, 'real-bad': realBad,
	increase, settle, drain, provision, 'for-node': forNode, 'delete-one': deleteOne, template };
if (!scenarios[scenario] || !opt.address) {
	console.error('usage: ca-client.js --address HOST:PORT [...] ' + Object.keys(scenarios).join('|'));
	process.exit(2);
}
scenarios[scenario]().then(() => process.exit(failures ? 1 : 0), (e) => {
	console.log(`FAIL ${scenario}: ${e.stack || e}`);
	process.exit(1);
});
