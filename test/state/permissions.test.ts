import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, pushState, stateFixture } from '../helpers/state.js';

let t: TestServer;
let owner: { id: string; token: string };
let reader: { id: string; token: string };
let manager: { id: string; token: string };
let plain: { id: string; token: string };
let stranger: { id: string; token: string };
let orgToken: string;
let wsId: string;
let svId: string;
let secretId: string;
let downloadUrl: string;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  owner = await createUserWithToken(t, 'perm-owner');
  reader = await createUserWithToken(t, 'perm-reader');
  manager = await createUserWithToken(t, 'perm-manager');
  plain = await createUserWithToken(t, 'perm-plain');
  stranger = await createUserWithToken(t, 'perm-stranger');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'elsewhere', { token: stranger.token });
  // Teams are made through the teams API, with HCP's organization-access.
  const readers = await createTeam(t, owner.token, 'acme', 'output-readers', { 'organization-access': { 'read-state-outputs': true } });
  const managers = await createTeam(t, owner.token, 'acme', 'ws-managers', { 'organization-access': { 'manage-workspaces': true } });
  const others = await createTeam(t, owner.token, 'acme', 'module-people', { 'organization-access': { 'manage-modules': true } });
  await accept(t, reader.token, await invite(t, owner.token, 'acme', 'perm-reader', [readers.id]));
  await accept(t, manager.token, await invite(t, owner.token, 'acme', 'perm-manager', [managers.id]));
  await accept(t, plain.token, await invite(t, owner.token, 'acme', 'perm-plain', [others.id]));
  const tok = await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner.token, body: { data: { type: 'authentication-tokens', attributes: {} } } });
  expect(tok.status).toBe(201);
  orgToken = tok.json.data.attributes.token;

  const ws = await createWorkspace(t, 'acme', 'prod', owner.token);
  wsId = ws.id;
  await lock(t, wsId, owner.token);
  const sv = await pushState(t, wsId, stateFixture('outputs-serial1.json'), {}, owner.token);
  expect(sv.status).toBe(201);
  svId = sv.json.data.id;
  downloadUrl = sv.json.data.attributes['hosted-state-download-url'];
  await t.running.jobs.runDue();
  const outs = await t.api('GET', `/api/v2/state-versions/${svId}/outputs?page%5Bsize%5D=100`, { token: owner.token });
  secretId = outs.json.data.find((o: any) => o.attributes.name === 'db_password').id;
});

afterAll(async () => {
  await t?.close();
});

