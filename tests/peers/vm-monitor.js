#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A stand-in for Neon's vm-monitor (doc/protocols.md, "Monitor side"), written
// independently of vmact's C code on the `ws` package, for vmact's tests.
//
// Usage: vm-monitor.js [--port N | --unix PATH] [options]
//   --port N              listen on 127.0.0.1:N (0 = any free port; default 0)
//   --unix PATH           listen on a unix stream socket instead
//   --min-version N       protocol versions this monitor speaks (default 1..1)
//   --max-version N
//   --usage-mib N         simulated non-reclaimable memory (default 256)
//   --threshold-mib N     memory threshold for UpscaleRequest (default: none
//                         until an UpscaleNotification sets it)
//   --no-cgroup           approve every downscale ("not managing cgroup")
//   --setup-timeout-ms N  deadline for the version range (default 4000)
//   --eager-ping          ping right behind the 101 response, so that the
//                         client reads a frame together with the headers
//   --random-deny P       deny each downscale with probability P (0..1), at
//                         random from --seed, before the answer it would give
//   --seed N              the random generator's seed (default 1), for a
//                         reproducible sequence of answers
//   --close-after-downscale CODE
//                         close the first connection with CODE right behind
//                         its first DownscaleResult (the approval and the
//                         close frame leave back to back)
//
// Output: one JSON object per line on stdout ("event" names what happened).
// Control: one command per line on stdin; each is acknowledged with
// {"event":"ack","cmd":...} once applied:
//   usage MIB | threshold MIB | pressure | health on|off | silent on|off
//   delay MS | internal-error on|off | bad-result on|off | raw TEXT
//   garbage | binary | cut | rsv-mute | unknown-type | drop | close CODE | quit
'use strict';

const http = require('http');
const fs = require('fs');
const readline = require('readline');
const { WebSocketServer } = require('ws');

const MiB = 1024 * 1024;
const DOWNSCALE_BUFFER = 100 * MiB;
const THRESHOLD_FRACTION = 0.85; // 1 - 0.15

