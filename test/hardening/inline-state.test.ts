import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg } from '../helpers/organizations.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, md5, stateSnapshot } from '../helpers/state.js';

let t: TestServer;
const MAX = 65536;
const LIMIT = MAX * 4 + 1024 * 1024;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: String(MAX) });
  await createOrg(t, 'acme');
});

afterAll(async () => {
  await t?.close();
});

let n = 0;
async function lockedWorkspace() {
  const ws = await createWorkspace(t, 'acme', `inline-${++n}`);
  await lock(t, ws.id);
  return ws.id;
}

function state(serial: number, padding: number): Buffer {
  return Buffer.from(JSON.stringify({ version: 4, terraform_version: '1.9.8', serial, lineage: 'inline', outputs: { pad: { value: 'p'.repeat(padding), type: 'string' } }, resources: [] }));
}

/** POSTs body in pieces with chunked transfer encoding (no Content-Length). */
function postChunked(path: string, pieces: string[]): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${t.url}${path}`, {
      method: 'POST',
      agent: false,
      headers: { Authorization: `Bearer ${t.adminToken}`, 'Content-Type': 'application/vnd.api+json', 'Transfer-Encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let d = '';
      res.on('data', (x) => (d += x));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: d ? JSON.parse(d) : undefined }));
    });
    req.on('error', (err) => ((err as { code?: string }).code === 'ECONNRESET' || (err as { code?: string }).code === 'EPIPE' ? undefined : reject(err)));
    for (const p of pieces) req.write(p);
    req.end();
  });
}

describe('the inline state-version create', () => {
  it('answers 413 to a Content-Length over the limit before any of the body is sent', async () => {
    const wsId = await lockedWorkspace();
    const before = await stateSnapshot(t);
    const socket = net.connect(Number(new URL(t.url).port), '127.0.0.1');
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (d) => (received += d.toString('latin1')));
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /api/v2/workspaces/${wsId}/state-versions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/vnd.api+json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`,
    );
    while (!received.includes('\r\n\r\n{')) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    const body = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n/, '').split('\r\n')[0]!);
    expect(body.errors[0]).toMatchObject({ status: '413', title: 'payload too large' });
    expect(body.errors[0].detail).toContain(`exceeds the limit of ${LIMIT} bytes`);
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('streams a chunked body without a Content-Length: accepted whole, the document decoded into the store', async () => {
    const wsId = await lockedWorkspace();
    const s = state(1, 40_000);
    const b64 = s.toString('base64');
    // The base64 split at awkward places (not multiples of 4), with the JSON around it.
    const head = `{"data":{"type":"state-versions","attributes":{"serial":1,"md5":"${md5(s)}","lineage":"inline","state":"`;
    const pieces = [head, b64.slice(0, 4097), b64.slice(4097, 20_001), b64.slice(20_001), '"}}}'];
    const r = await postChunked(`/api/v2/workspaces/${wsId}/state-versions`, pieces);
    expect(r.status).toBe(201);
    expect(r.json.data.attributes).toMatchObject({ serial: 1, size: s.length, status: 'finalized' });
    const file = await fetch(r.json.data.attributes['hosted-state-download-url']);
    expect(Buffer.from(await file.arrayBuffer()).equals(s)).toBe(true);
    await t.running.jobs.runDue();
    const outs = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`);
    expect(outs.json.data[0].attributes.value).toBe('p'.repeat(40_000));
  });

  it('reads the body as it arrives: a refusal early in the body is answered before the rest is sent', async () => {
    const wsId = await lockedWorkspace();
    const before = await stateSnapshot(t);
    const answer = await new Promise<{ status: number; json: any }>((resolve, reject) => {
      const req = http.request(`${t.url}/api/v2/workspaces/${wsId}/state-versions`, {
        method: 'POST',
        agent: false,
        headers: { Authorization: `Bearer ${t.adminToken}`, 'Content-Type': 'application/vnd.api+json', 'Transfer-Encoding': 'chunked' },
      });
      req.on('response', (res) => {
        let d = '';
        res.on('data', (x) => (d += x));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(d) });
          req.destroy();
        });
      });
      req.on('error', () => undefined);
      // The start of a body whose state is not base64; the rest never comes.
      req.write(`{"data":{"type":"state-versions","attributes":{"serial":1,"md5":"${'0'.repeat(32)}","state":"%%%%`);
    });
    expect(answer.status).toBe(422);
    expect(answer.json.errors[0]).toMatchObject({ detail: 'state must be base64 (standard alphabet, padded)', source: { pointer: '/data/attributes/state' } });
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('refuses a chunked body that grows past the limit with 413, storing nothing', async () => {
    const wsId = await lockedWorkspace();
    const before = await stateSnapshot(t);
    const filler = 'A'.repeat(64 * 1024);
    const pieces = ['{"data":{"type":"state-versions","attributes":{"serial":1,"md5":"00000000000000000000000000000000","json-state":"'];
    for (let i = 0; i * filler.length < LIMIT + filler.length; i++) pieces.push(filler);
    pieces.push('"}}}');
    const r = await postChunked(`/api/v2/workspaces/${wsId}/state-versions`, pieces);
    expect(r.status).toBe(413);
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('refuses a decoded document over TERRACE_MAX_STATE_BYTES with 413 while it streams, storing nothing', async () => {
    const wsId = await lockedWorkspace();
    const before = await stateSnapshot(t);
    const big = state(1, MAX);
    const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
      body: { data: { type: 'state-versions', attributes: { serial: 1, md5: md5(big), lineage: 'inline', state: big.toString('base64') } } },
    });
    expect(r.status).toBe(413);
    expect(r.json.errors[0].detail).toBe(`state is over the limit of ${MAX} bytes decoded (TERRACE_MAX_STATE_BYTES)`);
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('keeps the JSON:API envelope rules of every other body', async () => {
    const wsId = await lockedWorkspace();
    const before = await stateSnapshot(t);
    const cases: [string, number, string][] = [
      ['', 422, 'a JSON request body is required'],
      ['   ', 422, 'a JSON request body is required'],
      ['{"data":', 400, 'the request body is not valid JSON'],
      ['[1]', 422, 'the request body must be a JSON object with a "data" member'],
      ['{"data":[]}', 422, '"data" must be an object'],
      ['{"data":{"type":"workspaces","attributes":{}}}', 422, 'data.type must be "state-versions", got "workspaces"'],
      ['{"data":{"type":"state-versions","attributes":[]}}', 422, '"data.attributes" must be an object'],
      [`{"data":{"type":"state-versions","attributes":{"serial":1,"md5":"${'0'.repeat(32)}","state":"${'A'.repeat(5)}"}}}`, 422, 'state must be base64 (standard alphabet, padded)'],
      [`{"data":{"type":"state-versions","attributes":{"serial":1,"md5":"${'0'.repeat(32)}","state":"AA=A"}}}`, 422, 'state must be base64 (standard alphabet, padded)'],
      [`{"data":{"type":"state-versions","attributes":{"serial":1,"md5":"${'0'.repeat(32)}","state":{"x":1}}}}`, 422, 'state: must be a base64 string'],
    ];
    for (const [raw, status, detail] of cases) {
      const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { rawBody: raw });
      expect(r.status, raw).toBe(status);
      expect(r.json.errors[0].detail, raw).toContain(detail);
    }
    const typed = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { rawBody: '{}', headers: { 'Content-Type': 'text/plain' } });
    expect(typed.status).toBe(415);
    expect(await stateSnapshot(t)).toEqual(before);
  });
});
