import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createOrg, RFC3339 } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, jsonStateOutputs, lock, md5, pushState, stateFixture, stateSnapshot, stateVersionBody } from '../helpers/state.js';

// The runner is off: processing happens only when a test calls runDue(), so the 503 window is observable.
let t: TestServer;
let owner: { id: string; token: string };
let other: { id: string; token: string };

const S1 = stateFixture('outputs-serial1.json');
const S2 = stateFixture('outputs-serial2.json');
const EXPECTED_S1 = JSON.parse(S1.toString('utf8')).outputs as Record<string, { value: unknown; type: unknown; sensitive?: boolean }>;

async function workspace(name: string, token = owner.token) {
  const ws = await createWorkspace(t, 'acme', name, token);
  await lock(t, ws.id, token);
  return ws.id;
}

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: '65536' });
  owner = await createUserWithToken(t, 'sv-owner');
  other = await createUserWithToken(t, 'sv-other');
  await createOrg(t, 'acme', { token: owner.token });
});

afterAll(async () => {
  await t?.close();
});

describe('a state pushed as go-tfe pushes it', () => {
  let wsId: string;
  let svId: string;

  beforeAll(async () => {
    wsId = await workspace('app');
  });

  it('is created with 201: finalized, not yet processed, the file stored', async () => {
    const r = await pushState(t, wsId, S1, {}, owner.token);
    expect(r.status).toBe(201);
    const d = r.json.data;
    svId = d.id;
    expect(d.type).toBe('state-versions');
    expect(d.id).toMatch(/^sv-[A-Za-z0-9]{16}$/);
    expect(d.attributes).toMatchObject({
      status: 'finalized',
      serial: 1,
      'resources-processed': false,
      size: S1.length,
      md5: md5(S1),
      lineage: '6c2c1b55-8e8f-3a9b-2d1c-5b0a4f2e7d91',
      'state-version': 4,
      'hosted-state-upload-url': null,
    });
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.attributes['hosted-state-download-url']).toMatch(new RegExp(`^${t.url}/state-files/${svId}/`));
    expect(d.relationships.workspace).toEqual({ data: { id: wsId, type: 'workspaces' } });
    expect(d.relationships.outputs).toEqual({ data: [] });
    expect(d.links.self).toBe(`/api/v2/state-versions/${svId}`);

    const ws = await t.api('GET', `/api/v2/workspaces/${wsId}`, { token: owner.token });
    expect(ws.json.data.relationships['current-state-version'].data).toEqual({ id: svId, type: 'state-versions' });
  });

  it('answers current outputs with exactly the 503 Terraform retries on, while processing runs', async () => {
    const r = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token });
    expect(r.status).toBe(503);
    expect(r.headers.get('content-type')).toBe('application/vnd.api+json');
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(r.json.errors).toHaveLength(1);
    expect(r.json.errors[0].status).toBe('503');
    expect(r.json.errors[0].title).toContain('service unavailable');
    expect(typeof r.json.errors[0].detail).toBe('string');

    // Nothing passes for final meanwhile: the version says so, and it lists no outputs.
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`, { token: owner.token });
    expect(cur.status).toBe(200);
    expect(cur.json.data.attributes['resources-processed']).toBe(false);
    const outs = await t.api('GET', `/api/v2/state-versions/${svId}/outputs`, { token: owner.token });
    expect(outs.status).toBe(200);
    expect(outs.json.data).toEqual([]);
  });

  it('processes durably: runDue() flips resources-processed and the outputs appear with exact types', async () => {
    expect(await t.running.jobs.runDue()).toBe(1);
    const sv = await t.api('GET', `/api/v2/state-versions/${svId}`, { token: owner.token });
    expect(sv.json.data.attributes['resources-processed']).toBe(true);
    expect(sv.json.data.attributes['terraform-version']).toBe('1.9.8');
    expect(sv.json.data.attributes['resource-count']).toBe(3);

    const r = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token });
    expect(r.status).toBe(200);
    const byName = Object.fromEntries(r.json.data.map((o: any) => [o.attributes.name, o]));
    expect(Object.keys(byName)).toEqual(Object.keys(EXPECTED_S1));
    const coarse: Record<string, string> = {
      bool_out: 'boolean',
      db_password: 'string',
      empty_list: 'array',
      float_out: 'number',
      list_out: 'array',
      map_out: 'object',
      null_attrs: 'object',
      number_out: 'number',
      object_out: 'object',
      secret_object: 'object',
      set_out: 'array',
      string_out: 'string',
      tuple_out: 'array',
    };
    for (const [name, expected] of Object.entries(EXPECTED_S1)) {
      const o = byName[name];
      expect(o.type).toBe('state-version-outputs');
      expect(o.id).toMatch(/^wsout-[A-Za-z0-9]{16}$/);
      expect(o.links.self).toBe(`/api/v2/state-version-outputs/${o.id}`);
      expect(o.attributes.name).toBe(name);
      expect(o.attributes.sensitive).toBe(expected.sensitive === true);
      expect(o.attributes['detailed-type']).toEqual(expected.type);
      expect(o.attributes.type).toBe(coarse[name]);
      expect(o.attributes).not.toHaveProperty('detailed_type');
      // Sensitive values are null here; the rest exactly as in the state.
      expect(o.attributes.value).toEqual(expected.sensitive ? null : expected.value);
    }
    expect(byName.null_attrs.attributes.value).toEqual({ id: 'i-0abc', public_ip: null });
    expect(byName.float_out.attributes.value).toBe(3.25);

    const ws = await t.api('GET', `/api/v2/workspaces/${wsId}`, { token: owner.token });
    expect(ws.json.data.attributes['resource-count']).toBe(3);
  });

  it('shows a sensitive value in plaintext only on GET /state-version-outputs/:id', async () => {
    const list = await t.api('GET', `/api/v2/state-versions/${svId}/outputs?page%5Bsize%5D=100`, { token: owner.token });
    const secret = list.json.data.find((o: any) => o.attributes.name === 'db_password');
    const secretObj = list.json.data.find((o: any) => o.attributes.name === 'secret_object');
    expect(secret.attributes.value).toBeNull();
    const one = await t.api('GET', `/api/v2/state-version-outputs/${secret.id}`, { token: owner.token });
    expect(one.status).toBe(200);
    expect(one.json.data.attributes).toEqual({ name: 'db_password', sensitive: true, type: 'string', value: 'hunter2-correct-horse', 'detailed-type': 'string' });
    const obj = await t.api('GET', `/api/v2/state-version-outputs/${secretObj.id}`, { token: owner.token });
    expect(obj.json.data.attributes.value).toEqual({ password: 'pa55', username: 'admin' });

    // At rest the sensitive value is encrypted, not the plaintext.
    const row = await t.running.deps.db.selectFrom('state_version_outputs').select('value').where('id', '=', secret.id).executeTakeFirstOrThrow();
    expect(row.value).not.toContain('hunter2');
    expect((await t.api('GET', '/api/v2/state-version-outputs/wsout-doesnotexist0000', { token: owner.token })).status).toBe(404);
  });

  it('pages outputs with page[number] and page[size] (default 20)', async () => {
    const all = await t.api('GET', `/api/v2/state-versions/${svId}/outputs`, { token: owner.token });
    expect(all.json.meta.pagination['page-size']).toBe(20);
    expect(all.json.meta.pagination['total-count']).toBe(13);
    const p2 = await t.api('GET', `/api/v2/state-versions/${svId}/outputs?page%5Bnumber%5D=2&page%5Bsize%5D=5`, { token: owner.token });
    expect(p2.json.data.map((o: any) => o.attributes.name)).toEqual(Object.keys(EXPECTED_S1).slice(5, 10));
    expect(p2.json.meta.pagination).toEqual({ 'current-page': 2, 'page-size': 5, 'prev-page': 1, 'next-page': 3, 'total-pages': 3, 'total-count': 13 });
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs?page[number]=3&page[size]=5`, { token: owner.token });
    expect(cur.json.data).toHaveLength(3);
    expect(cur.json.meta.pagination['total-count']).toBe(13);
  });

  it('embeds the outputs with include=outputs (sensitive values null)', async () => {
    const r = await t.api('GET', `/api/v2/state-versions/${svId}?include=outputs`, { token: owner.token });
    expect(r.status).toBe(200);
    expect(r.json.data.relationships.outputs.data).toHaveLength(13);
    expect(r.json.included).toHaveLength(13);
    expect(r.json.included.map((o: any) => o.id)).toEqual(r.json.data.relationships.outputs.data.map((o: any) => o.id));
    expect(r.json.included.find((o: any) => o.attributes.name === 'db_password').attributes.value).toBeNull();
  });

  it('downloads the stored file byte for byte from the signed URL; tampered or expired URLs are 404', async () => {
    const sv = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`, { token: owner.token });
    const url: string = sv.json.data.attributes['hosted-state-download-url'];
    // go-tfe sends its bearer token along; it is not needed and does no harm.
    const res = await fetch(url, { headers: { Authorization: `Bearer ${owner.token}`, Accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(Buffer.from(await res.arrayBuffer()).equals(S1)).toBe(true);
    expect((await fetch(url.replace(/\.([A-Za-z0-9_-]{5})/, '.AAAAA'))).status).toBe(404);
    expect((await fetch(url.replace('/state.json', '/json-state.json'))).status).toBe(404);
    (t.clock as ManualClock).advance((t.running.deps.config.archiveUrlTtlSeconds + 1) * 1000);
    expect((await fetch(url)).status).toBe(404);
  });

  it('moves the current version forward and lists versions newest first (go-tfe List)', async () => {
    (t.clock as ManualClock).advance(1000);
    const r = await pushState(t, wsId, S2, {}, owner.token);
    expect(r.status).toBe(201);
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`, { token: owner.token });
    expect(cur.json.data.id).toBe(r.json.data.id);
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token })).status).toBe(503);
    await t.running.jobs.runDue();
    const outs = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token });
    expect(outs.json.data.find((o: any) => o.attributes.name === 'string_out').attributes.value).toBe('second');
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}`, { token: owner.token })).json.data.attributes['resource-count']).toBe(2);

    const list = await t.api('GET', '/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=app&filter%5Borganization%5D%5Bname%5D=acme', { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.json.data.map((s: any) => s.attributes.serial)).toEqual([2, 1]);
    expect(list.json.meta.pagination['total-count']).toBe(2);
    expect((await t.api('GET', '/api/v2/state-versions?filter%5Borganization%5D%5Bname%5D=acme', { token: owner.token })).status).toBe(422);
    expect((await t.api('GET', '/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=nope&filter%5Borganization%5D%5Bname%5D=acme', { token: owner.token })).status).toBe(404);
  });
});

describe('outputs from json-state-outputs', () => {
  it('takes names, values, sensitivity and types from json-state-outputs when sent, and infers a missing type', async () => {
    const wsId = await workspace('json-outputs');
    const outputs = { ...jsonStateOutputs(S1), extra_dynamic: { sensitive: false, value: null, type: 'dynamic' }, untyped: { sensitive: false, value: { a: [1, 'x'] } } };
    const r = await pushState(t, wsId, S1, { 'json-state-outputs': Buffer.from(JSON.stringify(outputs)).toString('base64') }, owner.token);
    expect(r.status).toBe(201);
    await t.running.jobs.runDue();
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token });
    const byName = Object.fromEntries(cur.json.data.map((o: any) => [o.attributes.name, o.attributes]));
    expect(byName.extra_dynamic).toEqual({ name: 'extra_dynamic', sensitive: false, type: 'null', value: null, 'detailed-type': 'dynamic' });
    expect(byName.untyped['detailed-type']).toEqual(['object', { a: ['tuple', ['number', 'string']] }]);
    expect(byName.untyped.type).toBe('object');
    expect(byName.tuple_out['detailed-type']).toEqual(['tuple', ['string', 'number', 'bool']]);
  });

  it('handles a state with no outputs and no resources', async () => {
    const wsId = await workspace('empty');
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token })).json).toEqual({ data: [] });
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`, { token: owner.token })).status).toBe(404);
    expect((await pushState(t, wsId, stateFixture('empty.json'), {}, owner.token)).status).toBe(201);
    await t.running.jobs.runDue();
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: owner.token });
    expect(cur.status).toBe(200);
    expect(cur.json.data).toEqual([]);
  });
});

