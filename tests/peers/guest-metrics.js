#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A guest's metrics endpoints for vmact's tests, on Node's own http stack:
// the system exporter the Neon agent reads on port 9100 and the LFC
// exporter on port 9499 (doc/protocols.md, "Metrics inputs"), plus the ways
// such an endpoint fails. One server answers every mode:
//   GET /metrics          the current mode (--mode, default "system"),
//                         changed at run time by the "mode" command
//   GET /<mode>/metrics   that mode, whatever the current one is
// Modes:
//   system   the five host_* gauges: load1 = --load (default 3), load5 =
//            load1 / 2, --mem-total bytes (default 4 GiB) total,
//            --mem-available (default 3 GiB) available, 512 MiB cached
//   lfc      lfc_hits/misses/writes and --windows (default 3) working-set
//            windows of 60 s, 120 s, ... (window i holds 1000 * i pages),
//            listed last first
//   garbage  200 with an HTML page
//   big      200 with a valid system page padded with comments past
//            --big-bytes (default 300 KiB)
//   status   503 with a text body
//   silent   accepts the request and never answers
//   hangup   half a response, then the connection is destroyed
//   endless  200 with a body that never ends (comment lines, as fast as
//            the client reads)
//
// Usage: node guest-metrics.js [--mode M] [--load N] [--windows N]
//        [--big-bytes N] [--mem-total N] [--mem-available N]; prints {"event":"listening","port":N} once ready
// (port chosen by the kernel), the line every peer under tests/peers
// announces itself with. Commands on stdin, one per line, each acknowledged
// on stdout once in effect with {"event":"ack","command":LINE}: "mode M",
// "load N"; an unknown one with {"event":"error","command":LINE}.
'use strict';

const http = require('http');
const readline = require('readline');

const args = process.argv.slice(2);
function arg(name, dflt) {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
}

const modes = ['system', 'lfc', 'garbage', 'big', 'status', 'silent', 'hangup', 'endless'];
const state = {
	mode: arg('--mode', 'system'),
	load: Number(arg('--load', '3')),
	windows: Number(arg('--windows', '3')),
	bigBytes: Number(arg('--big-bytes', String(300 * 1024))),
	memTotal: Number(arg('--mem-total', String(4 * 2 ** 30))),
	memAvailable: Number(arg('--mem-available', String(3 * 2 ** 30))),
};
if (!modes.includes(state.mode)) {
	process.stderr.write(`unknown mode ${state.mode}\n`);
	process.exit(2);
}

function gauge(name, help, value, labels) {
	return `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name}${labels || ''} ${value}\n`;
}

function systemPage() {
	return (
		gauge('host_load1', '1-minute load average of the guest', state.load) +
		gauge('host_load5', '5-minute load average of the guest', state.load / 2) +
		gauge('host_memory_total_bytes', 'memory the guest sees', state.memTotal) +
		gauge('host_memory_available_bytes', 'memory available to the guest', state.memAvailable) +
		gauge('host_memory_cached_bytes', 'page cache', 512 * 2 ** 20) +
		'# HELP host_cpu_seconds_total time per CPU and mode\n' +
		'# TYPE host_cpu_seconds_total counter\n' +
		'host_cpu_seconds_total{cpu="0",mode="idle"} 1234.5\n' +
		'host_cpu_seconds_total{cpu="0",mode="user"} 67.25\n'
	);
}

function lfcPage() {
	let page =
		gauge('lfc_hits', 'LFC hits', 1000) +
		gauge('lfc_misses', 'LFC misses', 10) +
		gauge('lfc_writes', 'LFC writes', 5) +
		'# HELP lfc_approximate_working_set_size_windows working set size in 8 KiB pages\n' +
		'# TYPE lfc_approximate_working_set_size_windows gauge\n';
	for (let i = state.windows; i >= 1; i--)
		page += `lfc_approximate_working_set_size_windows{duration_seconds="${60 * i}"} ${1000 * i}\n`;
	return page;
}

function say(obj) {
	process.stdout.write(JSON.stringify(obj) + '\n');
}

function text(res, status, body) {
	res.writeHead(status, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
	res.end(body);
}

function serve(mode, req, res) {
	switch (mode) {
	case 'system':
		return text(res, 200, systemPage());
	case 'lfc':
		return text(res, 200, lfcPage());
	case 'garbage':
		res.writeHead(200, { 'Content-Type': 'text/html' });
		return res.end('<html><body><h1>It works!</h1></body></html>\n');
	case 'big': {
		let page = systemPage();
		const pad = '# padding ' + 'x'.repeat(100) + '\n';
		while (page.length <= state.bigBytes) page += pad;
		return text(res, 200, page);
	}
	case 'status':
		return text(res, 503, 'exporter not ready\n');
	case 'silent':
		return; // keep the connection open, say nothing
	case 'hangup':
		res.socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 500\r\n\r\nhost_lo');
		return setTimeout(() => res.socket.destroy(), 50);
	case 'endless': {
		res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
		const line = '# more ' + 'x'.repeat(1000) + '\n';
		const more = () => {
			while (!res.destroyed && res.write(line));
		};
		res.on('drain', more);
		return more();
	}
	}
}

const server = http.createServer((req, res) => {
	const m = /^\/(?:([a-z]+)\/)?metrics$/.exec(req.url);
	if (req.method !== 'GET' || !m || (m[1] && !modes.includes(m[1])))
		return text(res, 404, 'not found\n');
	serve(m[1] || state.mode, req, res);
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
	say({ event: 'listening', port: server.address().port });
});

readline
	.createInterface({ input: process.stdin })
	.on('line', (line) => {
		const [cmd, value] = line.trim().split(/\s+/);
		if (cmd === 'mode' && modes.includes(value)) state.mode = value;
		else if (cmd === 'load' && Number.isFinite(Number(value))) state.load = Number(value);
		else return say({ event: 'error', command: line.trim() });
		say({ event: 'ack', command: `${cmd} ${value}` });
	})
	// The test that started us is gone: do not outlive it.
	.on('close', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
