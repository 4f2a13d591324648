import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite, RFC3339 } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock } from '../helpers/state.js';

let t: TestServer;
let owner: { id: string; token: string };
let manager: { id: string; token: string };
let reader: { id: string; token: string };
let plain: { id: string; token: string };
let stranger: { id: string; token: string };

const body = (attributes: Record<string, unknown>) => ({ data: { type: 'workspaces', attributes } });

async function countWorkspaces(): Promise<number> {
  const r = await t.running.deps.db.selectFrom('workspaces').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'ws-owner');
  manager = await createUserWithToken(t, 'ws-manager');
  reader = await createUserWithToken(t, 'ws-reader');
  plain = await createUserWithToken(t, 'ws-plain');
  stranger = await createUserWithToken(t, 'ws-stranger');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'localco', { token: owner.token, attributes: { 'default-execution-mode': 'local' } });
  await createOrg(t, 'other', { token: stranger.token });
  const managers = await createTeam(t, owner.token, 'acme', 'managers', { 'organization-access': { 'manage-workspaces': true } });
  const readers = await createTeam(t, owner.token, 'acme', 'readers', { 'organization-access': { 'read-state-outputs': true } });
  const nobody = await createTeam(t, owner.token, 'acme', 'nobody');
  await accept(t, manager.token, await invite(t, owner.token, 'acme', 'ws-manager', [managers.id]));
  await accept(t, reader.token, await invite(t, owner.token, 'acme', 'ws-reader', [readers.id]));
  await accept(t, plain.token, await invite(t, owner.token, 'acme', 'ws-plain', [nobody.id]));
});

afterAll(async () => {
  await t?.close();
});

