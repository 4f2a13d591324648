import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Integrator } from '../helpers/integrator.js';
import { RFC3339, accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let hook: Integrator;
let failing: Integrator;
let owner: string;
let member: string;
let taskManager: string;
let outsider: string;

const taskBody = (attributes: Record<string, unknown>) => ({ data: { type: 'tasks', attributes } });

async function rows(table: 'run_tasks' | 'workspace_run_tasks') {
  const r = await t.running.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

beforeAll(async () => {
  t = await startTestServer({ TERRACE_RUN_TASK_REQUEST_TIMEOUT_MS: '500' });
  hook = await new Integrator('s3cret').start();
  failing = await new Integrator('').start();
  failing.fallback = { status: 500 };
  owner = (await createUserWithToken(t, 'owner')).token;
  await createOrg(t, 'acme', { token: owner });
  await createOrg(t, 'other', { token: owner });
  const m = await createUserWithToken(t, 'member');
  member = m.token;
  await accept(t, member, await invite(t, owner, 'acme', 'member'));
  const team = await createTeam(t, owner, 'acme', 'runtaskers', { 'organization-access': { 'manage-run-tasks': true } });
  expect(team.attributes['organization-access']['manage-run-tasks']).toBe(true);
  const tm = await createUserWithToken(t, 'tasker');
  taskManager = tm.token;
  await accept(t, taskManager, await invite(t, owner, 'acme', 'tasker', [team.id]));
  outsider = (await createUserWithToken(t, 'outsider')).token;
});

afterAll(async () => {
  await hook.close();
  await failing.close();
  await t.close();
});

describe('organization run tasks', () => {
  let taskId: string;

  it('creates a task after a signed verification request, in HCP shape (201, write-only key)', async () => {
    const before = hook.received.length;
    const res = await t.api('POST', '/api/v2/organizations/acme/tasks', {
      token: owner,
      body: taskBody({ name: 'checker', url: hook.url, category: 'task', description: null, 'hmac-key': 's3cret', enabled: 'true' }),
    });
    expect(res.status).toBe(201);
    const d = res.json.data;
    taskId = d.id;
    expect(d.id).toMatch(/^task-[A-Za-z0-9]{16}$/);
    expect(d.type).toBe('tasks');
    expect(d.attributes).toEqual({
      name: 'checker',
      url: hook.url,
      description: '',
      category: 'task',
      enabled: true,
      'hmac-key': null,
      'created-at': expect.stringMatching(RFC3339),
      'updated-at': expect.stringMatching(RFC3339),
    });
    expect(d.relationships.organization.data).toEqual({ type: 'organizations', id: 'acme' });
    expect(d.relationships['workspace-tasks'].data).toEqual([]);
    expect(d.links.self).toBe(`/api/v2/tasks/${d.id}`);
    // The verification request: one, signed with the key, a complete typed payload marked test-token.
    expect(hook.received.length).toBe(before + 1);
    const ping = hook.received.at(-1)!;
    expect(ping.signatureValid).toBe(true);
    expect(ping.headers['x-terrace-task-signature']).toBe(ping.headers['x-tfc-task-signature']);
    expect(ping.headers['content-type']).toBe('application/json');
    expect(ping.headers.authorization).toBeUndefined();
    expect(ping.body.access_token).toBe('test-token');
    expect(ping.body.payload_version).toBe(1);
    expect(ping.raw.toString()).toBe(JSON.stringify(ping.body));
    // The key is sealed at rest.
    const row = await t.running.deps.db.selectFrom('run_tasks').selectAll().where('id', '=', d.id).executeTakeFirstOrThrow();
    expect(row.hmac_key_sealed).not.toContain('s3cret');
    expect(t.running.deps.secrets.decrypt(row.hmac_key_sealed!)).toBe('s3cret');
  });

  it('lists with pagination meta and shows by id to members; 404 to outsiders', async () => {
    const list = await t.api('GET', '/api/v2/organizations/acme/tasks', { token: member });
    expect(list.status).toBe(200);
    expect(list.json.data.map((x: any) => x.id)).toEqual([taskId]);
    expect(list.json.meta.pagination).toMatchObject({ 'current-page': 1, 'total-count': 1 });
    expect((await t.api('GET', `/api/v2/tasks/${taskId}`, { token: member })).json.data.id).toBe(taskId);
    expect((await t.api('GET', `/api/v2/tasks/${taskId}`, { token: outsider })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme/tasks', { token: outsider })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/tasks/${taskId}`, { token: null })).status).toBe(401);
  });

  it('lets owners, manage-run-tasks teams and the organization token manage; 404 to plain members', async () => {
    const n = await rows('run_tasks');
    const denied = await t.api('POST', '/api/v2/organizations/acme/tasks', { token: member, body: taskBody({ name: 'x', url: hook.url }) });
    expect(denied.status).toBe(404);
    expect((await t.api('PATCH', `/api/v2/tasks/${taskId}`, { token: member, body: taskBody({ description: 'nope' }) })).status).toBe(404);
    expect((await t.api('DELETE', `/api/v2/tasks/${taskId}`, { token: member })).status).toBe(404);
    expect(await rows('run_tasks')).toBe(n);
    const byTeam = await t.api('POST', '/api/v2/organizations/acme/tasks', { token: taskManager, body: taskBody({ name: 'by-team', url: hook.url, 'hmac-key': 's3cret' }) });
    expect(byTeam.status).toBe(201);
    const orgToken = await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner });
    expect(orgToken.status).toBe(201);
    const del = await t.api('DELETE', `/api/v2/tasks/${byTeam.json.data.id}`, { token: orgToken.json.data.attributes.token });
    expect(del.status).toBe(204);
    expect((await t.api('DELETE', `/api/v2/tasks/${byTeam.json.data.id}`, { token: owner })).status).toBe(404);
  });

  it('refuses with 422 when the integrator does not answer 200, storing nothing', async () => {
    const n = await rows('run_tasks');
    const res = await t.api('POST', '/api/v2/organizations/acme/tasks', { token: owner, body: taskBody({ name: 'broken', url: failing.url }) });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].detail).toContain('HTTP 500');
    expect(res.json.errors[0].source.pointer).toBe('/data/attributes/url');
    expect(await rows('run_tasks')).toBe(n);
  });

  it('refuses a silent integrator within the request timeout, and does not follow redirects', async () => {
    const n = await rows('run_tasks');
    const silent = await new Integrator('').start();
    silent.fallback = { silence: true };
    const redirecting = await new Integrator('').start();
    redirecting.fallback = { status: 302 };
    try {
      const quiet = await t.api('POST', '/api/v2/organizations/acme/tasks', { token: owner, body: taskBody({ name: 'quiet', url: silent.url }) });
      expect(quiet.status).toBe(422);
      expect(quiet.json.errors[0].detail).toContain('no answer within 500 ms');
      const moved = await t.api('POST', '/api/v2/organizations/acme/tasks', { token: owner, body: taskBody({ name: 'moved', url: redirecting.url }) });
      expect(moved.status).toBe(422);
      expect(moved.json.errors[0].detail).toContain('HTTP 302');
      expect(redirecting.received).toHaveLength(1);
    } finally {
      await silent.close();
      await redirecting.close();
    }
    expect(await rows('run_tasks')).toBe(n);
  });

  it('refuses bad input of every kind with the member named, changing nothing', async () => {
    const n = await rows('run_tasks');
    const cases: [Record<string, unknown>, string][] = [
      [{ url: hook.url }, '/data/attributes/name'],
      [{ name: 'has space', url: hook.url }, '/data/attributes/name'],
      [{ name: 'ok' }, '/data/attributes/url'],
      [{ name: 'ok', url: 'ftp://example.com/x' }, '/data/attributes/url'],
      [{ name: 'ok', url: 'http://user:pw@127.0.0.1/x' }, '/data/attributes/url'],
      [{ name: 'ok', url: 'not a url' }, '/data/attributes/url'],
      [{ name: 'ok', url: `http://127.0.0.1/${'a'.repeat(3000)}` }, '/data/attributes/url'],
      [{ name: 'ok', url: hook.url, category: 'policy' }, '/data/attributes/category'],
      [{ name: 'ok', url: hook.url, enabled: 'yes' }, '/data/attributes/enabled'],
      [{ name: 'ok', url: hook.url, description: 'x'.repeat(301) }, '/data/attributes/description'],
      [{ name: 'checker', url: hook.url, 'hmac-key': 's3cret' }, '/data/attributes/name'],
    ];
    for (const [attrs, pointer] of cases) {
      const res = await t.api('POST', '/api/v2/organizations/acme/tasks', { token: owner, body: taskBody(attrs) });
      expect(res.status, JSON.stringify(attrs).slice(0, 80)).toBe(422);
      expect(res.json.errors[0].source.pointer).toBe(pointer);
      expect(res.json.errors[0].status).toBe('422');
    }
    expect((await t.api('POST', '/api/v2/organizations/acme/tasks', { token: owner, rawBody: '{"data":' })).status).toBe(400);
    expect((await t.api('POST', '/api/v2/organizations/acme/tasks', { token: owner, body: { data: { type: 'workspaces', attributes: {} } } })).status).toBe(422);
    expect(await rows('run_tasks')).toBe(n);
  });

  it('updates as a partial merge; a new URL or key is verified first; global-configuration is not entitled', async () => {
    const before = hook.received.length;
    const res = await t.api('PATCH', `/api/v2/tasks/${taskId}`, {
      token: owner,
      body: taskBody({ description: 'scans', 'global-configuration': { enabled: true, stages: ['pre_plan'], 'enforcement-level': 'mandatory' } }),
    });
    expect(res.status).toBe(200);
    expect(res.json.data.attributes).toMatchObject({ name: 'checker', description: 'scans', enabled: true, url: hook.url });
    expect(res.json.data.attributes).not.toHaveProperty('global-configuration');
    expect(hook.received.length).toBe(before); // nothing to verify
    const moved = await t.api('PATCH', `/api/v2/tasks/${taskId}`, { token: owner, body: taskBody({ url: failing.url }) });
    expect(moved.status).toBe(422);
    expect((await t.api('GET', `/api/v2/tasks/${taskId}`, { token: owner })).json.data.attributes.url).toBe(hook.url);
    const rekey = await t.api('PATCH', `/api/v2/tasks/${taskId}`, { token: owner, body: taskBody({ hmac_key: 'wrong-key' }) });
    expect(rekey.status).toBe(200); // the integrator answers 200 whatever the signature
    expect(hook.received.at(-1)!.signatureValid).toBe(false);
    expect((await t.api('PATCH', `/api/v2/tasks/${taskId}`, { token: owner, body: taskBody({ 'hmac-key': 's3cret' }) })).status).toBe(200);
    expect(hook.received.at(-1)!.signatureValid).toBe(true);
  });
});