describe('a team with read-state-outputs', () => {
  it('sees the workspace and its current outputs, sensitive values as null', async () => {
    const ws = await t.api('GET', '/api/v2/organizations/acme/workspaces/prod', { token: reader.token });
    expect(ws.status).toBe(200);
    expect(ws.json.data.attributes.permissions['can-read-state-versions']).toBe(false);
    expect(ws.json.data.attributes.permissions['can-read-state-outputs']).toBe(true);
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: reader.token });
    expect(cur.status).toBe(200);
    expect(cur.json.data).toHaveLength(13);
    for (const o of cur.json.data) if (o.attributes.sensitive) expect(o.attributes.value).toBeNull();
    expect(cur.json.data.find((o: any) => o.attributes.name === 'string_out').attributes.value).toBe('hello, world');
    const list = await t.api('GET', `/api/v2/state-versions/${svId}/outputs`, { token: reader.token });
    expect(list.status).toBe(200);
  });

  it('gets a sensitive output by id with its value null', async () => {
    const r = await t.api('GET', `/api/v2/state-version-outputs/${secretId}`, { token: reader.token });
    expect(r.status).toBe(200);
    expect(r.json.data.attributes).toMatchObject({ name: 'db_password', sensitive: true, value: null, 'detailed-type': 'string' });
  });

  it('cannot read state versions or the state file (404)', async () => {
    expect((await t.api('GET', `/api/v2/state-versions/${svId}`, { token: reader.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version`, { token: reader.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=prod&filter%5Borganization%5D%5Bname%5D=acme', { token: reader.token })).status).toBe(404);
    // Nothing it can read carries a download URL, and a made-up capability is refused.
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: reader.token });
    expect(cur.text).not.toContain('/state-files/');
    const forged = downloadUrl.replace(/\/state-files\/([^/]+)\/(\d+)\.[^/]+\//, (_m, id, exp) => `/state-files/${id}/${exp}.forged/`);
    const res = await fetch(forged, { headers: { Authorization: `Bearer ${reader.token}` } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { errors: { status: string }[] }).errors[0]!.status).toBe('404');
  });

  it('cannot create state versions, change, lock or delete the workspace (404)', async () => {
    expect((await pushState(t, wsId, stateFixture('outputs-serial2.json'), {}, reader.token)).status).toBe(404);
    expect((await t.api('PATCH', `/api/v2/workspaces/${wsId}`, { token: reader.token, body: { data: { type: 'workspaces', attributes: { description: 'x' } } } })).status).toBe(404);
    expect((await t.api('POST', `/api/v2/workspaces/${wsId}/actions/force-unlock`, { token: reader.token })).status).toBe(404);
    expect((await t.api('DELETE', `/api/v2/workspaces/${wsId}`, { token: reader.token })).status).toBe(404);
  });
});

describe('callers who may read state versions', () => {
  it.each([
    ['an owner', () => owner.token],
    ['a team with manage-workspaces', () => manager.token],
    ['the organization token', () => orgToken],
    ['a site admin', () => t.adminToken],
  ])('%s gets sensitive values in plaintext by id, and the state version', async (_n, token) => {
    const r = await t.api('GET', `/api/v2/state-version-outputs/${secretId}`, { token: token() });
    expect(r.status).toBe(200);
    expect(r.json.data.attributes.value).toBe('hunter2-correct-horse');
    const sv = await t.api('GET', `/api/v2/state-versions/${svId}`, { token: token() });
    expect(sv.status).toBe(200);
    expect(sv.json.data.attributes['hosted-state-download-url']).toMatch(/\/state-files\//);
    // Current outputs stay null for everyone.
    const cur = await t.api('GET', `/api/v2/workspaces/${wsId}/current-state-version-outputs`, { token: token() });
    expect(cur.json.data.find((o: any) => o.id === secretId).attributes.value).toBeNull();
  });
});

describe('callers without access', () => {
  it.each([
    ['a member whose teams hold neither permission', () => plain.token],
    ['a user of another organization', () => stranger.token],
  ])('%s gets 404 everywhere', async (_n, token) => {
    for (const path of [
      `/api/v2/workspaces/${wsId}`,
      '/api/v2/organizations/acme/workspaces',
      `/api/v2/workspaces/${wsId}/current-state-version-outputs`,
      `/api/v2/workspaces/${wsId}/current-state-version`,
      `/api/v2/state-versions/${svId}`,
      `/api/v2/state-versions/${svId}/outputs`,
      `/api/v2/state-version-outputs/${secretId}`,
    ]) {
      const r = await t.api('GET', path, { token: token() });
      expect(r.status, path).toBe(404);
      expect(r.json.errors[0].status).toBe('404');
    }
  });

  it('answers 401 without a token', async () => {
    for (const path of [`/api/v2/workspaces/${wsId}/current-state-version-outputs`, `/api/v2/state-versions/${svId}`, `/api/v2/state-version-outputs/${secretId}`]) {
      expect((await t.api('GET', path, { token: null })).status).toBe(401);
    }
  });
});

describe('deleting a workspace that manages resources', () => {
  it('is for owners only, unless the organization allows force deletes', async () => {
    const ws = await createWorkspace(t, 'acme', 'managed-stuff', manager.token);
    await lock(t, ws.id, manager.token);
    expect((await pushState(t, ws.id, stateFixture('outputs-serial1.json'), {}, manager.token)).status).toBe(201);
    // Not yet processed: the count is unknown, so the delete waits.
    expect((await t.api('DELETE', `/api/v2/workspaces/${ws.id}`, { token: manager.token })).status).toBe(409);
    await t.running.jobs.runDue();
    const refused = await t.api('DELETE', `/api/v2/workspaces/${ws.id}`, { token: manager.token });
    expect(refused.status).toBe(409);
    expect(refused.json.errors[0].detail).toContain('allow-force-delete-workspaces');
    const ws2 = await t.api('GET', `/api/v2/workspaces/${ws.id}`, { token: manager.token });
    expect(ws2.json.data.attributes.permissions['can-force-delete']).toBe(false);
    const patch = await t.api('PATCH', '/api/v2/organizations/acme', {
      token: owner.token,
      body: { data: { type: 'organizations', attributes: { 'allow-force-delete-workspaces': true } } },
    });
    expect(patch.status).toBe(200);
    expect((await t.api('DELETE', `/api/v2/workspaces/${ws.id}`, { token: manager.token })).status).toBe(204);
  });
});
