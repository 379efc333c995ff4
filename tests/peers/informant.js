#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// An independent VM informant (agent <-> informant protocol v1.0-v2.0,
// doc/protocols.md, "Informant protocol") for vmact's interop tests, on Node's plain `http`
// module: no code shared with vmact's protocol stack. It behaves like the
// v0.10 informant: validates versions (400), rejects duplicate agent IDs
// (409), calls the agent's GET /id back (250 ms) before answering
// /register, keeps agents ordered by registration and makes the newest
// healthy one current (POST /suspend the old one, POST /resume the new
// one), answers /downscale with a DownscaleResult, checks agents with
// GET /id, and sends POST /try-upscale on demand.
//
// Control: one JSON command per line on stdin; one JSON event per line on
// stdout (the first is {"event":"listening","port":N}). Commands:
//   {"cmd":"set", "approve":bool, "status":"..."}        downscale answers
//   {"cmd":"set", "resumeEarly":true}   /resume the agent before answering /register
//   {"cmd":"fail", "path":"/health-check", "status":404, "count":1}
//   {"cmd":"hold", "path":"/health-check"}     keep the next answer back...
//   {"cmd":"release"}                          ...until this
//   {"cmd":"try-upscale", "cpu":bool, "memory":bool}   to the current agent
//   {"cmd":"check"}                                     GET /id every agent
//   {"cmd":"suspend"}                                   suspend the current agent
//   {"cmd":"resume"}                                    make the newest healthy current
//   {"cmd":"request", "tag":"x", "method":"PUT", "path":"/id", "body":"{}",
//    "expectedID":"current"}                            raw request to the current agent
//   {"cmd":"state"}                                     dump agents
//   {"cmd":"quit"}
//
// Options: --host H (default 127.0.0.1; loopback only in tests)
//          --port P (0 = any)  --min V --max V (informant range, default 4 4)
//          --prom-port N (9100) --check-ms N (periodic /id check, 0 = off)
//          --timeout-factor F (multiplies the informant's own timeouts, 1)
'use strict';

const http = require('http');
const readline = require('readline');

const opts = { host: '127.0.0.1', port: 0, min: 4, max: 4, promPort: 9100, checkMs: 0, timeoutFactor: 1 };
for (let i = 2; i < process.argv.length; i += 2) {
	const k = process.argv[i], v = process.argv[i + 1];
	switch (k) {
	case '--host': opts.host = v; break;
	case '--port': opts.port = Number(v); break;
	case '--min': opts.min = Number(v); break;
	case '--max': opts.max = Number(v); break;
	case '--prom-port': opts.promPort = Number(v); break;
	case '--check-ms': opts.checkMs = Number(v); break;
	case '--timeout-factor': opts.timeoutFactor = Number(v); break;
	default: process.stderr.write(`informant.js: unknown option ${k}\n`); process.exit(2);
	}
}

const emit = (ev) => process.stdout.write(JSON.stringify(ev) + '\n');

// Timeouts of the v0.10 informant.
// Tests on a loaded machine stretch them with --timeout-factor so that a
// slow (sanitized) agent is not mistaken for a dead one.
const tf = opts.timeoutFactor;
const ID_TIMEOUT_MS = 250 * tf, SUSPEND_TIMEOUT_MS = 5000 * tf, RESUME_TIMEOUT_MS = 100 * tf,
	TRY_UPSCALE_TIMEOUT_MS = 400 * tf;

let downscaleApprove = true, downscaleStatus = 'approved by fixture', resumeEarly = false;
const failures = new Map(); // path -> {status, count}
// Registered agents in registration order: {id, addr, version, seq: [..],
// healthy, state: 'suspended'|'running', lastSeq}
const agents = [];
let current = null;
let busy = false; // the informant makes at most one request to agents at a time
const queue = [];

const uuidRe = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// Go's encoding/json matches keys case-insensitively, exact match first.
function field(obj, key) {
	if (Object.prototype.hasOwnProperty.call(obj, key)) return obj[key];
	const want = key.toLowerCase();
	for (const k of Object.keys(obj)) if (k.toLowerCase() === want) return obj[k];
	return undefined;
}

class HttpError extends Error {
	constructor(status, msg) { super(msg); this.status = status; }
}

function recordSeq(agent, seq, what) {
	if (!Number.isInteger(seq) || seq < 1)
		emit({ event: 'protocol-error', agentID: agent.id, what, message: `bad sequenceNumber ${seq}` });
	else if (seq <= agent.lastSeq)
		emit({ event: 'protocol-error', agentID: agent.id, what,
			message: `sequenceNumber ${seq} not above ${agent.lastSeq}` });
	agent.lastSeq = Math.max(agent.lastSeq, seq);
	agent.seqs.push(seq);
}

