#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A stand-in for vmact-groupd's JSON API (doc/cluster-api.md) for
// vmact-cloudprovider's loopback tests: node groups in memory, no VMs.
// It is a fake for the provider's logic and error mapping only; the real
// groupd with real libvirt is what tests/integration/test_cloudprovider
// drives.
//
// Usage: fake-groupd.js SOCKET
// Groups: "web" (min 0, max 3, labels, a taint, options set, 20Gi of
// ephemeral storage), "batch" (min 1, max 5, target 1, one running node, no
// options), "busy" (min 0, max 2, the two newest options set,
// whose nodes never finish booting). A node booted by an increase is
// "creating", then "running" after FAKE_GROUPD_BOOT_MS (default 300); a
// deleted node "deleting", then gone.
//
// Output: {"event":"listening","path":SOCKET}, then one line per request:
// {"event":"request","method":M,"path":P,"body":B}.
// Control, one JSON object per line on stdin, acknowledged with
// {"event":"ack"} once applied, or POSTed to /control (answered {} once
// applied; the provider never asks for it); GET /control/requests lists
// the requests seen so far:
//   {"cmd":"fail","status":503,"reason":"unavailable","count":N}
//       the next N requests are answered with that error
//   {"cmd":"garbage","count":N}   the next N answers are not JSON
//   {"cmd":"answer","body":B}     the next answer is B, status 200, whatever
//       was asked (JSON, but maybe not the API's)
//   {"cmd":"delay","ms":MS}       every answer waits MS first (0: none)
//   {"cmd":"error","group":G,"index":I,"error":{class,code,message}}
//       the group's I-th node reports that error
//   {"cmd":"add-group","id":G}     a new group (after the provider's snapshot)
//   {"cmd":"bounds","group":G,"min":A,"max":B}
'use strict';

const http = require('http');
const fs = require('fs');
const readline = require('readline');
const crypto = require('crypto');

const sock = process.argv[2];
const bootMs = Number(process.env.FAKE_GROUPD_BOOT_MS || 300);
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');

function group(id, min, max, extra) {
	return Object.assign({
		id, min, max, target: 0, hosts: ['fakehost'], labels: {}, taints: [],
		template: { vcpus: 2, max_vcpus: 4, memory_bytes: 2 ** 31, max_memory_bytes: 2 ** 33,
			pods: 110, arch: 'x86_64', os: 'linux' },
		pool: { running: { size: 0, ready: 0 }, paused: { size: 0, ready: 0 },
			saved: { size: 0, ready: 0 } },
		nodes: [],
	}, extra);
}

const groups = new Map();
groups.set('web', group('web', 0, 3, {
	labels: { 'vmact.io/group': 'web', 'node.kubernetes.io/instance-type': 'tcg-2' },
	taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
	options: { scale_down_utilization_threshold: 0.3, max_node_provision_time_s: 420,
		zero_or_max_node_scaling: true },
}));
groups.get('web').template.ephemeral_storage_bytes = 20 * 2 ** 30;
groups.set('batch', group('batch', 1, 5, { target: 1 }));
// busy sets only what the newest autoscalers know of
groups.set('busy', group('busy', 0, 2, {
	options: { max_node_startup_time_s: 300, allow_non_atomic_scale_up_to_max: true },
}));

function newNode(g, state) {
	const uuid = crypto.randomUUID();
	const n = { provider_id: `libvirt://fakehost/${uuid}`, name: `${g.id}-${uuid.slice(0, 8)}`,
		host: 'fakehost', state };
	g.nodes.push(n);
	return n;
}
newNode(groups.get('batch'), 'running');

function publicGroup(g) {
	const { nodes, ...rest } = g;
	return rest;
}

let failNext = null;
let garbageLeft = 0;
let answerNext = null;
let delayMs = 0;

function reply(res, status, obj) {
	const send = () => {
		if (answerNext !== null) {
			const b = JSON.stringify(answerNext);
			answerNext = null;
			res.writeHead(200, { 'Content-Type': 'application/json' });
			res.end(b);
			return;
		}
		if (garbageLeft > 0) {
			garbageLeft--;
			res.writeHead(200, { 'Content-Type': 'application/json' });
			res.end('{"groups": [ this is not json');
			return;
		}
		const body = JSON.stringify(obj);
		res.writeHead(status, { 'Content-Type': 'application/json' });
		res.end(body);
	};
	if (delayMs)
		setTimeout(send, delayMs);
	else
		send();
}

const err = (res, status, reason, error) => reply(res, status, { error, reason });

const seen = [];

