import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createOrg } from '../helpers/organizations.js';
import { createModule, createVersion, moduleTarball } from '../helpers/registry.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

let t: TestServer;
let port: number;

beforeAll(async () => {
  t = await startTestServer({
    TERRACE_JOBS: 'false',
    TERRACE_BODY_IDLE_TIMEOUT_MS: '1000',
    TERRACE_REQUEST_TIMEOUT_MS: '2000',
    TERRACE_HEADERS_TIMEOUT_MS: '1000',
    TERRACE_KEEP_ALIVE_TIMEOUT_MS: '60000',
    TERRACE_MAX_CONNECTIONS: '3',
  });
  port = Number(new URL(t.url).port);
  await createOrg(t, 'acme');
});

afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits (without a deadline of its own: the test's timeout bounds it) until cond holds. */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(10);
}

/** A raw connection that records what the server sent and whether it closed. */
function connect(to = port): Promise<{ socket: net.Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(to, '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('error', () => {});
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

const headers = (method: string, path: string, length: number, extra = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/vnd.api+json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

const orgBody = (name: string) => JSON.stringify({ data: { type: 'organizations', attributes: { name, email: `${name}@example.com` } } });
const orgExists = async (name: string) => (await t.api('GET', `/api/v2/organizations/${name}`)).status === 200;

describe('timeouts', () => {
  it('closes a request whose body stops arriving for longer than the body idle timeout, and creates nothing', async () => {
    const c = await connect();
    const body = orgBody('trickled');
    c.socket.write(headers('POST', '/api/v2/organizations', body.length) + body.slice(0, 10));
    // One more byte after half the bound keeps it alive; then nothing.
    await sleep(500);
    c.socket.write(body.slice(10, 11));
    await c.closed;
    expect(c.received()).toBe('');
    expect(await orgExists('trickled')).toBe(false);
  });

  it('closes a JSON request that keeps trickling past the whole-request timeout', async () => {
    const c = await connect();
    const body = orgBody('dribbled');
    c.socket.write(headers('POST', '/api/v2/organizations', body.length));
    let i = 0;
    const timer = setInterval(() => {
      if (i < body.length - 1 && !c.socket.destroyed) c.socket.write(body[i++]!);
    }, 200);
    await c.closed;
    clearInterval(timer);
    expect(i).toBeLessThan(body.length - 1);
    expect(c.received()).toBe('');
    expect(await orgExists('dribbled')).toBe(false);
  });

  it('does not cut a slow but steady upload that takes longer than both timeouts', async () => {
    await createModule(t, 'acme', 'steady', 'aws');
    const v = await createVersion(t, 'acme', 'steady', 'aws', '1.0.0');
    const tarball = await moduleTarball({ 'main.tf': `variable "x" {}\n# ${'p'.repeat(4000)}\n` });
    const path = new URL(v.links.upload).pathname;
    const c = await connect();
    c.socket.write(`PUT ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${tarball.length}\r\nConnection: close\r\n\r\n`);
    // 12 slices 250 ms apart: about 3 s in all, each gap well inside the 1 s idle bound.
    const slices = 12;
    const step = Math.ceil(tarball.length / slices);
    for (let off = 0; off < tarball.length; off += step) {
      c.socket.write(tarball.subarray(off, off + step));
      await sleep(250);
    }
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect((await t.api('GET', `/api/v2/organizations/acme/registry-modules/private/acme/steady/aws/version?module_version=1.0.0`)).json.data.attributes.status).toBe('ok');
  });

  it('answers 408 and closes a connection whose headers do not arrive in time', async () => {
    const c = await connect();
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe('connection cap', () => {
  it('closes connections beyond TERRACE_MAX_CONNECTIONS and keeps serving the ones it holds', async () => {
    const capped = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_MAX_CONNECTIONS: '2' });
    const cport = Number(new URL(capped.url).port);
    try {
      const held = [await connect(cport), await connect(cport)];
      // Each held connection is served: the cap is about open connections, not requests.
      for (const c of held) {
        c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
        await until(() => c.received().includes('\r\n\r\n'));
        expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
      }
      const extra = await connect(cport);
      extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await extra.closed;
      expect(extra.received()).toBe('');
      // The held ones still answer.
      held[0]!.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await until(() => held[0]!.received().split('HTTP/1.1 200').length === 3);
      for (const c of held) c.socket.destroy();
      await Promise.all(held.map((c) => c.closed));
      // Freed: a new connection is served again.
      // (the server learns of the closes a moment later: a refused attempt is tried again).
      let answer = '';
      while (!answer) {
        const again = await connect(cport);
        again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        await again.closed;
        answer = again.received();
      }
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await capped.close();
    }
  });
});

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.runIf(hasOpenssl)('the same limits over HTTPS', () => {
  it('times out slow headers and caps connections on the TLS listener too', async () => {
    const dir = tempDir('terrace-tls-limits-');
    const certFile = path.join(dir, 'cert.pem');
    const keyFile = path.join(dir, 'key.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=registry.terrace.test', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
    ], { stdio: 'ignore' });
    const s = await startTestServer({ TERRACE_TLS_CERT: certFile, TERRACE_TLS_KEY: keyFile, TERRACE_HEADERS_TIMEOUT_MS: '500', TERRACE_MAX_CONNECTIONS: '1' });
    const tport = Number(new URL(s.url).port);
    const open = () =>
      new Promise<{ socket: tls.TLSSocket; received: () => string; closed: Promise<void> }>((resolve) => {
        let data = '';
        const socket = tls.connect({ port: tport, host: '127.0.0.1', ca: fs.readFileSync(certFile) });
        socket.on('data', (d) => (data += d.toString('latin1')));
        socket.on('error', () => {});
        const closed = new Promise<void>((r) => socket.once('close', () => r()));
        socket.once('secureConnect', () => resolve({ socket, received: () => data, closed }));
        // A connection closed before its handshake resolves too (the cap at work).
        socket.once('close', () => resolve({ socket, received: () => data, closed }));
      });
    try {
      const slow = await open();
      slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      // While it is held, a second connection is over the cap.
      const extra = await open();
      await extra.closed;
      expect(extra.received()).toBe('');
      await slow.closed;
      expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await s.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('configuration', () => {
  it('validates the listener settings like every other', () => {
    expect(() => loadConfig({ TERRACE_MAX_CONNECTIONS: '0' })).toThrow('TERRACE_MAX_CONNECTIONS: must be between 1 and 1000000, got 0');
    expect(() => loadConfig({ TERRACE_BODY_IDLE_TIMEOUT_MS: 'soon' })).toThrow('TERRACE_BODY_IDLE_TIMEOUT_MS: must be a whole number');
    expect(loadConfig({}).http).toEqual({ headersTimeoutMs: 30_000, bodyIdleTimeoutMs: 30_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 5_000, maxConnections: 1_000 });
  });
});
