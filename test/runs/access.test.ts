import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RFC3339, accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { CONFIG_TGZ, createRun, putPlan, uploadedConfiguration } from '../helpers/runs.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

let t: TestServer;
let reader: string;
let outsider: string;
let wsId: string;

async function count(table: 'runs' | 'configuration_versions' | 'task_stages') {
  const r = await t.running.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_MAX_CONFIGURATION_VERSION_BYTES: '2048', TERRACE_MAX_PLAN_JSON_BYTES: '2048' });
  await createOrg(t, 'acme');
  await createOrg(t, 'other');
  wsId = (await createWorkspace(t, 'acme', 'app')).id;
  const readers = await createTeam(t, t.adminToken, 'acme', 'readers', { 'organization-access': { 'read-state-outputs': true } });
  const r = await createUserWithToken(t, 'reader');
  reader = r.token;
  await accept(t, reader, await invite(t, t.adminToken, 'acme', 'reader', [readers.id]));
  outsider = (await createUserWithToken(t, 'outsider')).token;
});

afterAll(() => t.close());

describe('configuration versions', () => {
  it('creates with a one-time upload URL shown once; the URL works once and only for gzip', async () => {
    const res = await t.api('POST', `/api/v2/workspaces/${wsId}/configuration-versions`, { body: { data: { type: 'configuration-versions', attributes: { speculative: true } } } });
    expect(res.status).toBe(201);
    const cv = res.json.data;
    expect(cv.id).toMatch(/^cv-/);
    expect(cv.attributes).toMatchObject({ status: 'pending', source: 'tfe-api', speculative: true, provisional: false, 'auto-queue-runs': true, error: null });
    expect(cv.attributes['created-at']).toMatch(RFC3339);
    expect(cv.links.download).toBe(`/api/v2/configuration-versions/${cv.id}/download`);
    const url = cv.attributes['upload-url'] as string;
    expect((await t.api('GET', `/api/v2/configuration-versions/${cv.id}`)).json.data.attributes['upload-url']).toBeNull();
    // Refusals give the URL back: not gzip, too large, empty.
    expect((await fetch(url, { method: 'PUT', body: 'plain text, not gzip' })).status).toBe(422);
    expect((await fetch(url, { method: 'PUT', body: '' })).status).toBe(422);
    expect((await fetch(url, { method: 'PUT', body: gzipSync(Buffer.alloc(4096, 7), { level: 0 }) })).status).toBe(413);
    expect((await t.api('GET', `/api/v2/configuration-versions/${cv.id}/download`)).status).toBe(404);
    const ok = await fetch(url, { method: 'PUT', body: CONFIG_TGZ, headers: { 'Content-Type': 'application/octet-stream' } });
    expect(ok.status).toBe(200);
    expect((await fetch(url, { method: 'PUT', body: CONFIG_TGZ })).status).toBe(404);
    const shown = await t.api('GET', `/api/v2/configuration-versions/${cv.id}`);
    expect(shown.json.data.attributes).toMatchObject({ status: 'uploaded', size: CONFIG_TGZ.length });
    expect(shown.json.data.attributes['status-timestamps']['uploaded-at']).toMatch(RFC3339);
    const dl = await fetch(`${t.url}/api/v2/configuration-versions/${cv.id}/download`, { headers: { Authorization: `Bearer ${t.adminToken}` } });
    expect(dl.status).toBe(200);
    expect(Buffer.from(await dl.arrayBuffer()).equals(CONFIG_TGZ)).toBe(true);
    const list = await t.api('GET', `/api/v2/workspaces/${wsId}/configuration-versions`);
    expect(list.json.data.map((d: any) => d.id)).toContain(cv.id);
    expect(list.json.meta.pagination).toBeDefined();
  });

  it('readers see versions but may not create or download; outsiders get 404', async () => {
    const cvId = await uploadedConfiguration(t, wsId);
    const n = await count('configuration_versions');
    expect((await t.api('GET', `/api/v2/configuration-versions/${cvId}`, { token: reader })).status).toBe(200);
    expect((await t.api('GET', `/api/v2/configuration-versions/${cvId}/download`, { token: reader })).status).toBe(404);
    expect((await t.api('POST', `/api/v2/workspaces/${wsId}/configuration-versions`, { token: reader, body: { data: { type: 'configuration-versions' } } })).status).toBe(404);
    for (const path of [`/api/v2/configuration-versions/${cvId}`, `/api/v2/configuration-versions/${cvId}/download`, `/api/v2/workspaces/${wsId}/configuration-versions`]) {
      expect((await t.api('GET', path, { token: outsider })).status, path).toBe(404);
    }
    expect((await t.api('GET', `/api/v2/configuration-versions/${cvId}`, { token: null })).status).toBe(401);
    expect(await count('configuration_versions')).toBe(n);
  });
});

