import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consumableOrganizationIds } from '../../src/organizations/access.js';
import { resolvePrincipal } from '../../src/identity/principal.js';
import { accept, createOrg, createTeam, invite, RFC3339, snapshot } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let owner: { id: string; username: string; token: string };
let member: { id: string; username: string; token: string };
let stranger: { id: string; username: string; token: string };
const ext: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'owner');
  member = await createUserWithToken(t, 'member');
  stranger = await createUserWithToken(t, 'stranger');
  for (const name of ['producer', 'consumer', 'bystander']) {
    ext[name] = (await createOrg(t, name, { token: owner.token })).attributes['external-id'];
  }
  await accept(t, member.token, await invite(t, owner.token, 'consumer', 'member'));
  await createOrg(t, 'strangers', { token: stranger.token });
});
afterAll(async () => {
  await t.close();
});

describe('agent pools', () => {
  it('creates and lists pools; owners only; bad input changes nothing', async () => {
    const res = await t.api('POST', '/api/v2/organizations/consumer/agent-pools', {
      token: owner.token,
      body: { data: { type: 'agent-pools', attributes: { name: 'Build Pool', 'organization-scoped': false } } },
    });
    expect(res.status).toBe(201);
    expect(res.json.data).toMatchObject({ type: 'agent-pools', attributes: { name: 'Build Pool', 'organization-scoped': false, 'agent-count': 0 } });
    expect(res.json.data.id).toMatch(/^apool-/);
    expect(res.json.data.attributes['created-at']).toMatch(RFC3339);
    expect(res.json.data.relationships.organization.data).toEqual({ type: 'organizations', id: 'consumer' });

    const before = await snapshot(t);
    const bad: [unknown, number, string | undefined][] = [
      [{ data: { type: 'agent-pools', attributes: { name: 'build pool' } } }, 422, '/data/attributes/name'],
      [{ data: { type: 'agent-pools', attributes: {} } }, 422, '/data/attributes/name'],
      [{ data: { type: 'agent-pools', attributes: { name: ' padded ' } } }, 422, '/data/attributes/name'],
      [{ data: { type: 'agent-pools', attributes: { name: 'x', 'organization-scoped': 'no' } } }, 422, '/data/attributes/organization-scoped'],
      [{ data: { type: 'agent_pools', attributes: { name: 'x' } } }, 422, '/data/type'],
    ];
    for (const [body, status, pointer] of bad) {
      const r = await t.api('POST', '/api/v2/organizations/consumer/agent-pools', { token: owner.token, body });
      expect(r.status).toBe(status);
      expect(r.json.errors[0].source?.pointer).toBe(pointer);
    }
    expect((await t.api('POST', '/api/v2/organizations/consumer/agent-pools', { token: member.token, body: { data: { type: 'agent-pools', attributes: { name: 'm' } } } })).status).toBe(404);
    expect((await t.api('POST', '/api/v2/organizations/consumer/agent-pools', { token: stranger.token, body: { data: { type: 'agent-pools', attributes: { name: 's' } } } })).status).toBe(404);
    expect(await snapshot(t)).toEqual(before);

    const list = await t.api('GET', '/api/v2/organizations/consumer/agent-pools?page%5Bsize%5D=5', { token: member.token });
    expect(list.status).toBe(200);
    expect(list.json.data.map((p: any) => p.attributes.name)).toEqual(['Build Pool']);
    expect(list.json.meta.pagination['total-count']).toBe(1);
    expect((await t.api('GET', `/api/v2/agent-pools/${res.json.data.id}`, { token: member.token })).status).toBe(200);
    expect((await t.api('GET', `/api/v2/agent-pools/${res.json.data.id}`, { token: stranger.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/consumer/agent-pools', { token: stranger.token })).status).toBe(404);
  });
});

describe('module producers', () => {
  it('lets a site admin set consumers (TFE admin API) and members see their producers', async () => {
    const empty = await t.api('GET', '/api/v2/organizations/consumer/relationships/module-producers', { token: member.token });
    expect(empty.status).toBe(200);
    expect(empty.json.data).toEqual([]);
    expect(empty.json.meta.pagination).toMatchObject({ 'current-page': 1, 'page-size': 20, 'total-count': 0 });

    const set = await t.api('PATCH', '/api/v2/admin/organizations/producer/relationships/module-consumers', {
      body: { data: [{ type: 'organizations', id: 'consumer' }, { type: 'organizations', id: 'STRANGERS' }] },
    });
    expect(set.status).toBe(204);
    const consumers = await t.api('GET', '/api/v2/admin/organizations/producer/relationships/module-consumers');
    expect(consumers.json.data.map((o: any) => o.id)).toEqual(['consumer', 'strangers']);

    const producers = await t.api('GET', '/api/v2/organizations/consumer/relationships/module-producers?page%5Bnumber%5D=1&page%5Bsize%5D=1', { token: member.token });
    expect(producers.json.data).toEqual([
      { id: 'producer', type: 'organizations', attributes: { name: 'producer', 'external-id': ext.producer }, links: { self: '/api/v2/organizations/producer' } },
    ]);
    expect(producers.json.meta.pagination['total-count']).toBe(1);
    expect((await t.api('GET', '/api/v2/organizations/consumer/relationships/module-producers', { token: stranger.token })).status).toBe(404);
  });

  it('makes producer modules readable to consumer members (consumableOrganizationIds)', async () => {
    const db = t.running.deps.db;
    const asMember = await resolvePrincipal(t.running.deps, member.token);
    expect(new Set(await consumableOrganizationIds(db, asMember))).toEqual(new Set([ext.consumer, ext.producer]));
    const asOwner = await resolvePrincipal(t.running.deps, owner.token);
    expect(new Set(await consumableOrganizationIds(db, asOwner))).toEqual(new Set([ext.producer, ext.consumer, ext.bystander]));
    expect(await consumableOrganizationIds(db, await resolvePrincipal(t.running.deps, t.adminToken))).toBe('all');
    expect(await consumableOrganizationIds(db, null)).toEqual([]);
    // an invited (not yet accepted) user reads nothing
    const newbie = await createUserWithToken(t, 'newbie');
    await invite(t, owner.token, 'consumer', 'newbie');
    expect(await consumableOrganizationIds(db, await resolvePrincipal(t.running.deps, newbie.token))).toEqual([]);
  });

  it('refuses bad consumer lists and non-admins, changing nothing; an empty list clears', async () => {
    const before = await snapshot(t);
    const path = '/api/v2/admin/organizations/producer/relationships/module-consumers';
    const bad: [unknown, string][] = [
      [{ data: { type: 'organizations', id: 'consumer' } }, '/data'],
      [{ data: [{ type: 'teams', id: 'consumer' }] }, '/data/0/type'],
      [{ data: [{ type: 'organizations', id: 'consumer' }, { type: 'organizations', id: 'ghost' }] }, '/data/1/id'],
      [{ data: [{ type: 'organizations', id: 'producer' }] }, '/data/0/id'],
      [{ data: [{ type: 'organizations' }] }, '/data/0/id'],
    ];
    for (const [body, pointer] of bad) {
      const r = await t.api('PATCH', path, { body });
      expect(r.status).toBe(422);
      expect(r.json.errors[0].source.pointer).toBe(pointer);
    }
    expect((await t.api('PATCH', path, { token: owner.token, body: { data: [] } })).status).toBe(404);
    expect((await t.api('GET', path, { token: owner.token })).status).toBe(404);
    expect((await t.api('PATCH', '/api/v2/admin/organizations/ghost/relationships/module-consumers', { body: { data: [] } })).status).toBe(404);
    expect(await snapshot(t)).toEqual(before);
    expect((await t.api('PATCH', path, { body: { data: [] } })).status).toBe(204);
    expect((await t.api('GET', path)).json.data).toEqual([]);
  });
});

describe('data retention policy', () => {
  const drp = (org: string) => `/api/v2/organizations/${org}/relationships/data-retention-policy`;

  it('is 404 with neither an explicit policy nor an installation default', async () => {
    const res = await t.api('GET', drp('bystander'), { token: owner.token });
    expect(res.status).toBe(404);
    expect(res.json.errors[0].detail).toContain('no data retention policy');
  });

  it('sets, replaces, shows on the organization, and deletes an explicit policy (go-tfe shapes)', async () => {
    const set = await t.api('POST', drp('bystander'), {
      token: owner.token,
      body: { data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 33 } } },
    });
    expect(set.status).toBe(201);
    expect(set.json.data).toMatchObject({
      type: 'data-retention-policy-delete-olders',
      attributes: { 'delete-older-than-n-days': 33 },
      relationships: { target: { data: { type: 'organizations', id: 'bystander' } } },
    });
    expect(set.json.data.id).toMatch(/^drp-/);
    const org = await t.api('GET', '/api/v2/organizations/bystander', { token: owner.token });
    expect(org.json.data.relationships['data-retention-policy'].data).toEqual({ type: 'data-retention-policy-delete-olders', id: set.json.data.id });

    const again = await t.api('POST', drp('bystander'), {
      token: owner.token,
      body: { data: { type: 'data-retention-policy-delete-olders', attributes: { deleteOlderThanNDays: 10 } } },
    });
    expect(again.status).toBe(200);
    expect(again.json.data).toMatchObject({ id: set.json.data.id, attributes: { 'delete-older-than-n-days': 10 } });

    const dont = await t.api('POST', drp('bystander'), { token: owner.token, body: { data: { type: 'data-retention-policy-dont-deletes' } } });
    expect(dont.status).toBe(200);
    expect(dont.json.data).toMatchObject({ type: 'data-retention-policy-dont-deletes', attributes: {} });
    expect((await t.api('GET', drp('bystander'), { token: owner.token })).json.data.type).toBe('data-retention-policy-dont-deletes');

    // go-tfe's deprecated SetDataRetentionPolicy: PATCH with the legacy type, answered in it
    const legacy = await t.api('PATCH', drp('bystander'), { token: owner.token, body: { data: { type: 'data-retention-policies', attributes: { 'delete-older-than-n-days': 5 } } } });
    expect(legacy.status).toBe(200);
    expect(legacy.json.data).toMatchObject({ type: 'data-retention-policies', attributes: { 'delete-older-than-n-days': 5 } });

    const del = await t.api('DELETE', drp('bystander'), { token: owner.token });
    expect(del.status).toBe(204);
    expect((await t.api('GET', drp('bystander'), { token: owner.token })).status).toBe(404);
    const after = await t.api('GET', '/api/v2/organizations/bystander', { token: owner.token });
    expect(after.json.data.relationships['data-retention-policy'].data).toBeNull();
    expect((await t.api('DELETE', drp('bystander'), { token: owner.token })).status).toBe(404);
  });

  it('refuses bad policies and non-owners, changing nothing', async () => {
    await t.api('POST', drp('consumer'), { token: owner.token, body: { data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 7 } } } });
    const before = await snapshot(t);
    const bad: [unknown, string][] = [
      [{ data: { type: 'data-retention-policy-delete-olders', attributes: {} } }, '/data/attributes/delete-older-than-n-days'],
      [{ data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 0 } } }, '/data/attributes/delete-older-than-n-days'],
      [{ data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': '30' } } }, '/data/attributes/delete-older-than-n-days'],
      [{ data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 2.5 } } }, '/data/attributes/delete-older-than-n-days'],
      [{ data: { type: 'data-retention-policy-keep-forevers', attributes: {} } }, '/data/type'],
      [{ data: [] }, '/data'],
    ];
    for (const [body, pointer] of bad) {
      const r = await t.api('POST', drp('consumer'), { token: owner.token, body });
      expect(r.status).toBe(422);
      expect(r.json.errors[0].source.pointer).toBe(pointer);
    }
    const body = { data: { type: 'data-retention-policy-dont-deletes' } };
    expect((await t.api('POST', drp('consumer'), { token: member.token, body })).status).toBe(404);
    expect((await t.api('DELETE', drp('consumer'), { token: member.token })).status).toBe(404);
    expect((await t.api('GET', drp('consumer'), { token: stranger.token })).status).toBe(404);
    expect((await t.api('GET', drp('consumer'), { token: member.token })).json.data.attributes['delete-older-than-n-days']).toBe(7);
    expect(await snapshot(t)).toEqual(before);
  });

  it('falls back to the installation default from TERRACE_DATA_RETENTION_DAYS', async () => {
    const t2 = await startTestServer({ TERRACE_DATA_RETENTION_DAYS: '30' });
    try {
      const u = await createUserWithToken(t2, 'u');
      await createOrg(t2, 'defaulted', { token: u.token });
      const res = await t2.api('GET', drp('defaulted'), { token: u.token });
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({ type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': 30 } });
      expect(res.json.data.id).toMatch(/^drp-/);
      const org = await t2.api('GET', '/api/v2/organizations/defaulted', { token: u.token });
      expect(org.json.data.relationships['data-retention-policy'].data).toEqual({ type: 'data-retention-policy-delete-olders', id: res.json.data.id });
      await t2.api('POST', drp('defaulted'), { token: u.token, body: { data: { type: 'data-retention-policy-dont-deletes' } } });
      expect((await t2.api('GET', drp('defaulted'), { token: u.token })).json.data.type).toBe('data-retention-policy-dont-deletes');
      expect((await t2.api('DELETE', drp('defaulted'), { token: u.token })).status).toBe(204);
      expect((await t2.api('GET', drp('defaulted'), { token: u.token })).json.data.attributes['delete-older-than-n-days']).toBe(30);
      // no explicit policy left to delete
      expect((await t2.api('DELETE', drp('defaulted'), { token: u.token })).status).toBe(404);
    } finally {
      await t2.close();
    }
  });
});