describe('create', () => {
  it('answers 201 with go-tfe\'s Workspace shape and exact JSON types', async () => {
    const r = await t.api('POST', '/api/v2/organizations/acme/workspaces', {
      token: owner.token,
      body: body({ name: 'network-prod', description: 'VPCs', 'working-directory': 'envs/prod', 'auto-apply': true, 'terraform-version': '1.9.8' }),
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('content-type')).toBe('application/vnd.api+json');
    const d = r.json.data;
    expect(d.type).toBe('workspaces');
    expect(d.id).toMatch(/^ws-[A-Za-z0-9]{16}$/);
    expect(d.attributes).toMatchObject({
      name: 'network-prod',
      description: 'VPCs',
      'working-directory': 'envs/prod',
      'execution-mode': 'remote',
      operations: true,
      'auto-apply': true,
      'terraform-version': '1.9.8',
      'vcs-repo': null,
      locked: false,
      'resource-count': 0,
      environment: 'default',
      source: 'tfe-api',
      'tag-names': [],
      'trigger-prefixes': [],
      'queue-all-runs': false,
      'speculative-enabled': true,
      'global-remote-state': false,
      'setting-overwrites': { 'execution-mode': false, 'agent-pool': false },
      actions: { 'is-destroyable': true },
    });
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.attributes['updated-at']).toMatch(RFC3339);
    for (const v of Object.values(d.attributes.permissions)) expect(typeof v).toBe('boolean');
    expect(d.attributes.permissions).toMatchObject({
      'can-update': true,
      'can-destroy': true,
      'can-lock': true,
      'can-unlock': true,
      'can-read-state-versions': true,
      'can-read-state-outputs': true,
      'can-create-state-versions': true,
      'can-queue-run': false,
    });
    expect(d.relationships.organization).toEqual({ data: { id: 'acme', type: 'organizations' } });
    expect(d.relationships['current-state-version']).toEqual({ data: null, links: { related: `/api/v2/workspaces/${d.id}/current-state-version` } });
    expect(d.relationships['locked-by']).toBeUndefined();
    expect(d.links.self).toBe('/api/v2/organizations/acme/workspaces/network-prod');
  });

  it('defaults terraform-version to "latest" and the execution mode to the organization\'s default', async () => {
    const a = await createWorkspace(t, 'acme', 'defaults', owner.token);
    expect(a.attributes['terraform-version']).toBe('latest');
    const l = await createWorkspace(t, 'localco', 'state-only', owner.token);
    expect(l.attributes['execution-mode']).toBe('local');
    expect(l.attributes.operations).toBe(false);
    expect(l.attributes['setting-overwrites']).toEqual({ 'execution-mode': false, 'agent-pool': false });

    // An explicit mode overrides the organization's; setting-overwrites false returns to it.
    const p = await t.api('PATCH', `/api/v2/workspaces/${l.id}`, { token: owner.token, body: body({ 'execution-mode': 'remote' }) });
    expect(p.status).toBe(200);
    expect(p.json.data.attributes['execution-mode']).toBe('remote');
    expect(p.json.data.attributes['setting-overwrites']['execution-mode']).toBe(true);
    const back = await t.api('PATCH', `/api/v2/workspaces/${l.id}`, { token: owner.token, body: body({ 'setting-overwrites': { 'execution-mode': false } }) });
    expect(back.json.data.attributes['execution-mode']).toBe('local');
  });

  it('takes vcs-repo as go-tfe sends it ("" for unset pointers), merges it on update and removes it with null', async () => {
    const c = await t.api('POST', '/api/v2/organizations/acme/workspaces', {
      token: owner.token,
      body: body({
        name: 'vcs-app',
        'file-triggers-enabled': false,
        'vcs-repo': { identifier: 'acme/app', branch: '', 'oauth-token-id': 'ot-abc123', 'github-app-installation-id': '', 'ingress-submodules': false },
      }),
    });
    expect(c.status).toBe(201);
    const id = c.json.data.id;
    expect(c.json.data.attributes['vcs-repo']).toMatchObject({
      identifier: 'acme/app',
      'display-identifier': 'acme/app',
      branch: '',
      'oauth-token-id': 'ot-abc123',
      'ingress-submodules': false,
      'tags-regex': null,
    });
    expect(c.json.data.attributes['vcs-repo-identifier']).toBe('acme/app');

    const merged = await t.api('PATCH', '/api/v2/organizations/acme/workspaces/vcs-app', { token: owner.token, body: body({ 'vcs-repo': { 'tags-regex': '^v\\d+' } }) });
    expect(merged.status).toBe(200);
    expect(merged.json.data.attributes['vcs-repo']).toMatchObject({ identifier: 'acme/app', 'oauth-token-id': 'ot-abc123', 'tags-regex': '^v\\d+' });

    // go-tfe's RemoveVCSConnection: exactly this body, no id.
    const removed = await t.api('PATCH', `/api/v2/workspaces/${id}`, { token: owner.token, body: { data: { type: 'workspaces', attributes: { 'vcs-repo': null } } } });
    expect(removed.status).toBe(200);
    expect(removed.json.data.attributes['vcs-repo']).toBeNull();
    expect(removed.json.data.attributes['vcs-repo-identifier']).toBeNull();
  });

  it.each([
    [body({ name: 'bad name!' }), '/data/attributes/name'],
    [body({ name: 'x'.repeat(91) }), '/data/attributes/name'],
    [body({}), '/data/attributes/name'],
    [body({ name: 'ok', 'execution-mode': 'cloud' }), '/data/attributes/execution-mode'],
    [body({ name: 'ok', 'execution-mode': 'agent' }), '/data/attributes/agent-pool-id'],
    [body({ name: 'ok', 'agent-pool-id': 'apool-x' }), '/data/attributes/agent-pool-id'],
    [body({ name: 'ok', 'working-directory': '../escape' }), '/data/attributes/working-directory'],
    [body({ name: 'ok', 'auto-apply': 'yes' }), '/data/attributes/auto-apply'],
    [body({ name: 'ok', 'vcs-repo': { identifier: 'acme/app' } }), '/data/attributes/vcs-repo/oauth-token-id'],
    [body({ name: 'ok', 'vcs-repo': { identifier: 'noslash', 'oauth-token-id': 'ot-1' } }), '/data/attributes/vcs-repo/identifier'],
    [body({ name: 'ok', 'vcs-repo': { identifier: 'a/b', 'oauth-token-id': 'ot-1', 'tags-regex': 'v.*' }, 'trigger-prefixes': ['x'] }), '/data/attributes/vcs-repo/tags-regex'],
    [{ data: { type: 'organizations', attributes: { name: 'ok' } } }, '/data/type'],
  ])('refuses bad input with 422 and a pointer, creating nothing (%#)', async (b, pointer) => {
    const before = await countWorkspaces();
    const r = await t.api('POST', '/api/v2/organizations/acme/workspaces', { token: owner.token, body: b });
    expect(r.status).toBe(422);
    expect(r.json.errors.map((e: any) => e.source?.pointer)).toContain(pointer);
    expect(r.json.errors[0].status).toBe('422');
    expect(await countWorkspaces()).toBe(before);
  });

  it('refuses a duplicate name, case-insensitively', async () => {
    await createWorkspace(t, 'acme', 'dup-me', owner.token);
    const r = await t.api('POST', '/api/v2/organizations/acme/workspaces', { token: owner.token, body: body({ name: 'DUP-me' }) });
    expect(r.status).toBe(422);
    expect(r.json.errors[0].source.pointer).toBe('/data/attributes/name');
    expect(r.json.errors[0].detail).toContain('already been taken');
  });

  it('lets managers create; readers, plain members and strangers get 404; no token is 401', async () => {
    expect((await t.api('POST', '/api/v2/organizations/acme/workspaces', { token: manager.token, body: body({ name: 'by-manager' }) })).status).toBe(201);
    const before = await countWorkspaces();
    for (const u of [reader, plain, stranger]) {
      expect((await t.api('POST', '/api/v2/organizations/acme/workspaces', { token: u.token, body: body({ name: 'nope' }) })).status).toBe(404);
    }
    expect((await t.api('POST', '/api/v2/organizations/acme/workspaces', { token: null, body: body({ name: 'nope' }) })).status).toBe(401);
    expect((await t.api('POST', '/api/v2/organizations/ghost/workspaces', { token: owner.token, body: body({ name: 'nope' }) })).status).toBe(404);
    expect(await countWorkspaces()).toBe(before);
  });
});