// One request to an agent's server; resolves {status, body, json} or
// {error}. Serialised like the informant's own requests.
function callAgent(addr, method, path, body, timeoutMs) {
	return new Promise((resolve) => {
		const run = () => {
			busy = true;
			const data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
			const [host, port] = splitAddr(addr);
			const done = (r) => {
				busy = false;
				resolve(r);
				const next = queue.shift();
				if (next) next();
			};
			let finished = false;
			const req = http.request({ host, port, method, path, agent: false,
				headers: { 'content-type': 'application/json', 'content-length': data.length } },
			(res) => {
				const chunks = [];
				res.on('data', (c) => chunks.push(c));
				res.on('end', () => {
					if (finished) return;
					finished = true;
					clearTimeout(timer);
					const text = Buffer.concat(chunks).toString();
					let json;
					try { json = JSON.parse(text); } catch (e) { json = undefined; }
					done({ status: res.statusCode, body: text, json });
				});
				res.on('error', (e) => { if (!finished) { finished = true; clearTimeout(timer); done({ error: e.message }); } });
			});
			const timer = setTimeout(() => {
				if (finished) return;
				finished = true;
				req.destroy();
				done({ error: `timeout after ${timeoutMs} ms` });
			}, timeoutMs);
			req.on('error', (e) => { if (!finished) { finished = true; clearTimeout(timer); done({ error: e.message }); } });
			req.end(data);
		};
		if (busy) queue.push(run); else run();
	});
}

function splitAddr(addr) {
	const m = /^\[(.*)\]:(\d+)$/.exec(addr) || /^([^:]*):(\d+)$/.exec(addr);
	if (!m) throw new HttpError(400, `bad agentServeAddr ${JSON.stringify(addr)}`);
	return [m[1], Number(m[2])];
}

// Checks an AgentMessage[AgentIdentification] answer from the agent.
function checkIdMessage(agent, r, what) {
	if (r.error) return `${what}: ${r.error}`;
	if (r.status !== 200) return `${what}: status ${r.status}: ${r.body}`;
	const data = r.json && typeof r.json === 'object' ? field(r.json, 'data') : undefined;
	const seq = r.json && typeof r.json === 'object' ? field(r.json, 'sequenceNumber') : undefined;
	if (!data || typeof data !== 'object') return `${what}: no data in ${r.body}`;
	if (String(field(data, 'agentID')).toLowerCase() !== agent.id)
		return `${what}: agentID ${field(data, 'agentID')} != ${agent.id}`;
	recordSeq(agent, seq, what);
	return null;
}

async function suspend(agent) {
	const r = await callAgent(agent.addr, 'POST', '/suspend', { expectedID: agent.id }, SUSPEND_TIMEOUT_MS);
	const bad = checkIdMessage(agent, r, '/suspend');
	emit({ event: 'suspend', agentID: agent.id, status: r.status, error: bad, seq: r.json && field(r.json, 'sequenceNumber') });
	if (!bad) agent.state = 'suspended';
	else agent.healthy = false;
	return !bad;
}

async function resume(agent) {
	const r = await callAgent(agent.addr, 'POST', '/resume', { expectedID: agent.id }, RESUME_TIMEOUT_MS);
	const bad = checkIdMessage(agent, r, '/resume');
	emit({ event: 'resume', agentID: agent.id, status: r.status, error: bad, seq: r.json && field(r.json, 'sequenceNumber') });
	if (!bad) agent.state = 'running';
	else agent.healthy = false;
	return !bad;
}

// The newest healthy agent becomes current.
let electing = Promise.resolve();
function elect() {
	electing = electing.then(async () => {
		for (;;) {
			const cand = [...agents].reverse().find((a) => a.healthy);
			if (cand === current && (!cand || cand.state === 'running')) return;
			if (current && current !== cand && agents.includes(current) && current.healthy) {
				await suspend(current);
			}
			current = null;
			if (!cand) return;
			if (await resume(cand)) {
				current = cand;
				return;
			}
		}
	});
	return electing;
}

function findAgent(id) {
	return agents.find((a) => a.id === String(id).toLowerCase());
}

function removeAgent(agent) {
	const i = agents.indexOf(agent);
	if (i >= 0) agents.splice(i, 1);
	if (current === agent) current = null;
}