function handle(req, res, body) {
	const url = new URL(req.url, 'http://x');
	const parts = url.pathname.split('/').filter((p) => p).map(decodeURIComponent);
	let doc = null;
	if (body.length) {
		try { doc = JSON.parse(body); } catch (e) { return err(res, 400, 'invalid', 'body is not JSON'); }
	}
	if (parts[0] === 'control') {
		if (req.method === 'GET')
			return reply(res, 200, { requests: seen });
		control(doc || {});
		res.writeHead(200, { 'Content-Type': 'application/json' });
		return res.end('{}');
	}
	seen.push({ method: req.method, path: req.url, body: doc });
	emit({ event: 'request', method: req.method, path: req.url, body: doc });
	if (failNext && failNext.count > 0) {
		failNext.count--;
		return err(res, failNext.status, failNext.reason, `injected ${failNext.reason}`);
	}
	if (parts[0] !== 'v1')
		return err(res, 404, 'not-found', 'no such endpoint');
	if (req.method === 'GET' && parts.length === 2 && parts[1] === 'groups')
		return reply(res, 200, { groups: [...groups.values()].map(publicGroup) });
	if (req.method === 'GET' && parts.length === 2 && parts[1] === 'node-group') {
		const pid = url.searchParams.get('provider_id') || '';
		for (const g of groups.values())
			if (g.nodes.some((n) => n.provider_id === pid))
				return reply(res, 200, { id: g.id });
		return reply(res, 200, { id: '' });
	}
	if (parts[1] !== 'groups' || parts.length < 3)
		return err(res, 404, 'not-found', 'no such endpoint');
	const g = groups.get(parts[2]);
	if (!g)
		return err(res, 404, 'not-found', `no node group ${parts[2]}`);
	if (req.method === 'GET' && parts.length === 3)
		return reply(res, 200, publicGroup(g));
	if (req.method === 'GET' && parts[3] === 'nodes')
		return reply(res, 200, { nodes: g.nodes.map((n) => Object.assign({}, n)) });
	if (req.method !== 'POST' || !doc)
		return err(res, 400, 'invalid', 'POST with a JSON body expected');
	if (parts[3] === 'increase') {
		const d = doc.delta;
		if (!Number.isInteger(d) || d <= 0)
			return err(res, 400, 'invalid', 'delta must be a positive integer');
		if (g.target + d > g.max)
			return err(res, 409, 'out-of-range', `target ${g.target + d} would pass max ${g.max}`);
		g.target += d;
		for (let i = 0; i < d; i++) {
			const n = newNode(g, 'creating');
			if (g.id !== 'busy')
				setTimeout(() => { if (n.state === 'creating' && !n.error) n.state = 'running'; }, bootMs);
		}
		return reply(res, 200, { target: g.target });
	}
	if (parts[3] === 'delete-nodes') {
		const ids = doc.provider_ids;
		if (!Array.isArray(ids) || !ids.length)
			return err(res, 400, 'invalid', 'provider_ids must be a non-empty array');
		for (const id of ids)
			if (!g.nodes.some((n) => n.provider_id === id && n.state !== 'deleting'))
				return err(res, 404, 'not-found', `${id} is not a node of ${g.id}`);
		if (g.target - ids.length < g.min)
			return err(res, 409, 'out-of-range', `target ${g.target - ids.length} would go below min ${g.min}`);
		g.target -= ids.length;
		for (const id of ids) {
			const n = g.nodes.find((x) => x.provider_id === id);
			n.state = 'deleting';
			setTimeout(() => { g.nodes = g.nodes.filter((x) => x !== n); }, bootMs);
		}
		return reply(res, 200, { target: g.target });
	}
	if (parts[3] === 'decrease-target') {
		const d = doc.delta;
		if (!Number.isInteger(d) || d >= 0)
			return err(res, 400, 'invalid', 'delta must be a negative integer');
		const unfulfilled = g.nodes.filter((n) => n.state === 'creating');
		if (-d > unfulfilled.length)
			return err(res, 409, 'precondition', `only ${unfulfilled.length} nodes are not yet running`);
		for (const n of unfulfilled.slice(0, -d))
			g.nodes = g.nodes.filter((x) => x !== n);
		g.target += d;
		return reply(res, 200, { target: g.target });
	}
	return err(res, 404, 'not-found', 'no such endpoint');
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
});

function control(c) {
	if (c.cmd === 'fail')
		failNext = { status: c.status, reason: c.reason, count: c.count || 1 };
	else if (c.cmd === 'garbage')
		garbageLeft = c.count || 1;
	else if (c.cmd === 'answer')
		answerNext = c.body === undefined ? null : c.body;
	else if (c.cmd === 'delay')
		delayMs = c.ms;
	else if (c.cmd === 'error')
		groups.get(c.group).nodes[c.index].error = c.error;
	else if (c.cmd === 'add-group')
		groups.set(c.id, group(c.id, 0, 1));
	else if (c.cmd === 'bounds')
		Object.assign(groups.get(c.group), { min: c.min, max: c.max });
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
	let c;
	try { c = JSON.parse(line); } catch (e) { return; }
	control(c);
	emit({ event: 'ack', cmd: c.cmd });
});
rl.on('close', () => process.exit(0));

try { fs.unlinkSync(sock); } catch (e) { /* none */ }
server.listen(sock, () => {
	// the provider may run as another user (never root)
	fs.chmodSync(sock, 0o666);
	emit({ event: 'listening', path: sock });
});
