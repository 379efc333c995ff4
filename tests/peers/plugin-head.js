#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A stand-in for the HEAD Neon scheduler plugin's request endpoint
// (doc/protocols.md, "HEAD plugin answers" and "Permit computation"),
// written on Node's own http stack so that vmact's plugin client is tested
// against a peer whose HTTP and JSON handling vmact did not write.
//
// It plays the HEAD plugin's observable quirks: only protocol 5.0 (400
// "protocol version mismatch: need v5.0 but got vX"), text/plain error
// bodies, the 1 KiB body limit turning long bodies into "bad JSON", the fast
// path for decreases/no-change, a 1 s wait before answering anything else,
// and partial grants in whole compute units against a small node.
// Misbehaviour on demand, chosen by the pod name:
//   missing -> 404 pod not found        nonode -> 404 pod's node is unknown
//   novm    -> 400 pod is not ...       patchfail -> 500 failed to patch VM object
//   stuck   -> 1 s, then 500 timed out waiting for updates to be processed
//   garbage -> 200 with a body that is not JSON
//   hangup  -> half a response, then the connection is destroyed
//   silent  -> never answers           liar -> permit above the request
//
// Usage: node plugin-head.js [--cpu MILLI] [--mem BYTES]; prints
// {"event":"listening","port":N} on stdout once ready (port chosen by the kernel),
// the line every peer under tests/peers announces itself with.
'use strict';

const http = require('http');

const args = process.argv.slice(2);
function arg(name, dflt) {
	const i = args.indexOf(name);
	return i >= 0 ? Number(args[i + 1]) : dflt;
}
const node = { cpu: arg('--cpu', 4000), mem: arg('--mem', 16 * 2 ** 30) };
const pods = new Map(); // "ns/name" -> {cpu, mem} reserved

const versions = ['v1.0', 'v1.1', 'v2.0', 'v2.1', 'v3.0', 'v4.0', 'v5.0'];
function versionString(v) {
	if (v === 0) return '<invalid: zero>';
	if (v >= 1 && v <= 7) return versions[v - 1];
	return `<unknown = v5.0 + ${v - 7}>`;
}

// k8s quantity -> number (ceil), for CPU in milli and memory in bytes.
const binary = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const decimal = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
function quantity(v, scale) {
	if (typeof v === 'number') return Math.ceil(v * scale);
	if (typeof v !== 'string') throw new Error('bad quantity');
	const m = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$/.exec(v);
	if (!m) throw new Error('bad quantity');
	const mult = binary[m[2]] || decimal[m[2]];
	return Math.ceil(Number(m[1]) * mult * scale - 1e-9);
}
function resources(r) {
	if (!r || typeof r !== 'object') throw new Error('bad resources');
	return { cpu: quantity(r.vCPUs, 1000), mem: quantity(r.mem, 1) };
}
// Go's MilliCPU and Bytes marshalling (doc/protocols.md, "Quantities").
function cpuJSON(milli) {
	return milli % 1000 === 0 ? milli / 1000 : `${milli}m`;
}
function bytesJSON(b) {
	if (b < 1024) return b;
	const suffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
	let i = 0;
	while (i < 6 && b % 1024 === 0) { b /= 1024; i++; }
	if (i > 0) return `${b}${suffixes[i]}`;
	const dsuf = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
	let j = 0;
	while (j < 6 && b % 1000 === 0) { b /= 1000; j++; }
	return `${b}${dsuf[j]}`;
}
function resJSON(r) {
	return { vCPUs: cpuJSON(r.cpu), mem: bytesJSON(r.mem) };
}

function text(res, status, body) {
	res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
	res.end(body + '\n');
}
function json(res, obj) {
	res.writeHead(200, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify(obj));
}

function reservedTotal(except) {
	let cpu = 0, mem = 0;
	for (const [k, r] of pods) if (k !== except) { cpu += r.cpu; mem += r.mem; }
	return { cpu, mem };
}