// Endpoint handlers: (body) -> response object, or throw HttpError.
const endpoints = {
	'/register': { method: 'POST', async fn(body) {
		const id = field(body, 'agentID'), addr = field(body, 'agentServeAddr');
		const min = field(body, 'minProtoVersion'), max = field(body, 'maxProtoVersion');
		if (typeof id !== 'string' || !uuidRe.test(id) || typeof addr !== 'string' ||
		    !Number.isInteger(min) || !Number.isInteger(max))
			throw new HttpError(400, 'bad JSON');
		if (max < opts.min || opts.max < min || min > max)
			throw new HttpError(400, `Protocol version mismatch: Need v${opts.min} to v${opts.max}, got v${min} to v${max}`);
		const version = Math.min(max, opts.max);
		if (findAgent(id)) throw new HttpError(409, `Agent with ID ${id} is already registered`);
		const agent = { id: id.toLowerCase(), addr, version, seqs: [], lastSeq: 0, healthy: true, state: 'suspended' };
		const r = await callAgent(addr, 'GET', '/id', {}, ID_TIMEOUT_MS);
		const bad = checkIdMessage(agent, r, '/id');
		emit({ event: 'id-check', agentID: agent.id, phase: 'register', status: r.status, error: bad,
			seq: r.json && field(r.json, 'sequenceNumber') });
		if (bad) throw new HttpError(400, `Error checking agent /id: ${bad}`);
		if (findAgent(id)) throw new HttpError(409, `Agent with ID ${id} is already registered`);
		agents.push(agent);
		emit({ event: 'register', agentID: agent.id, addr, version });
		// The answer and the /resume travel on different connections, so
		// either may arrive first; resumeEarly forces the /resume first.
		if (resumeEarly) await elect();
		else setImmediate(elect);
		return { protoVersion: version, metricsMethod: { prometheus: { port: opts.promPort } } };
	} },
	'/health-check': { method: 'PUT', async fn(body) {
		const id = field(body, 'agentID');
		const agent = findAgent(id);
		if (!agent) throw new HttpError(404, `No agent with ID ${id} registered`);
		if (agent.version < 3) throw new HttpError(400, 'health checks are not supported in the agent\'s protocol version');
		emit({ event: 'health-check', agentID: agent.id });
		return {};
	} },
	'/downscale': { method: 'PUT', async fn(body) { return resources('downscale', body); } },
	'/upscale': { method: 'PUT', async fn(body) { return resources('upscale', body); } },
	'/unregister': { method: 'DELETE', async fn(body) {
		const id = field(body, 'agentID');
		const agent = findAgent(id);
		if (!agent) throw new HttpError(404, `No agent with ID ${id} registered`);
		if (agent.addr !== field(body, 'agentServeAddr'))
			throw new HttpError(400, 'serverAddr does not match the registered agent');
		const wasActive = current === agent;
		removeAgent(agent);
		emit({ event: 'unregister', agentID: agent.id, wasActive });
		if (wasActive) setImmediate(elect);
		return { wasActive };
	} },
};

function isQuantity(v) {
	return typeof v === 'string' && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$/.test(v);
}

function resources(kind, body) {
	const agent = current;
	if (!agent || agent.state !== 'running')
		throw new HttpError(400, 'No currently active agent');
	let raw = body, seq;
	if (agent.version >= 4) {
		raw = field(body, 'data');
		seq = field(body, 'sequenceNumber');
		if (!raw || typeof raw !== 'object') throw new HttpError(400, 'bad JSON');
		const ident = field(raw, 'id');
		if (!ident || String(field(ident, 'agentID')).toLowerCase() !== agent.id)
			throw new HttpError(400, 'Agent is not the active agent');
		recordSeq(agent, seq, `/${kind}`);
	}
	const cpu = field(raw, 'cpu'), memory = field(raw, 'memory');
	if (!isQuantity(cpu) || !isQuantity(memory)) throw new HttpError(400, 'bad JSON');
	const ev = { event: kind, agentID: agent.id, cpu, memory, seq };
	if (kind === 'downscale') {
		ev.ok = downscaleApprove;
		emit(ev);
		return { Ok: downscaleApprove, Status: downscaleStatus };
	}
	emit(ev);
	return {};
}

const holds = new Set(), held = [];
const inflightFrom = new Map(); // agentID -> path of its request in flight

