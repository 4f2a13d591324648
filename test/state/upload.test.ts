import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createOrg } from '../helpers/organizations.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, jsonStateOutputs, lock, md5, stateFixture, stateSnapshot } from '../helpers/state.js';

// go-tfe's Upload: create without "state", then PUT the raw state (and the JSON state) to the URLs.
let t: TestServer;
const S1 = stateFixture('outputs-serial1.json');
const S2 = stateFixture('outputs-serial2.json');

function createBody(state: Buffer, extra: Record<string, unknown> = {}) {
  const s = JSON.parse(state.toString('utf8'));
  return { data: { type: 'state-versions', attributes: { serial: s.serial, md5: md5(state), lineage: s.lineage, ...extra } } };
}

async function put(url: string, body: Buffer | string) {
  // doForeignPUTRequest: a plain PUT with application/octet-stream and no token.
  const res = await fetch(url, { method: 'PUT', body, headers: { 'Content-Type': 'application/octet-stream' } });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function workspace(name: string) {
  const ws = await createWorkspace(t, 'acme', name);
  await lock(t, ws.id);
  return ws.id;
}

async function createPending(wsId: string, state: Buffer, extra: Record<string, unknown> = {}) {
  const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { body: createBody(state, extra) });
  expect(r.status).toBe(201);
  return r.json.data;
}

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: '65536' });
  await createOrg(t, 'acme');
});

afterAll(async () => {
  await t?.close();
});

