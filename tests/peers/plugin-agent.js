#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// An agent-side peer for vmact's arbiter, on Node's own HTTP client and
// JSON: it encodes AgentRequests the way the Go agent marshals them
// (doc/protocols.md, "Quantities" and "Plugin versions") and checks the
// arbiter's answers, so the arbiter is tested against a protocol stack
// vmact did not write.
//
// Usage: node plugin-agent.js PORT
// Expects an arbiter with at least 16 CPUs / 64 GiB free, slot size 1 GiB
// and watermark 1. Prints one line per check and exits 1 on any failure.
'use strict';

const http = require('http');

const port = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let failures = 0;

function check(cond, what) {
	if (cond) {
		console.log(`ok ${what}`);
	} else {
		console.log(`FAIL ${what}`);
		failures++;
	}
}

function post(body, method = 'POST') {
	const data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
	return new Promise((resolve, reject) => {
		const req = http.request({
			host: '127.0.0.1', port, path: '/', method, agent,
			headers: { 'Content-Type': 'application/json', 'Content-Length': data.length },
		}, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({
				status: res.statusCode,
				type: res.headers['content-type'] || '',
				body: Buffer.concat(chunks).toString('utf8'),
			}));
		});
		req.on('error', reject);
		req.setTimeout(10000, () => req.destroy(new Error('timeout')));
		req.end(method === 'GET' ? undefined : data);
	});
}

// Go's MilliCPU and Bytes marshalling.
const cpu = (m) => (m % 1000 === 0 ? m / 1000 : `${m}m`);
function bytes(b) {
	if (b < 1024) return b;
	const s = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
	let i = 0;
	while (i < 6 && b % 1024 === 0) { b /= 1024; i++; }
	return i ? `${b}${s[i]}` : `${b}`;
}
const GiB = 2 ** 30;
const res5 = (m, b) => ({ vCPUs: cpu(m), mem: bytes(b) });

function request5(name, want, last, metrics = null) {
	return {
		protoVersion: 7,
		pod: { namespace: 'node-peer', name },
		computeUnit: res5(250, GiB),
		resources: res5(want[0], want[1]),
		lastPermit: last ? res5(last[0], last[1]) : null,
		metrics,
	};
}

async function main() {
	let r = await post(request5('a', [250, GiB], null));
	check(r.status === 200 && r.type === 'application/json', 'v5.0 first request: 200 json');
	check(JSON.stringify(JSON.parse(r.body)) === '{"permit":{"vCPUs":"250m","mem":"1Gi"}}',
		`v5.0 first permit ${r.body}`);

	r = await post(request5('a', [1000, 4 * GiB], [250, GiB], { loadAvg1M: 0.37 }));
	check(r.status === 200 && r.body === '{"permit":{"vCPUs":1,"mem":"4Gi"}}', `v5.0 upscale ${r.body}`);

	r = await post(request5('a', [500, 2 * GiB], [1000, 4 * GiB], { loadAvg1M: 0.1 }));
	check(r.status === 200 && r.body === '{"permit":{"vCPUs":"500m","mem":"2Gi"}}', `v5.0 downscale ${r.body}`);

	r = await post({
		protoVersion: 6, pod: { namespace: 'node-peer', name: 'b' },
		computeUnit: res5(250, GiB), resources: res5(750, 3 * GiB), lastPermit: null,
		metrics: { loadAvg1M: 0.5, loadAvg5M: 0.25, memoryUsageBytes: 100000000 },
	});
	check(r.status === 200 && r.body === '{"permit":{"vCPUs":"750m","mem":"3Gi"}}', `v4.0 ${r.body}`);

	r = await post({
		protoVersion: 5, pod: { namespace: 'node-peer', name: 'c' },
		resources: { vCPUs: '500m', mem: 2 }, lastPermit: null, metrics: null,
	});
	check(r.status === 200 && r.body === '{"permit":{"vCPUs":"500m","mem":2}}', `v3.0 slots ${r.body}`);

	r = await post({
		protoVersion: 3, pod: { namespace: 'node-peer', name: 'd' },
		resources: { vCPUs: '500m', mem: 2 },
		metrics: { loadAvg1M: 0.5, loadAvg5M: 0.25, memoryUsageBytes: 100000000 },
	});
	const d = JSON.parse(r.body);
	check(r.status === 200 && d.permit.mem === 2 && d.resourceUnit && d.resourceUnit.vCPUs === '250m',
		`v2.0 resourceUnit ${r.body}`);

	r = await post({ protoVersion: 8, pod: { namespace: 'x', name: 'y' } });
	check(r.status === 400 && r.type.startsWith('text/plain') &&
		r.body.startsWith('protocol version mismatch: need v1.0 to v5.0 but got'), `mismatch ${r.body}`);

	r = await post('', 'GET');
	check(r.status === 400 && r.body === 'must be POST', `GET ${r.body}`);

	const big = JSON.stringify(request5('big', [250, GiB], null)) + ' '.repeat(1500);
	r = await post(big);
	check(r.status === 400 && r.body === 'bad JSON', `1.5 KiB body ${r.body}`);

	r = await post('{"protoVersion": 7, "pod": ');
	check(r.status === 400 && r.body === 'bad JSON', `truncated ${r.body}`);

	// 50 agents at once, each growing from 1 CU to 4 CU.
	const names = Array.from({ length: 50 }, (_, i) => `many-${i}`);
	let answers = await Promise.all(names.map((n) => post(request5(n, [250, GiB], null))));
	check(answers.every((a) => a.status === 200), '50 concurrent registrations');
	answers = await Promise.all(names.map((n) => post(request5(n, [1000, 4 * GiB], [250, GiB]))));
	let sumCpu = 0;
	let ok = answers.every((a) => a.status === 200);
	for (const a of answers) {
		const p = JSON.parse(a.body).permit;
		const m = typeof p.vCPUs === 'number' ? p.vCPUs * 1000 : parseInt(p.vCPUs, 10);
		ok = ok && m >= 250 && m <= 1000;
		sumCpu += m;
	}
	check(ok, '50 concurrent upscales: every permit between last permit and request');
	check(sumCpu <= 64000, `sum of CPU permits ${sumCpu}m within capacity`);
}

main().then(() => {
	agent.destroy();
	process.exit(failures ? 1 : 0);
}, (e) => {
	console.log(`FAIL ${e.message}`);
	process.exit(1);
});