describe('organization token', () => {
  it('creates (replacing the old), reads, uses and deletes the one organization token', async () => {
    const path = '/api/v2/organizations/consumer/authentication-token';
    expect((await t.api('GET', path, { token: owner.token })).status).toBe(404);
    const first = await t.api('POST', path, { token: owner.token });
    expect(first.status).toBe(201);
    expect(first.json.data.type).toBe('authentication-tokens');
    expect(first.json.data.attributes.token).toMatch(/\.terrace\./);
    const expiry = new Date(t.clock.now().getTime() + 86_400_000).toISOString();
    // go-tfe's options struct has no JSON:API type: "type" arrives empty
    const second = await t.api('POST', path, { token: owner.token, body: { data: { type: '', attributes: { 'expired-at': expiry } } } });
    expect(second.status).toBe(201);
    expect(second.json.data.attributes['expired-at']).toBe(expiry);
    expect((await t.api('GET', '/api/v2/organizations/consumer', { token: first.json.data.attributes.token })).status).toBe(401);
    const orgToken = second.json.data.attributes.token;

    // it reads everything in its organization and manages teams, but nothing else
    const seen = await t.api('GET', '/api/v2/organizations/consumer', { token: orgToken });
    expect(seen.status).toBe(200);
    expect(seen.json.data.attributes.permissions).toMatchObject({ 'can-create-team': true, 'can-update': false, 'can-destroy': false, 'can-update-api-token': false });
    expect((await t.api('GET', '/api/v2/organizations', { token: orgToken })).json.data.map((o: any) => o.id)).toEqual(['consumer']);
    expect((await t.api('GET', '/api/v2/organizations/producer', { token: orgToken })).status).toBe(404);
    const team = await createTeam(t, orgToken, 'consumer', 'made-by-org-token');
    expect(team.type).toBe('teams');
    expect((await t.api('POST', path, { token: orgToken })).status).toBe(404);
    expect((await t.api('POST', `/api/v2/teams/${team.id}/authentication-token`, { token: orgToken })).status).toBe(404);
    expect((await t.api('PATCH', '/api/v2/organizations/consumer', { token: orgToken, body: { data: { type: 'organizations', attributes: { email: 'x@y.example' } } } })).status).toBe(404);

    const read = await t.api('GET', path, { token: owner.token });
    expect(read.json.data).toMatchObject({ id: second.json.data.id, attributes: { token: null } });
    expect(read.json.data.attributes['last-used-at']).toMatch(RFC3339);

    const before = await snapshot(t);
    for (const body of [{ data: { type: 'teams' } }, { data: { attributes: { 'expired-at': 'tomorrow' } } }, { data: { attributes: { 'expired-at': '2000-01-01T00:00:00Z' } } }]) {
      const r = await t.api('POST', path, { token: owner.token, body });
      expect(r.status).toBe(422);
    }
    expect((await t.api('POST', path, { token: member.token })).status).toBe(404);
    expect((await t.api('DELETE', path, { token: member.token })).status).toBe(404);
    expect(await snapshot(t)).toEqual(before);

    expect((await t.api('DELETE', path, { token: owner.token })).status).toBe(204);
    expect((await t.api('GET', '/api/v2/organizations/consumer', { token: orgToken })).status).toBe(401);
    expect((await t.api('DELETE', path, { token: owner.token })).status).toBe(404);
  });
});