describe('runs', () => {
  it('refuses bad runs with what to change, creating nothing', async () => {
    const cvId = await uploadedConfiguration(t, wsId);
    const pending = (await t.api('POST', `/api/v2/workspaces/${wsId}/configuration-versions`, { body: { data: { type: 'configuration-versions' } } })).json.data.id;
    const otherWs = (await createWorkspace(t, 'other', 'elsewhere')).id;
    const otherCv = await uploadedConfiguration(t, otherWs);
    const n = await count('runs');
    const rel = (ws: string, cv?: string) => ({ workspace: { data: { type: 'workspaces', id: ws } }, ...(cv ? { 'configuration-version': { data: { type: 'configuration-versions', id: cv } } } : {}) });
    const cases: [unknown, number, string][] = [
      [{ data: { type: 'runs', attributes: {} } }, 422, '/data/relationships/workspace'],
      [{ data: { type: 'runs', relationships: rel(wsId) } }, 422, '/data/relationships/configuration-version'],
      [{ data: { type: 'runs', relationships: rel(wsId, pending) } }, 422, '/data/relationships/configuration-version/data/id'],
      [{ data: { type: 'runs', relationships: rel(wsId, otherCv) } }, 422, '/data/relationships/configuration-version/data/id'],
      [{ data: { type: 'runs', attributes: { 'is-destroy': 'yes' }, relationships: rel(wsId, cvId) } }, 422, '/data/attributes/is-destroy'],
      [{ data: { type: 'runs', attributes: { 'vcs-commit-url': 'file:///etc/passwd' }, relationships: rel(wsId, cvId) } }, 422, '/data/attributes/vcs-commit-url'],
      [{ data: { type: 'workspaces', relationships: rel(wsId, cvId) } }, 422, '/data/type'],
      [{ data: { type: 'runs', relationships: rel('ws-doesnotexist0000', cvId) } }, 404, ''],
    ];
    for (const [body, status, pointer] of cases) {
      const r = await t.api('POST', '/api/v2/runs', { body });
      expect(r.status, JSON.stringify(body).slice(0, 120)).toBe(status);
      if (pointer) expect(r.json.errors[0].source.pointer).toBe(pointer);
    }
    // Readers and outsiders: 404 whatever the body says.
    for (const token of [reader, outsider]) {
      expect((await t.api('POST', '/api/v2/runs', { token, body: { data: { type: 'runs', attributes: { 'is-destroy': 'yes' }, relationships: rel(wsId, cvId) } } })).status).toBe(404);
    }
    expect(await count('runs')).toBe(n);
  });

  it('a run without tasks: planning, plan JSON (size-limited), planned, apply, applied; readers read only', async () => {
    const res = await createRun(t, wsId, await uploadedConfiguration(t, wsId));
    expect(res.status).toBe(201);
    const run = res.json.data;
    expect(run.attributes.status).toBe('planning');
    expect(run.relationships['task-stages'].data).toEqual([]);
    expect(run.attributes.actions).toEqual({ 'is-cancelable': true, 'is-confirmable': false, 'is-discardable': false, 'is-force-cancelable': false });
    expect((await t.api('GET', `/api/v2/runs/${run.id}/plan/json-output`)).status).toBe(404);
    expect((await putPlan(t, run.id, Buffer.alloc(4096, 32))).status).toBe(413);
    expect((await putPlan(t, run.id, undefined, reader)).status).toBe(404);
    expect((await t.api('GET', `/api/v2/runs/${run.id}`, { token: reader })).json.data.attributes.actions['is-cancelable']).toBe(false);
    expect((await t.api('POST', `/api/v2/runs/${run.id}/actions/cancel`, { token: reader })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/runs/${run.id}`, { token: outsider })).status).toBe(404);
    expect((await putPlan(t, run.id)).json.data.attributes.status).toBe('planned');
    expect((await t.api('GET', `/api/v2/runs/${run.id}/plan/json-output`, { token: reader })).status).toBe(404);
    expect((await t.api('POST', `/api/v2/runs/${run.id}/actions/apply`)).json.data.attributes.status).toBe('applying');
    const done = await t.api('POST', `/api/v2/runs/${run.id}/actions/complete-apply`, { body: { data: { type: 'runs', attributes: { status: 'errored', message: 'provider crashed' } } } });
    expect(done.json.data.attributes).toMatchObject({ status: 'errored', 'error-message': 'provider crashed' });
    for (const k of Object.values(done.json.data.attributes['status-timestamps'])) expect(k).toMatch(RFC3339);
    const list = await t.api('GET', `/api/v2/workspaces/${wsId}/runs`, { token: reader });
    expect(list.json.data[0].id).toBe(run.id);
  });

  it('plan-only runs finish after planning and cannot be applied', async () => {
    const res = await createRun(t, wsId, await uploadedConfiguration(t, wsId), { 'plan-only': true });
    expect(res.json.data.attributes['plan-only']).toBe(true);
    expect((await putPlan(t, res.json.data.id)).json.data.attributes.status).toBe('planned_and_finished');
    expect((await t.api('POST', `/api/v2/runs/${res.json.data.id}/actions/apply`)).status).toBe(409);
  });
});