// reconcilePod for one resource (doc/protocols.md, "Permit computation").
function reconcile(reserved, requested, nodeReserved, total, unit) {
	if (requested <= reserved) return requested;
	const remaining = Math.max(0, total - nodeReserved);
	const maxIncrease = Math.floor(remaining / unit) * unit;
	return reserved + Math.min(maxIncrease, requested - reserved);
}

function handle(req, res, body) {
	if (req.method !== 'POST') return text(res, 400, 'must be POST');
	let r;
	try {
		r = JSON.parse(body.subarray(0, 1024).toString('utf8'));
		if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new Error('not an object');
	} catch (e) {
		return text(res, 400, 'bad JSON');
	}
	const v = r.protoVersion === undefined || r.protoVersion === null ? 0 : r.protoVersion;
	if (!Number.isInteger(v)) return text(res, 400, 'bad JSON');
	if (v === 0) return text(res, 400, 'invalid protocol version <invalid: zero>');
	if (v !== 7) return text(res, 400, `protocol version mismatch: need v5.0 but got ${versionString(v)}`);
	let cu, want, last;
	try {
		cu = r.computeUnit ? resources(r.computeUnit) : { cpu: 0, mem: 0 };
		want = resources(r.resources);
		last = r.lastPermit ? resources(r.lastPermit) : null;
	} catch (e) {
		return text(res, 400, 'bad JSON');
	}
	if (cu.cpu === 0) return text(res, 400, 'computeUnit fields must be non-zero: vCPUs must be non-zero');
	if (cu.mem === 0) return text(res, 400, 'computeUnit fields must be non-zero: mem must be non-zero');
	const pod = r.pod || {};
	const key = `${pod.namespace}/${pod.name}`;
	switch (pod.name) {
	case 'missing': return text(res, 404, 'pod not found');
	case 'nonode': return text(res, 404, "pod's node is unknown");
	case 'novm': return text(res, 400, 'pod is not associated with a VM');
	case 'patchfail': return text(res, 500, 'failed to patch VM object');
	case 'stuck':
		return setTimeout(() => text(res, 500, 'timed out waiting for updates to be processed'), 1000);
	case 'garbage':
		res.writeHead(200, { 'Content-Type': 'application/json' });
		return res.end('{"permit": {"vCPUs": 1, "mem": ');
	case 'hangup':
		res.socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"perm');
		return setTimeout(() => res.socket.destroy(), 50);
	case 'silent':
		return; // keep the connection open, say nothing
	case 'liar':
		return json(res, { permit: resJSON({ cpu: want.cpu + 1000, mem: want.mem }) });
	}
	// Fast path: decreases and no-change notifications echo at once.
	if (last && want.cpu <= last.cpu && want.mem <= last.mem) {
		pods.set(key, want);
		return json(res, { permit: resJSON(want) });
	}
	// Otherwise the real handler waits for the reconciler (1 s timer).
	setTimeout(() => {
		const reserved = pods.get(key) || last || want;
		const others = reservedTotal(key);
		const next = {
			cpu: reconcile(reserved.cpu, want.cpu, others.cpu + reserved.cpu, node.cpu, cu.cpu),
			mem: reconcile(reserved.mem, want.mem, others.mem + reserved.mem, node.mem, cu.mem),
		};
		pods.set(key, next);
		json(res, { permit: resJSON(next) });
	}, 1000);
}

const server = http.createServer((req, res) => {
	const chunks = [];
	let size = 0;
	req.on('data', (c) => {
		// Like Go's LimitReader: read on, keep only the first KiB.
		if (size < 2048) chunks.push(c);
		size += c.length;
	});
	req.on('end', () => handle(req, res, Buffer.concat(chunks)));
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
	process.stdout.write(JSON.stringify({ event: 'listening', port: server.address().port }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
// Like every peer here: ends when its stdin closes (the test went away).
process.stdin.on('end', () => process.exit(0)).resume();