function parseArgs(argv) {
  const o = { port: 0, unix: null, minVersion: 1, maxVersion: 1, usageMiB: 256,
              thresholdMiB: null, noCgroup: false, setupTimeoutMs: 4000, eagerPing: false,
              randomDeny: 0, seed: 1, closeAfterDownscale: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--port': o.port = Number(next()); break;
      case '--unix': o.unix = next(); break;
      case '--min-version': o.minVersion = Number(next()); break;
      case '--max-version': o.maxVersion = Number(next()); break;
      case '--usage-mib': o.usageMiB = Number(next()); break;
      case '--threshold-mib': o.thresholdMiB = Number(next()); break;
      case '--no-cgroup': o.noCgroup = true; break;
      case '--setup-timeout-ms': o.setupTimeoutMs = Number(next()); break;
      case '--eager-ping': o.eagerPing = true; break;
      case '--random-deny': o.randomDeny = Number(next()); break;
      case '--seed': o.seed = Number(next()) >>> 0; break;
      case '--close-after-downscale': o.closeAfterDownscale = Number(next()); break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const state = {
  usage: opts.usageMiB * MiB,
  threshold: opts.thresholdMiB === null ? null : opts.thresholdMiB * MiB,
  health: true, silent: false, delayMs: 0, internalError: false, badResult: false,
};

// A small seeded generator (mulberry32): the same seed gives the same
// sequence of random answers, so a soak run can be repeated.
let rngState = opts.seed >>> 0;
function random() {
  rngState = (rngState + 0x6d2b79f5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function versionName(v) {
  return v === 1 ? 'v1.0' : `<unknown: ${v}>`;
}

// Strict decoding as serde does it for InboundMsg: the type tag selects the
// content shape; anything else is an error (and the monitor drops the
// connection rather than answering InvalidMessage).
function isU64Literal(raw, key) {
  // JSON.parse turns 1073741824.0 into an integer; serde's u64 refuses it.
  const re = new RegExp(`"${key}"\\s*:\\s*-?[0-9]+(\\.|[eE])`);
  return !re.test(raw);
}

function decodeAllocation(v, raw) {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('allocation: not an object');
  if (typeof v.cpu !== 'number') throw new Error('allocation.cpu: expected f64');
  if (!Number.isInteger(v.mem) || v.mem < 0 || !isU64Literal(raw, 'mem'))
    throw new Error('allocation.mem: expected u64');
  return { cpu: v.cpu, mem: v.mem };
}

function decodeInbound(raw) {
  const m = JSON.parse(raw);
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new Error('expected an object');
  if (!Number.isInteger(m.id) || m.id < 0 || !isU64Literal(raw, 'id')) throw new Error('id: expected usize');
  if (typeof m.type !== 'string') throw new Error('missing field `type`');
  if (!('content' in m)) throw new Error('missing field `content`');
  const c = m.content;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) throw new Error('content: expected a map');
  switch (m.type) {
    case 'DownscaleRequest':
      if (!('target' in c)) throw new Error('missing field `target`');
      return { type: m.type, id: m.id, target: decodeAllocation(c.target, raw) };
    case 'UpscaleNotification':
      if (!('granted' in c)) throw new Error('missing field `granted`');
      return { type: m.type, id: m.id, granted: decodeAllocation(c.granted, raw) };
    case 'HealthCheck':
      return { type: m.type, id: m.id };
    case 'InvalidMessage':
    case 'InternalError':
      if (typeof c.error !== 'string') throw new Error('error: expected a string');
      return { type: m.type, id: m.id, error: c.error };
    default:
      throw new Error(`unknown variant \`${m.type}\``);
  }
}

let connSeq = 0;
let current = null;

class Conn {
  constructor(ws) {
    this.ws = ws;
    this.n = ++connSeq;
    this.negotiated = false;
    this.nextId = 1; // += 2 before each send: first is 3
    this.lastUpscaleRequest = 0;
    this.closed = false;
    this.setupTimer = setTimeout(() => {
      this.drop('creating monitor timed out (probably waiting to receive protocol range)');
    }, opts.setupTimeoutMs);
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('close', (code, reason) => {
      this.closed = true;
      clearTimeout(this.setupTimer);
      emit({ event: 'closed', n: this.n, code, reason: reason.toString() });
      if (current === this) current = null;
    });
    ws.on('error', (err) => emit({ event: 'socket-error', n: this.n, error: String(err.message) }));
  }

  send(obj) {
    if (this.closed) return;
    const text = JSON.stringify(obj);
    emit({ event: 'sent', n: this.n, msg: obj });
    this.ws.send(text);
  }

  reply(obj) {
    if (state.silent) return;
    if (state.delayMs > 0) setTimeout(() => this.send(obj), state.delayMs);
    else this.send(obj);
  }

  // The Rust runner returns an error and the socket is dropped: no reply,
  // no close frame.
  drop(reason) {
    if (this.closed) return;
    emit({ event: 'dropped', n: this.n, reason });
    clearTimeout(this.setupTimer);
    this.ws.terminate();
  }

  upscaleRequest() {
    this.nextId += 2;
    this.lastUpscaleRequest = Date.now();
    this.send({ type: 'UpscaleRequest', id: this.nextId });
  }

  onMessage(data, isBinary) {
    const raw = data.toString();
    if (!this.negotiated) {
      if (state.silent) return emit({ event: 'ignored', n: this.n, text: raw });
      if (isBinary) return this.drop('first message was not text');
      let range;
      try {
        range = JSON.parse(raw);
        if (!Number.isInteger(range.min) || !Number.isInteger(range.max))
          throw new Error('expected {"min":u8,"max":u8}');
        if (range.min > range.max) throw new Error('min > max');
      } catch (e) {
        return this.drop(`bad version range: ${e.message}`);
      }
      emit({ event: 'version', n: this.n, range });
      clearTimeout(this.setupTimer);
      if (range.max < opts.minVersion || range.min > opts.maxVersion) {
        const ours = opts.minVersion === opts.maxVersion ? versionName(opts.maxVersion)
          : `${versionName(opts.minVersion)} to ${versionName(opts.maxVersion)}`;
        this.send({ error: `Received protocol version range ${versionName(range.min)} to ` +
                           `${versionName(range.max)} which does not overlap with ${ours}` });
        // The monitor bails after answering.
        setTimeout(() => this.drop('version ranges do not overlap'), 50);
        return;
      }
      this.negotiated = true;
      this.send({ version: Math.min(range.max, opts.maxVersion) });
      return;
    }
    if (isBinary) {
      emit({ event: 'ignored-binary', n: this.n });
      return;
    }
    let m;
    try {
      m = decodeInbound(raw);
    } catch (e) {
      return this.drop(`failed to deserialize ${JSON.stringify(raw).slice(0, 200)}: ${e.message}`);
    }
    emit({ event: 'recv', n: this.n, msg: m });
    switch (m.type) {
      case 'HealthCheck':
        if (state.health) this.reply({ type: 'HealthCheck', id: m.id });
        break;
      case 'UpscaleNotification':
        if (state.internalError) return this.reply({ type: 'InternalError', error: 'failed to upscale', id: m.id });
        state.threshold = Math.max(0, m.granted.mem - DOWNSCALE_BUFFER) * THRESHOLD_FRACTION;
        this.reply({ type: 'UpscaleConfirmation', id: m.id });
        break;
      case 'DownscaleRequest':
        this.downscale(m);
        if (opts.closeAfterDownscale !== null) {
          const code = opts.closeAfterDownscale;
          opts.closeAfterDownscale = null;
          emit({ event: 'closing-after-downscale', n: this.n, code });
          this.ws.close(code, 'closed after the downscale answer');
        }
        break;
      default:
        // InvalidMessage / InternalError from the agent: logged only.
        break;
    }
  }

  downscale(m) {
    if (state.internalError) return this.reply({ type: 'InternalError', error: 'failed to downscale', id: m.id });
    if (state.badResult) return this.reply({ type: 'DownscaleResult', Ok: 'yes', Status: 7, id: m.id });
    if (opts.randomDeny > 0 && random() < opts.randomDeny) {
      emit({ event: 'random-deny', n: this.n, id: m.id });
      return this.reply({ type: 'DownscaleResult', Ok: false, Status: 'denied at random (--random-deny)', id: m.id });
    }
    if (opts.noCgroup)
      return this.reply({ type: 'DownscaleResult', Ok: true, Status: 'monitor is not managing cgroup or file cache', id: m.id });
    const usable = Math.max(0, m.target.mem - DOWNSCALE_BUFFER);
    const newThreshold = usable * THRESHOLD_FRACTION;
    if (newThreshold < state.usage + DOWNSCALE_BUFFER) {
      const status = `calculated memory threshold too low: ${(newThreshold / MiB).toFixed(1)} MiB ` +
                     `(new threshold) < ${(state.usage / MiB).toFixed(0)} (current usage) + 100 (downscale buffer)`;
      return this.reply({ type: 'DownscaleResult', Ok: false, Status: status, id: m.id });
    }
    state.threshold = newThreshold;
    this.reply({ type: 'DownscaleResult', Ok: true,
                 Status: `set cgroup memory threshold to ${(newThreshold / MiB).toFixed(1)} MiB`, id: m.id });
  }
}

// Memory pressure: while usage is at or above the threshold, ask for more
// at most once per second (the monitor checks a 500 ms average).
setInterval(() => {
  if (!current || !current.negotiated || state.threshold === null) return;
  if (state.usage >= state.threshold && Date.now() - current.lastUpscaleRequest >= 1000)
    current.upscaleRequest();
}, 100).unref();

const server = http.createServer((req, res) => {
  res.writeHead(404);
  res.end('not found\n');
});
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
server.on('upgrade', (req, socket, head) => {
  if (new URL(req.url, 'http://x').pathname !== '/monitor') {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  // Corked, the 101 response and the early ping leave in one write.
  if (opts.eagerPing) socket.cork();
  wss.handleUpgrade(req, socket, head, (ws) => {
    // One connection at a time: a new one kills its predecessor.
    if (current) current.drop('killed by a new connection');
    current = new Conn(ws);
    if (opts.eagerPing) {
      ws.ping('early');
      process.nextTick(() => socket.uncork());
    }
    ws.on('pong', () => emit({ event: 'pong', n: current ? current.n : 0 }));
    emit({ event: 'connection', n: current.n });
  });
});

function listening() {
  const a = server.address();
  emit(typeof a === 'string' ? { event: 'listening', path: a } : { event: 'listening', port: a.port });
}
if (opts.unix) {
  try { fs.unlinkSync(opts.unix); } catch (e) { /* absent */ }
  server.listen(opts.unix, listening);
} else {
  server.listen(opts.port, '127.0.0.1', listening);
}

function withConn(fn) {
  if (current && !current.closed) fn(current);
}

const commands = {
  usage: (a) => { state.usage = Number(a) * MiB; },
  threshold: (a) => { state.threshold = Number(a) * MiB; },
  pressure: () => withConn((c) => c.upscaleRequest()),
  health: (a) => { state.health = a === 'on'; },
  silent: (a) => { state.silent = a === 'on'; },
  delay: (a) => { state.delayMs = Number(a); },
  'internal-error': (a) => { state.internalError = a === 'on'; },
  'bad-result': (a) => { state.badResult = a === 'on'; },
  raw: (a) => withConn((c) => { emit({ event: 'sent-raw', n: c.n, text: a }); c.ws.send(a); }),
  garbage: () => withConn((c) => c.ws.send('}{ this is not json')),
  binary: () => withConn((c) => c.ws.send(Buffer.from([1, 2, 3]), { binary: true })),
  // A text frame header promising 100 bytes, 5 of them, then the socket dies.
  cut: () => withConn((c) => {
    const s = c.ws._socket;
    s.write(Buffer.concat([Buffer.from([0x81, 100]), Buffer.from('{"typ')]), () => s.destroy());
  }),
  // A text frame with RSV1 set (no extension was negotiated), after which
  // the peer stops reading: the client must give up on its own.
  'rsv-mute': () => withConn((c) => {
    const s = c.ws._socket;
    s.write(Buffer.concat([Buffer.from([0xc1, 2]), Buffer.from('{}')]));
    s.pause();
    s.removeAllListeners('data');
  }),
  'unknown-type': () => withConn((c) => { c.nextId += 2; c.send({ type: 'Mystery', id: c.nextId }); }),
  drop: () => withConn((c) => c.drop('dropped on request')),
  close: (a) => withConn((c) => c.ws.close(Number(a), 'closed on request')),
  quit: () => { emit({ event: 'bye' }); process.exit(0); },
};

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const sp = line.indexOf(' ');
  const cmd = sp < 0 ? line.trim() : line.slice(0, sp);
  const arg = sp < 0 ? '' : line.slice(sp + 1);
  if (!cmd) return;
  const fn = commands[cmd];
  if (!fn) return emit({ event: 'error', error: `unknown command ${cmd}` });
  fn(arg);
  emit({ event: 'ack', cmd });
});
// The test owns us: when it goes away, so do we.
rl.on('close', () => process.exit(0));
