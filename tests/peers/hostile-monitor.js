#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A hostile vm-monitor for vmact's tests (doc/protocols.md, "Monitor side"),
// on raw `net` sockets so that it can break the websocket framing on
// purpose. Each connection vmactd makes gets the next mode of --modes; once
// they are used up it behaves (upgrade, version, health checks answered),
// which shows that vmactd came back after the attacks.
//
// Usage: hostile-monitor.js --unix PATH --modes MODE,MODE,...
// Modes (each after a correct HTTP upgrade and version answer):
//   ping-flood   never reads again, sends pings (125-byte payloads) as fast
//                as the socket takes them: every one asks for a pong
//   text-flood   never reads again, sends messages of an unknown type: every
//                one asks for an InvalidMessage answer
//   bad-opcode   a frame with a reserved opcode (3)
//   huge-length  a text frame header announcing 2^62 bytes
//   unfinished   a text frame header announcing 4096 bytes, 10 of them, and
//                nothing more; what vmactd sends is read and ignored
// Each flood stops after --flood-mib MiB (default 256): a client that never
// drops it shows as memory growth, not as a test that runs forever.
//
// Output: one JSON object per line on stdout: listening, conn (n, mode),
// version, flooded (n, bytes sent until the end), closed (n, why), health.
'use strict';

const net = require('net');
const fs = require('fs');
const crypto = require('crypto');

const opts = { unix: null, modes: [], floodMiB: 256 };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i], v = process.argv[++i];
  if (a === '--unix') opts.unix = v;
  else if (a === '--modes') opts.modes = v.split(',').filter(Boolean);
  else if (a === '--flood-mib') opts.floodMiB = Number(v);
  else throw new Error(`unknown argument ${a}`);
}

function emit(o) { process.stdout.write(JSON.stringify(o) + '\n'); }

// A server frame: FIN set, unmasked.
function frame(opcode, payload) {
  const p = Buffer.from(payload);
  let head;
  if (p.length < 126) head = Buffer.from([0x80 | opcode, p.length]);
  else if (p.length < 65536) { head = Buffer.from([0x80 | opcode, 126, 0, 0]); head.writeUInt16BE(p.length, 2); }
  else { head = Buffer.alloc(10); head[0] = 0x80 | opcode; head[1] = 127; head.writeBigUInt64BE(BigInt(p.length), 2); }
  return Buffer.concat([head, p]);
}

// Client frames are masked; returns [frames, rest].
function parseFrames(buf) {
  const out = [];
  for (;;) {
    if (buf.length < 2) break;
    let len = buf[1] & 0x7f, off = 2;
    if (len === 126) { if (buf.length < 4) break; len = buf.readUInt16BE(2); off = 4; }
    else if (len === 127) { if (buf.length < 10) break; len = Number(buf.readBigUInt64BE(2)); off = 10; }
    const masked = (buf[1] & 0x80) !== 0;
    const mask = masked ? buf.subarray(off, off + 4) : null;
    if (masked) off += 4;
    if (buf.length < off + len) break;
    const data = Buffer.from(buf.subarray(off, off + len));
    if (masked) for (let i = 0; i < data.length; i++) data[i] ^= mask[i & 3];
    out.push({ opcode: buf[0] & 0x0f, data });
    buf = buf.subarray(off + len);
  }
  return [out, buf];
}

let seq = 0;

function flood(sock, n, make) {
  const limit = opts.floodMiB * 1024 * 1024;
  let sent = 0, id = 1, ended = false;
  const end = (why) => {
    if (ended) return;
    ended = true;
    emit({ event: 'flooded', n, bytes: sent, why });
  };
  sock.pause(); // never read again: our receive window fills
  sock.on('error', (e) => end(e.code || e.message));
  sock.on('close', () => end('closed'));
  const more = () => {
    while (!ended && sent < limit) {
      const f = make(id += 2);
      sent += f.length;
      if (!sock.write(f)) return sock.once('drain', more);
    }
    end(ended ? 'closed' : 'limit');
  };
  more();
}

function attack(sock, n, mode) {
  switch (mode) {
    case 'ping-flood':
      return flood(sock, n, () => frame(0x9, Buffer.alloc(125, 0x70)));
    case 'text-flood':
      return flood(sock, n, (id) => frame(0x1, JSON.stringify({ type: 'Mystery', id })));
    case 'bad-opcode':
      return sock.write(Buffer.from([0x83, 0x02, 0x7b, 0x7d]));
    case 'huge-length':
      return sock.write(Buffer.from([0x81, 0x7f, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x7b]));
    case 'unfinished':
      return sock.write(Buffer.concat([Buffer.from([0x81, 0x7e, 0x10, 0x00]), Buffer.alloc(10, 0x20)]));
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

function onConnection(sock) {
  const n = ++seq;
  const mode = opts.modes[n - 1] || 'good';
  let buf = Buffer.alloc(0), upgraded = false, negotiated = false, attacking = false;
  emit({ event: 'conn', n, mode });
  sock.on('close', () => emit({ event: 'closed', n, mode }));
  sock.on('error', () => {});
  sock.on('data', (d) => {
    if (attacking) return; // 'unfinished': read and ignore
    buf = Buffer.concat([buf, d]);
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      buf = buf.subarray(end + 4);
      const key = /sec-websocket-key:\s*(\S+)/i.exec(head);
      if (!key) return sock.destroy();
      const accept = crypto.createHash('sha1')
        .update(key[1] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
      sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n' +
                 `Connection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      upgraded = true;
    }
    let frames;
    [frames, buf] = parseFrames(buf);
    for (const f of frames) {
      if (f.opcode === 0x8) { sock.end(frame(0x8, f.data.subarray(0, 2))); return; }
      if (f.opcode !== 0x1) continue;
      const m = JSON.parse(f.data.toString());
      if (!negotiated) {
        negotiated = true;
        emit({ event: 'version', n, range: m });
        sock.write(frame(0x1, JSON.stringify({ version: 1 })));
        if (mode !== 'good') {
          attacking = true;
          attack(sock, n, mode);
          return;
        }
      } else if (m.type === 'HealthCheck') {
        emit({ event: 'health', n });
        sock.write(frame(0x1, JSON.stringify({ type: 'HealthCheck', id: m.id })));
      } else if (m.type === 'DownscaleRequest') {
        sock.write(frame(0x1, JSON.stringify({ type: 'DownscaleResult', Ok: true,
                                               Status: 'approved', id: m.id })));
      } else if (m.type === 'UpscaleNotification') {
        sock.write(frame(0x1, JSON.stringify({ type: 'UpscaleConfirmation', id: m.id })));
      }
    }
  });
}

const server = net.createServer(onConnection);
try { fs.unlinkSync(opts.unix); } catch (e) { /* not there */ }
server.listen(opts.unix, () => emit({ event: 'listening', path: opts.unix }));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