describe('list and show', () => {
  beforeAll(async () => {
    for (const n of ['list-a', 'list-b', 'list-c']) await createWorkspace(t, 'other', n, stranger.token);
  });

  it('pages with percent-encoded page params and carries meta.pagination', async () => {
    const r = await t.api('GET', '/api/v2/organizations/other/workspaces?page%5Bnumber%5D=2&page%5Bsize%5D=2', { token: stranger.token });
    expect(r.status).toBe(200);
    expect(r.json.data.map((w: any) => w.attributes.name)).toEqual(['list-c']);
    expect(r.json.meta.pagination).toEqual({ 'current-page': 2, 'page-size': 2, 'prev-page': 1, 'next-page': null, 'total-pages': 2, 'total-count': 3 });
  });

  it('filters with search[name]', async () => {
    const r = await t.api('GET', '/api/v2/organizations/other/workspaces?search%5Bname%5D=B', { token: stranger.token });
    expect(r.json.data.map((w: any) => w.attributes.name)).toEqual(['list-b']);
  });

  it('shows by organization and name and by id, with the same document', async () => {
    const byName = await t.api('GET', '/api/v2/organizations/other/workspaces/LIST-A', { token: stranger.token });
    expect(byName.status).toBe(200);
    const byId = await t.api('GET', `/api/v2/workspaces/${byName.json.data.id}`, { token: stranger.token });
    expect(byId.status).toBe(200);
    expect(byId.json.data).toEqual(byName.json.data);
  });

  it('answers 404 for unknown and invisible workspaces and 401 without a token', async () => {
    const ws = await t.api('GET', '/api/v2/organizations/other/workspaces/list-a', { token: stranger.token });
    expect((await t.api('GET', '/api/v2/workspaces/ws-doesnotexist0000', { token: owner.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/other/workspaces/missing', { token: stranger.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/workspaces/${ws.json.data.id}`, { token: owner.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/other/workspaces', { token: owner.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/workspaces/${ws.json.data.id}`, { token: null })).status).toBe(401);
  });

  it('shows workspaces to readers of outputs (without write permissions) and hides them from plain members', async () => {
    const r = await t.api('GET', '/api/v2/organizations/acme/workspaces/network-prod', { token: reader.token });
    expect(r.status).toBe(200);
    expect(r.json.data.attributes.permissions).toMatchObject({
      'can-update': false,
      'can-destroy': false,
      'can-lock': false,
      'can-read-state-versions': false,
      'can-read-state-outputs': true,
      'can-create-state-versions': false,
    });
    expect((await t.api('GET', '/api/v2/organizations/acme/workspaces', { token: plain.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme/workspaces/network-prod', { token: plain.token })).status).toBe(404);
  });
});

describe('update and delete', () => {
  it('renames through either address, and changes links.self', async () => {
    const ws = await createWorkspace(t, 'acme', 'old-name', owner.token);
    const r = await t.api('PATCH', '/api/v2/organizations/acme/workspaces/old-name', { token: manager.token, body: body({ name: 'new-name', description: 'renamed' }) });
    expect(r.status).toBe(200);
    expect(r.json.data.id).toBe(ws.id);
    expect(r.json.data.links.self).toBe('/api/v2/organizations/acme/workspaces/new-name');
    expect(r.json.data.attributes.description).toBe('renamed');
    expect((await t.api('GET', '/api/v2/organizations/acme/workspaces/old-name', { token: owner.token })).status).toBe(404);
    const dup = await t.api('PATCH', `/api/v2/workspaces/${ws.id}`, { token: owner.token, body: body({ name: 'network-prod' }) });
    expect(dup.status).toBe(422);
  });

  it('keeps readers from changing or deleting (404) and deletes for managers (204)', async () => {
    const ws = await createWorkspace(t, 'acme', 'doomed', owner.token);
    expect((await t.api('PATCH', `/api/v2/workspaces/${ws.id}`, { token: reader.token, body: body({ description: 'x' }) })).status).toBe(404);
    expect((await t.api('DELETE', `/api/v2/workspaces/${ws.id}`, { token: reader.token })).status).toBe(404);
    const d = await t.api('DELETE', `/api/v2/workspaces/${ws.id}`, { token: manager.token });
    expect(d.status).toBe(204);
    expect(d.text).toBe('');
    expect((await t.api('GET', `/api/v2/workspaces/${ws.id}`, { token: owner.token })).status).toBe(404);
    expect((await t.api('DELETE', `/api/v2/workspaces/${ws.id}`, { token: owner.token })).status).toBe(404);

    await createWorkspace(t, 'acme', 'doomed-by-name', owner.token);
    expect((await t.api('DELETE', '/api/v2/organizations/acme/workspaces/doomed-by-name', { token: owner.token })).status).toBe(204);
  });
});

describe('locking', () => {
  it('locks, refuses a second lock with 409, and unlocks', async () => {
    const ws = await createWorkspace(t, 'acme', 'lockable', owner.token);
    const l = await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/lock`, { token: manager.token, body: { reason: 'Locked by Terraform' } });
    expect(l.status).toBe(200);
    expect(l.json.data.attributes.locked).toBe(true);
    expect(l.json.data.relationships['locked-by']).toEqual({ data: { id: manager.id, type: 'users' } });
    expect((await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/lock`, { token: owner.token })).status).toBe(409);
    // Only the holder unlocks; anyone who manages may force-unlock.
    expect((await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/unlock`, { token: owner.token })).status).toBe(409);
    const u = await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/unlock`, { token: manager.token });
    expect(u.status).toBe(200);
    expect(u.json.data.attributes.locked).toBe(false);
    expect((await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/unlock`, { token: manager.token })).status).toBe(409);
    await lock(t, ws.id, manager.token);
    const f = await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/force-unlock`, { token: owner.token });
    expect(f.status).toBe(200);
    expect(f.json.data.attributes.locked).toBe(false);
    expect((await t.api('POST', `/api/v2/workspaces/${ws.id}/actions/lock`, { token: reader.token })).status).toBe(404);
  });
});
