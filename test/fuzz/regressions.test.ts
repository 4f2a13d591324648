import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, createOrganization } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, pushState, stateFixture } from '../helpers/state.js';

/** Targeted tests for the defects the route property test (routes.property.test.ts) found. */
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'network', 'aws', '1.0.0');
});
afterAll(async () => {
  await t.close();
});

async function archiveUrl(): Promise<string> {
  const r = await t.api('GET', '/v1/modules/acme/network/aws/1.0.0/download');
  expect(r.status).toBe(204);
  return new URL(r.headers.get('x-terraform-get')!, t.url).toString();
}

describe('an unsatisfiable Range on a signed download', () => {
  it('is a 416 with a JSON:API error saying what to ask for, and the Content-Range of the file', async () => {
    const url = await archiveUrl();
    const size = Number((await fetch(url, { method: 'HEAD' })).headers.get('content-length'));
    for (const range of [`bytes=${size}-`, 'bytes=5-1', 'bytes=-0']) {
      const r = await fetch(url, { headers: { Range: range } });
      expect(r.status, range).toBe(416);
      expect(r.headers.get('content-type'), range).toBe('application/vnd.api+json');
      expect(r.headers.get('content-range'), range).toBe(`bytes */${size}`);
      expect(await r.json(), range).toEqual({
        errors: [
          {
            status: '416',
            title: 'range not satisfiable',
            detail: `the requested range lies outside the file's ${size} bytes: ask for bytes within 0-${size - 1}, or omit the Range header`,
          },
        ],
      });
    }
    const head = await fetch(url, { method: 'HEAD', headers: { Range: `bytes=${size}-` } });
    expect(head.status).toBe(416);
    expect(head.headers.get('content-type')).toBe('application/vnd.api+json');
    expect(head.headers.get('content-range')).toBe(`bytes */${size}`);
  });

  it('still serves a satisfiable range with 206', async () => {
    const r = await fetch(await archiveUrl(), { headers: { Range: 'bytes=0-1' } });
    expect(r.status).toBe(206);
    expect(Buffer.from(await r.arrayBuffer())).toEqual(Buffer.from([0x1f, 0x8b]));
  });
});

describe('a state file download', () => {
  it('ignores Range and serves the whole file', async () => {
    const ws = await createWorkspace(t, 'acme', 'web');
    await lock(t, ws.id);
    const state = stateFixture('outputs-serial1.json');
    const sv = await pushState(t, ws.id, state);
    expect(sv.status).toBe(201);
    const r = await fetch(sv.json.data.attributes['hosted-state-download-url'], { headers: { Range: 'bytes=999999-' } });
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer())).toEqual(state);
  });
});