function requester(path, body) {
	if (path === '/downscale' || path === '/upscale') {
		const data = field(body, 'data');
		const ident = data && typeof data === 'object' ? field(data, 'id') : undefined;
		if (ident && typeof ident === 'object') return String(field(ident, 'agentID')).toLowerCase();
		return current ? current.id : null;
	}
	const id = field(body, 'agentID');
	return typeof id === 'string' ? id.toLowerCase() : null;
}

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', async () => {
		const reply = (status, body, type) => {
			const data = Buffer.from(body);
			res.writeHead(status, { 'content-type': type || 'text/plain; charset=utf-8', 'content-length': data.length });
			res.end(data);
		};
		const path = req.url.split('?')[0];
		const ep = endpoints[path];
		if (!ep) return reply(404, '404 page not found\n');
		if (req.method !== ep.method) return reply(405, `request method must be ${ep.method}`);
		let body;
		try {
			body = JSON.parse(Buffer.concat(chunks).toString());
		} catch (e) {
			return reply(400, 'bad JSON');
		}
		if (body === null || typeof body !== 'object' || Array.isArray(body)) return reply(400, 'bad JSON');
		// The agent makes at most one request at a time (per agent ID;
		// v<2.0 up/downscale bodies carry none and count for the current).
		const who = requester(path, body);
		if (who) {
			if (inflightFrom.has(who))
				emit({ event: 'protocol-error', agentID: who, what: path,
					message: `concurrent requests from one agent: ${inflightFrom.get(who)} and ${path}` });
			inflightFrom.set(who, path);
			res.on('close', () => { if (inflightFrom.get(who) === path) inflightFrom.delete(who); });
		}
		const f = failures.get(path);
		if (f && f.count > 0) {
			f.count--;
			emit({ event: 'injected-failure', path, status: f.status });
			return reply(f.status, `injected failure ${f.status}`);
		}
		try {
			const out = await ep.fn(body);
			if (holds.has(path)) {
				// Keep the answer back until {"cmd":"release"}.
				holds.delete(path);
				held.push(() => reply(200, JSON.stringify(out), 'application/json'));
				emit({ event: 'held', path });
				return;
			}
			reply(200, JSON.stringify(out), 'application/json');
		} catch (e) {
			const status = e instanceof HttpError ? e.status : 500;
			emit({ event: 'rejected', path, status, message: e.message });
			reply(status, e.message);
		}
	});
});

async function checkAll() {
	for (const agent of [...agents]) {
		const r = await callAgent(agent.addr, 'GET', '/id', {}, ID_TIMEOUT_MS);
		const bad = checkIdMessage(agent, r, '/id');
		emit({ event: 'id-check', agentID: agent.id, phase: 'periodic', status: r.status, error: bad,
			seq: r.json && field(r.json, 'sequenceNumber') });
		if (bad) {
			agent.healthy = false;
			removeAgent(agent);
		}
	}
	await elect();
	emit({ event: 'checked', agents: agents.length });
}

const commands = {
	set(c) {
		if (typeof c.approve === 'boolean') downscaleApprove = c.approve;
		if (typeof c.status === 'string') downscaleStatus = c.status;
		if (typeof c.resumeEarly === 'boolean') resumeEarly = c.resumeEarly;
		emit({ event: 'ack', cmd: 'set' });
	},
	fail(c) {
		failures.set(c.path, { status: c.status, count: c.count || 1 });
		emit({ event: 'ack', cmd: 'fail' });
	},
	async 'try-upscale'(c) {
		const agent = current;
		if (!agent) return emit({ event: 'try-upscale', error: 'no current agent' });
		const r = await callAgent(agent.addr, 'POST', '/try-upscale',
			{ cpu: !!c.cpu, memory: !!c.memory, expectedID: agent.id }, TRY_UPSCALE_TIMEOUT_MS);
		const bad = checkIdMessage(agent, r, '/try-upscale');
		emit({ event: 'try-upscale', agentID: agent.id, status: r.status, error: bad,
			seq: r.json && field(r.json, 'sequenceNumber') });
	},
	hold(c) {
		holds.add(c.path);
		emit({ event: 'ack', cmd: 'hold' });
	},
	release() {
		while (held.length) held.shift()();
		emit({ event: 'ack', cmd: 'release' });
	},
	check() { return checkAll(); },
	async suspend() {
		const agent = current;
		if (!agent) return emit({ event: 'suspend', error: 'no current agent' });
		current = null;
		await suspend(agent);
	},
	resume() { return elect(); },
	async request(c) {
		const agent = current || agents[agents.length - 1];
		if (!agent) return emit({ event: 'response', tag: c.tag, error: 'no agent' });
		const r = await callAgent(agent.addr, c.method, c.path, c.body === undefined ? '{}' : c.body, 2000 * tf);
		emit({ event: 'response', tag: c.tag, status: r.status, body: r.body, error: r.error });
	},
	state() {
		emit({ event: 'state', current: current && current.id,
			agents: agents.map((a) => ({ id: a.id, version: a.version, state: a.state, seqs: a.seqs })) });
	},
	quit() {
		server.close();
		process.exit(0);
	},
};

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
	let c;
	try { c = JSON.parse(line); } catch (e) { return emit({ event: 'bad-command', line }); }
	const fn = commands[c.cmd];
	if (!fn) return emit({ event: 'bad-command', line });
	await fn(c);
}).on('close', () => process.exit(0));

server.listen(opts.port, opts.host, () => {
	emit({ event: 'listening', port: server.address().port });
	if (opts.checkMs > 0) setInterval(() => { checkAll(); }, opts.checkMs).unref();
});