describe('the upload-URL variant', () => {
  it('creates a pending version with one-time upload URLs, takes the state by PUT, and processes it', async () => {
    const wsId = await workspace('uploaded');
    const outputs = Buffer.from(JSON.stringify(jsonStateOutputs(S1))).toString('base64');
    const d = await createPending(wsId, S1, { 'json-state-outputs': outputs });
    expect(d.attributes.status).toBe('pending');
    expect(d.attributes['resources-processed']).toBe(false);
    expect(d.attributes['hosted-state-download-url']).toBeNull();
    expect(d.attributes['hosted-state-upload-url']).toMatch(new RegExp(`^${t.url}/uploads/state/`));
    expect(d.attributes['hosted-json-state-upload-url']).toMatch(new RegExp(`^${t.url}/uploads/state-json/`));
    // Pending is not current: there is still no state.
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`)).status).toBe(404);
    // Terraform retries unlock while its upload is in flight, on this wording.
    const unlock = await t.api('POST', `/api/v2/workspaces/${wsId}/actions/unlock`);
    expect(unlock.status).toBe(409);
    expect(unlock.json.errors[0].detail).toContain('latest state version is still pending');

    const jsonState = Buffer.from(JSON.stringify({ format_version: '1.0', terraform_version: '1.9.8', values: { outputs: {} } }));
    const [up, upJson] = await Promise.all([put(d.attributes['hosted-state-upload-url'], S1), put(d.attributes['hosted-json-state-upload-url'], jsonState)]);
    expect(up.status).toBe(200);
    expect(upJson.status).toBe(200);
    expect((await put(d.attributes['hosted-state-upload-url'], S1)).status).toBe(404);

    const sv = await t.api('GET', `/api/v2/state-versions/${d.id}`);
    expect(sv.json.data.attributes).toMatchObject({ status: 'finalized', size: S1.length, 'resources-processed': false, 'hosted-state-upload-url': null });
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`)).status).toBe(503);
    const file = await fetch(sv.json.data.attributes['hosted-state-download-url']);
    expect(Buffer.from(await file.arrayBuffer()).equals(S1)).toBe(true);
    const jf = await fetch(sv.json.data.attributes['hosted-json-state-download-url']);
    expect(Buffer.from(await jf.arrayBuffer()).equals(jsonState)).toBe(true);

    expect(await t.running.jobs.runDue()).toBeGreaterThanOrEqual(1);
    const outs = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`);
    expect(outs.status).toBe(200);
    expect(outs.json.data).toHaveLength(13);
    expect(outs.json.data.find((o: any) => o.attributes.name === 'db_password').attributes).toMatchObject({ sensitive: true, value: null });
    expect((await t.api('POST', `/api/v2/workspaces/${wsId}/actions/unlock`)).status).toBe(200);
  });

  const serial2Tampered = Buffer.from(S2.toString('utf8').replace('"second"', '"tampered"'));
  it.each<[string, (d: any) => Promise<{ status: number; json: any }>, number, RegExp]>([
    ['content whose MD5 differs from the declared md5', (d) => put(d.attributes['hosted-state-upload-url'], serial2Tampered), 422, /MD5/],
    ['a body that is not JSON', (d) => put(d.attributes['hosted-state-upload-url'], 'not json'), 422, /MD5|not a Terraform state/],
    ['a body over TERRACE_MAX_STATE_BYTES', (d) => put(d.attributes['hosted-state-upload-url'], Buffer.alloc(70_000, 32)), 413, /over the limit/],
  ])('refuses %s and removes the pending version and its blobs', async (_n, send, status, detail) => {
    const wsId = await workspace(`refused-${status}-${Math.random().toString(36).slice(2, 8)}`);
    const before = await stateSnapshot(t);
    const d = await createPending(wsId, S2, { 'json-state-outputs': Buffer.from('{}').toString('base64') });
    const r = await send(d);
    expect(r.status).toBe(status);
    expect(r.json.errors[0].detail).toMatch(detail);
    const after = await stateSnapshot(t);
    expect(after.stateVersions).toBe(before.stateVersions);
    expect(after.blobs).toEqual(before.blobs);
    expect((await t.api('GET', `/api/v2/state-versions/${d.id}`)).status).toBe(404);
    expect((await put(d.attributes['hosted-state-upload-url'], S2)).status).toBe(404);
    // Only the expiry job of the removed version is left; it finds nothing to do.
    await t.running.jobs.runDue();
  });

  it('refuses a state whose contents contradict what was declared (serial, format)', async () => {
    const wsId = await workspace('contradicted');
    const declared = Buffer.from(JSON.stringify({ ...JSON.parse(S2.toString('utf8')), serial: 7 }));
    // The declared md5 matches the uploaded bytes, but the file says serial 7 where 2 was declared.
    const d = await createPending(wsId, declared, { serial: 2 });
    const r = await put(d.attributes['hosted-state-upload-url'], declared);
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toContain('serial 7 does not match');
    const v3 = stateFixture('version3.json');
    const d3 = await createPending(wsId, v3);
    const r3 = await put(d3.attributes['hosted-state-upload-url'], v3);
    expect(r3.status).toBe(422);
    expect(r3.json.errors[0].detail).toContain('only version 4');
    expect((await stateSnapshot(t)).blobs.filter((k) => k.includes(wsId))).toEqual([]);
  });

  it('refuses at create a serial that does not follow the current one, before handing out URLs', async () => {
    const wsId = await workspace('ordered');
    const d = await createPending(wsId, S2);
    expect((await put(d.attributes['hosted-state-upload-url'], S2)).status).toBe(200);
    const before = await stateSnapshot(t);
    const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { body: createBody(S1) });
    expect(r.status).toBe(422);
    expect(r.json.errors[0].source.pointer).toBe('/data/attributes/serial');
    expect(await stateSnapshot(t)).toEqual(before);
    await t.running.jobs.runDue();
  });

  it('refuses at upload a state another upload has overtaken (same serial), leaving only the first', async () => {
    const wsId = await workspace('raced');
    const first = await createPending(wsId, S2);
    const second = await createPending(wsId, S2);
    expect((await put(first.attributes['hosted-state-upload-url'], S2)).status).toBe(200);
    const r = await put(second.attributes['hosted-state-upload-url'], S2);
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toContain('not greater than the serial of the current state version (2)');
    expect((await t.api('GET', `/api/v2/state-versions/${second.id}`)).status).toBe(404);
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`)).json.data.id).toBe(first.id);
    expect((await stateSnapshot(t)).blobs.filter((k) => k.includes(second.id))).toEqual([]);
    await t.running.jobs.runDue();
  });

  it('refuses a JSON state upload that is not one JSON object, keeping the state version', async () => {
    const wsId = await workspace('bad-json-state');
    const d = await createPending(wsId, S1);
    const r = await put(d.attributes['hosted-json-state-upload-url'], '[1,2');
    expect(r.status).toBe(422);
    expect((await stateSnapshot(t)).blobs.filter((k) => k.includes(d.id))).toEqual([]);
    expect((await put(d.attributes['hosted-state-upload-url'], S1)).status).toBe(200);
    await t.running.jobs.runDue();
  });

  it('expires: an unused upload URL stops working, and the expiry job removes the pending version', async () => {
    const wsId = await workspace('abandoned');
    const before = await stateSnapshot(t);
    const d = await createPending(wsId, S1, { 'json-state-outputs': Buffer.from(JSON.stringify(jsonStateOutputs(S1))).toString('base64') });
    expect((await stateSnapshot(t)).blobs.length).toBe(before.blobs.length + 1);
    (t.clock as ManualClock).advance((t.running.deps.config.uploadUrlTtlSeconds + 2) * 1000);
    expect((await put(d.attributes['hosted-state-upload-url'], S1)).status).toBe(404);
    expect(await t.running.jobs.runDue()).toBeGreaterThanOrEqual(1);
    const after = await stateSnapshot(t);
    expect({ ...after, jobs: 0 }).toEqual({ ...before, jobs: 0 });
    expect(after.jobs).toBe(0);
    expect((await t.api('GET', `/api/v2/state-versions/${d.id}`)).status).toBe(404);
    // With nothing pending any more, the holder may unlock.
    expect((await t.api('POST', `/api/v2/workspaces/${wsId}/actions/unlock`)).status).toBe(200);
  });
});