describe('refused creates leave nothing behind', () => {
  let wsId: string;

  beforeAll(async () => {
    wsId = await workspace('guarded');
    expect((await pushState(t, wsId, S2, {}, owner.token)).status).toBe(201);
    await t.running.jobs.runDue();
  });

  const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
  const notState = (doc: unknown) => {
    const raw = Buffer.from(JSON.stringify(doc));
    return { serial: 3, md5: md5(raw), state: raw.toString('base64') };
  };
  const v3 = stateFixture('version3.json');
  const otherLineage = (() => {
    const s = JSON.parse(S2.toString('utf8'));
    s.serial = 3;
    s.lineage = 'ffffffff-0000-4000-8000-000000000000';
    return Buffer.from(JSON.stringify(s, null, 2));
  })();
  const bigState = (() => {
    const s = JSON.parse(S2.toString('utf8'));
    s.serial = 3;
    s.outputs.big = { value: 'x'.repeat(70_000), type: 'string' };
    return Buffer.from(JSON.stringify(s));
  })();
  const serial3 = (() => {
    const s = JSON.parse(S2.toString('utf8'));
    s.serial = 3;
    return Buffer.from(JSON.stringify(s, null, 2));
  })();

  it.each<[string, () => unknown, number, string | null, RegExp]>([
    ['a wrong md5', () => stateVersionBody(serial3, { md5: md5('something else') }), 422, '/data/attributes/md5', /does not match the MD5 of the decoded state/],
    ['a serial that does not increase', () => stateVersionBody(S2), 422, '/data/attributes/serial', /not greater than the serial of the current state version \(2\)/],
    ['a serial lower than the current one', () => stateVersionBody(S1), 422, '/data/attributes/serial', /not greater/],
    ['a lineage that changes', () => stateVersionBody(otherLineage), 422, '/data/attributes/lineage', /differs from the current state's lineage/],
    ['a serial attribute the file contradicts', () => stateVersionBody(serial3, { serial: 4 }), 422, '/data/attributes/serial', /does not match the state file's serial 3/],
    ['a lineage attribute the file contradicts', () => stateVersionBody(serial3, { lineage: 'nope' }), 422, '/data/attributes/lineage', /does not match the state file's lineage/],
    ['a state format 3 file', () => stateVersionBody(v3, { serial: 4 }), 422, '/data/attributes/state', /only version 4/],
    ['a JSON array', () => ({ data: { type: 'state-versions', attributes: notState([1, 2]) } }), 422, '/data/attributes/state', /must be a JSON object/],
    ['an object without version', () => ({ data: { type: 'state-versions', attributes: notState({ serial: 3, lineage: 'x' }) } }), 422, '/data/attributes/state', /no "version"/],
    ['a state without lineage', () => ({ data: { type: 'state-versions', attributes: notState({ version: 4, serial: 3 }) } }), 422, '/data/attributes/state', /lineage/],
    ['resources that are not an array', () => ({ data: { type: 'state-versions', attributes: notState({ version: 4, serial: 3, lineage: 'x', resources: {} }) } }), 422, '/data/attributes/state', /"resources" must be an array/],
    ['truncated JSON', () => ({ data: { type: 'state-versions', attributes: { serial: 3, md5: md5('{"version": 4,'), state: b64('{"version": 4,') } } }), 422, '/data/attributes/state', /not valid JSON|ends before/],
    ['text that is not JSON', () => ({ data: { type: 'state-versions', attributes: { serial: 3, md5: md5('hello'), state: b64('hello') } } }), 422, '/data/attributes/state', /not valid JSON/],
    ['state that is not base64', () => stateVersionBody(serial3, { state: '***not base64***' }), 422, '/data/attributes/state', /base64/],
    ['a missing md5', () => stateVersionBody(serial3, { md5: undefined }), 422, '/data/attributes/md5', /required/],
    ['an md5 that is not hex', () => stateVersionBody(serial3, { md5: 'xyz' }), 422, '/data/attributes/md5', /32 hexadecimal/],
    ['a serial that is a string', () => stateVersionBody(serial3, { serial: '3' }), 422, '/data/attributes/serial', /whole number/],
    ['json-state-outputs that are not JSON', () => stateVersionBody(serial3, { 'json-state-outputs': b64('nope') }), 422, '/data/attributes/json-state-outputs', /not valid JSON/],
    ['json-state-outputs of the wrong shape', () => stateVersionBody(serial3, { 'json-state-outputs': b64('{"a":{"sensitive":"yes"}}') }), 422, '/data/attributes/json-state-outputs', /sensitive/],
    ['json-state that is not an object', () => stateVersionBody(serial3, { 'json-state': b64('[1]') }), 422, '/data/attributes/json-state', /JSON object/],
    ['a state over TERRACE_MAX_STATE_BYTES', () => stateVersionBody(bigState), 413, null, /over the limit/],
    ['the wrong data.type', () => ({ data: { type: 'workspaces', attributes: {} } }), 422, '/data/type', /state-versions/],
  ])('refuses %s', async (_name, make, status, pointer, detail) => {
    const before = await stateSnapshot(t);
    const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { token: owner.token, body: make() });
    expect(r.status).toBe(status);
    expect(r.json.errors[0].status).toBe(String(status));
    if (pointer) expect(r.json.errors.map((e: any) => e.source?.pointer)).toContain(pointer);
    expect(r.json.errors.map((e: any) => e.detail).join(' ')).toMatch(detail);
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('names both digests when the md5 is wrong', async () => {
    const wrong = md5('something else');
    const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { token: owner.token, body: stateVersionBody(serial3, { md5: wrong }) });
    expect(r.json.errors[0].detail).toContain(wrong);
    expect(r.json.errors[0].detail).toContain(md5(serial3));
  });

  it('accepts a lineage change (and a lower serial) with force: true', async () => {
    const r = await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { token: owner.token, body: stateVersionBody(otherLineage, { force: true }) });
    expect(r.status).toBe(201);
    const low = JSON.parse(otherLineage.toString('utf8'));
    low.serial = 1;
    const lowBuf = Buffer.from(JSON.stringify(low));
    expect((await t.api('POST', `/api/v2/workspaces/${wsId}/state-versions`, { token: owner.token, body: stateVersionBody(lowBuf, { force: true }) })).status).toBe(201);
    await t.running.jobs.runDue();
  });

  it('requires the caller to hold the workspace lock (409), and writes nothing otherwise', async () => {
    const before = await stateSnapshot(t);
    const unlocked = await createWorkspace(t, 'acme', 'unlocked', owner.token);
    const r = await pushState(t, unlocked.id, S1, {}, owner.token);
    expect(r.status).toBe(409);
    expect(r.json.errors[0].detail).toContain('must be locked');
    await lock(t, unlocked.id, t.adminToken);
    const other = await pushState(t, unlocked.id, S1, {}, owner.token);
    expect(other.status).toBe(409);
    expect(other.json.errors[0].detail).toContain('locked by someone else');
    expect(await stateSnapshot(t)).toEqual(before);
  });

  it('answers 404 to callers without access, 401 without a token, and 413 for a body over the create limit', async () => {
    expect((await pushState(t, wsId, serial3, {}, other.token)).status).toBe(404);
    expect((await pushState(t, wsId, serial3, {}, null as unknown as string)).status).toBe(401);
    expect((await pushState(t, 'ws-doesnotexist0000', serial3, {}, owner.token)).status).toBe(404);
    const huge = { data: { type: 'state-versions', attributes: { serial: 3, md5: md5(''), state: 'A'.repeat(65536 * 4 + 1024 * 1024 + 10) } } };
    const before = await stateSnapshot(t);
    // Its own connection: the server answers before reading the whole body and then closes it.
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${t.url}/api/v2/workspaces/${wsId}/state-versions`, {
        method: 'POST',
        agent: false,
        headers: { Authorization: `Bearer ${owner.token}`, 'Content-Type': 'application/vnd.api+json' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify(huge));
    });
    expect(status).toBe(413);
    expect(await stateSnapshot(t)).toEqual(before);
  });
});

describe('workspace deletion', () => {
  it('removes its state versions, outputs and blobs', async () => {
    const wsId = await workspace('short-lived');
    expect((await pushState(t, wsId, S1, {}, owner.token)).status).toBe(201);
    await t.running.jobs.runDue();
    const prefix = `organizations/`;
    const blobsBefore = (await stateSnapshot(t)).blobs.filter((k) => k.includes(wsId));
    expect(blobsBefore.length).toBe(1);
    // Resources under management: safe-delete refuses, a plain delete by an owner goes ahead.
    expect((await t.api('POST', `/api/v2/workspaces/${wsId}/actions/safe-delete`, { token: owner.token })).status).toBe(409);
    expect((await t.api('DELETE', `/api/v2/workspaces/${wsId}`, { token: owner.token })).status).toBe(204);
    const after = await stateSnapshot(t);
    expect(after.blobs.filter((k) => k.startsWith(prefix) && k.includes(wsId))).toEqual([]);
    const rows = await t.running.deps.db.selectFrom('state_versions').select('id').where('workspace_id', '=', wsId).execute();
    expect(rows).toEqual([]);
  });
});

describe('organization deletion', () => {
  it('takes the state files of its workspaces with it', async () => {
    await createOrg(t, 'gone', { token: owner.token });
    const ws = await createWorkspace(t, 'gone', 'app', owner.token);
    await lock(t, ws.id, owner.token);
    expect((await pushState(t, ws.id, S1, {}, owner.token)).status).toBe(201);
    const org = await t.running.deps.db.selectFrom('organizations').select('id').where('name', '=', 'gone').executeTakeFirstOrThrow();
    expect((await stateSnapshot(t)).blobs.filter((k) => k.startsWith(`organizations/${org.id}/workspaces/${ws.id}/`))).toHaveLength(1);
    expect((await t.api('DELETE', '/api/v2/organizations/gone', { token: owner.token })).status).toBe(204);
    expect((await stateSnapshot(t)).blobs.filter((k) => k.startsWith(`organizations/${org.id}/`))).toEqual([]);
    expect(await t.running.deps.db.selectFrom('state_versions').select('id').where('workspace_id', '=', ws.id).execute()).toEqual([]);
    // Its pending processing job finds nothing and goes away.
    await t.running.jobs.runDue();
  });
});
