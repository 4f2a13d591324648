import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite, ownersTeam, snapshot } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
type U = { id: string; username: string; token: string };
let owner: U, active: U, invited: U, stranger: U, rival: U;
let ouActive: string, ouInvited: string, ouRival: string;
let team: { id: string };

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'owner');
  active = await createUserWithToken(t, 'Active.User');
  invited = await createUserWithToken(t, 'invited');
  stranger = await createUserWithToken(t, 'stranger');
  rival = await createUserWithToken(t, 'rival');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'rivals', { token: rival.token });
  ouActive = await invite(t, owner.token, 'acme', 'active.user');
  await accept(t, active.token, ouActive);
  ouInvited = await invite(t, owner.token, 'acme', 'invited');
  ouRival = await invite(t, rival.token, 'rivals', 'stranger');
  team = await createTeam(t, owner.token, 'acme', 'devs');
});
afterAll(async () => {
  await t.close();
});

/** Exactly as go-tfe sends it: vnd.api+json, body on DELETE, usernames as ids, no attributes. */
const gotfe = (method: 'POST' | 'DELETE', path: string, data: unknown, token = owner.token) =>
  t.api(method, path, {
    token,
    rawBody: JSON.stringify({ data }),
    headers: { 'Content-Type': 'application/vnd.api+json', Accept: 'application/vnd.api+json' },
  });

const usersOf = async (teamId: string) =>
  ((await t.api('GET', `/api/v2/teams/${teamId}`, { token: owner.token })).json.data.relationships.users.data as { id: string }[]).map((u) => u.id).sort();

describe('by users', () => {
  const path = () => `/api/v2/teams/${team.id}/relationships/users`;

  it('adds a user who accepted, by username in any case or by user id; 204 with no body; repeats are no-ops', async () => {
    const res = await gotfe('POST', path(), [{ type: 'users', id: 'ACTIVE.USER' }]);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await usersOf(team.id)).toEqual([active.id]);
    expect((await gotfe('POST', path(), [{ type: 'users', id: active.id }, { type: 'users', id: 'active.user' }])).status).toBe(204);
    expect(await usersOf(team.id)).toEqual([active.id]);
    const shown = await t.api('GET', `/api/v2/teams/${team.id}?include=users`, { token: owner.token });
    expect(shown.json.data.attributes['users-count']).toBe(1);
    expect(shown.json.data.relationships['organization-memberships'].data).toEqual([{ type: 'organization-memberships', id: ouActive }]);
    expect(shown.json.included.map((u: any) => [u.type, u.attributes.username])).toEqual([['users', 'Active.User']]);
  });

  it('refuses invited-only users, non-members and unknown users, all or nothing', async () => {
    const before = await snapshot(t);
    const inv = await gotfe('POST', path(), [{ type: 'users', id: 'owner' }, { type: 'users', id: 'invited' }]);
    expect(inv.status).toBe(422);
    expect(inv.json.errors[0].source.pointer).toBe('/data/1/id');
    expect(inv.json.errors[0].detail).toContain('accept their invitation');
    const outsider = await gotfe('POST', path(), [{ type: 'users', id: 'stranger' }]);
    expect(outsider.status).toBe(422);
    expect(outsider.json.errors[0].source.pointer).toBe('/data/0/id');
    const ghost = await gotfe('POST', path(), [{ type: 'users', id: 'owner' }, { type: 'users', id: 'ghost' }]);
    expect(ghost.status).toBe(404);
    expect(ghost.json.errors[0].detail).toContain('ghost');
    expect(await snapshot(t)).toEqual(before);
    expect(await usersOf(team.id)).toEqual([active.id]);
  });

  it('removes the user from this team only; removing a non-member is a no-op; unknown users are 404', async () => {
    await gotfe('POST', path(), [{ type: 'users', id: 'owner' }]);
    const res = await gotfe('DELETE', path(), [{ type: 'users', id: 'active.user' }, { type: 'users', id: 'owner' }]);
    expect(res.status).toBe(204);
    expect(await usersOf(team.id)).toEqual([]);
    // still in the organization and its owners team
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: active.token })).status).toBe(200);
    expect((await ownersTeam(t, owner.token, 'acme')).relationships.users.data).toEqual([{ type: 'users', id: owner.id }]);
    expect((await gotfe('DELETE', path(), [{ type: 'users', id: 'stranger' }])).status).toBe(204);
    const before = await snapshot(t);
    expect((await gotfe('DELETE', path(), [{ type: 'users', id: 'nobody-at-all' }])).status).toBe(404);
    expect(await snapshot(t)).toEqual(before);
  });
});

describe('by organization memberships', () => {
  const path = () => `/api/v2/teams/${team.id}/relationships/organization-memberships`;

  it('adds invited and active members by ou- id, and removes them', async () => {
    const res = await gotfe('POST', path(), [{ type: 'organization-memberships', id: ouInvited }, { type: 'organization-memberships', id: ouActive }]);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await usersOf(team.id)).toEqual([active.id, invited.id].sort());
    const shown = await t.api('GET', `/api/v2/teams/${team.id}?include=organization-memberships`, { token: owner.token });
    expect(shown.json.included.map((m: any) => [m.id, m.attributes.status]).sort()).toEqual([[ouActive, 'active'], [ouInvited, 'invited']].sort());
    // the invited member is on the team but still sees nothing until they accept
    expect((await t.api('GET', `/api/v2/teams/${team.id}`, { token: invited.token })).status).toBe(404);

    const del = await gotfe('DELETE', path(), [{ type: 'organization-memberships', id: ouInvited }]);
    expect(del.status).toBe(204);
    expect(await usersOf(team.id)).toEqual([active.id]);
    expect((await t.api('GET', `/api/v2/organization-memberships/${ouInvited}`, { token: owner.token })).json.data.attributes.status).toBe('invited');
  });

  it("is 404 for another organization's membership or an unknown one, changing nothing", async () => {
    const before = await snapshot(t);
    for (const method of ['POST', 'DELETE'] as const) {
      const other = await gotfe(method, path(), [{ type: 'organization-memberships', id: ouInvited }, { type: 'organization-memberships', id: ouRival }]);
      expect(other.status).toBe(404);
      expect((await gotfe(method, path(), [{ type: 'organization-memberships', id: 'ou-missing' }])).status).toBe(404);
    }
    expect(await snapshot(t)).toEqual(before);
  });
});

describe('bad bodies and callers', () => {
  const cases: [string, string, unknown, string][] = [
    ['users', 'a data object', { data: { type: 'users', id: 'owner' } }, '/data'],
    ['users', 'an empty data array', { data: [] }, '/data'],
    ['users', 'no data', {}, '/data'],
    ['users', 'the membership type', { data: [{ type: 'organization-memberships', id: 'x' }] }, '/data/0/type'],
    ['users', 'a missing id', { data: [{ type: 'users' }] }, '/data/0/id'],
    ['users', 'a numeric id', { data: [{ type: 'users', id: 5 }] }, '/data/0/id'],
    ['organization-memberships', 'the users type', { data: [{ type: 'users', id: 'owner' }] }, '/data/0/type'],
    ['organization-memberships', 'a non-object item', { data: ['ou-x'] }, '/data/0'],
    ['organization-memberships', 'an empty id', { data: [{ type: 'organization-memberships', id: '' }] }, '/data/0/id'],
  ];
  it.each(cases)('%s: %s is 422 with a pointer (POST and DELETE), changing nothing', async (kind, _n, body, pointer) => {
    const before = await snapshot(t);
    for (const method of ['POST', 'DELETE']) {
      const res = await t.api(method, `/api/v2/teams/${team.id}/relationships/${kind}`, { token: owner.token, body });
      expect(res.status).toBe(422);
      expect(res.json.errors[0].source.pointer).toBe(pointer);
    }
    expect(await snapshot(t)).toEqual(before);
  });

  it('rejects malformed JSON, unknown teams, strangers, members and bad tokens', async () => {
    const before = await snapshot(t);
    const path = `/api/v2/teams/${team.id}/relationships/users`;
    expect((await t.api('POST', path, { token: owner.token, rawBody: '[{' })).status).toBe(400);
    expect((await gotfe('POST', '/api/v2/teams/team-missing/relationships/users', [{ type: 'users', id: 'owner' }])).status).toBe(404);
    expect((await gotfe('POST', path, [{ type: 'users', id: 'owner' }], stranger.token)).status).toBe(404);
    expect((await gotfe('POST', path, [{ type: 'users', id: 'owner' }], rival.token)).status).toBe(404);
    expect((await gotfe('POST', path, [{ type: 'users', id: 'owner' }], active.token)).status).toBe(404);
    expect((await gotfe('DELETE', path, [{ type: 'users', id: 'active.user' }], 'no.terrace.token')).status).toBe(401);
    expect((await t.api('POST', path, { token: null, body: { data: [{ type: 'users', id: 'owner' }] } })).status).toBe(401);
    expect(await snapshot(t)).toEqual(before);
  });

  it('lets the organization token manage membership', async () => {
    const orgToken = (await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner.token })).json.data.attributes.token;
    expect((await gotfe('POST', `/api/v2/teams/${team.id}/relationships/users`, [{ type: 'users', id: 'owner' }], orgToken)).status).toBe(204);
    expect(await usersOf(team.id)).toContain(owner.id);
  });
});

describe('a go-tfe-shaped client end to end', () => {
  it('creates, reads, lists, updates, renames and deletes an organization, and adds and removes members both ways', async () => {
    const h = { 'Content-Type': 'application/vnd.api+json', Accept: 'application/vnd.api+json' };
    const call = (method: string, path: string, body?: unknown) =>
      t.api(method, `/api/v2/${path}`, { token: owner.token, headers: h, ...(body === undefined ? { rawBody: method === 'GET' ? undefined : '' } : { rawBody: JSON.stringify(body) }) });

    const created = await call('POST', 'organizations', { data: { type: 'organizations', attributes: { name: 'gotfe-org', email: 'gotfe@example.com' } } });
    expect(created.status).toBe(201);
    expect((await call('GET', 'organizations/gotfe-org')).json.data.attributes.email).toBe('gotfe@example.com');
    const listed = await call('GET', 'organizations?page%5Bnumber%5D=1&page%5Bsize%5D=100&q=gotfe');
    expect(listed.json.data.map((o: any) => o.id)).toEqual(['gotfe-org']);
    expect(listed.json.meta.pagination['total-count']).toBe(1);
    const updated = await call('PATCH', 'organizations/gotfe-org', { data: { type: 'organizations', attributes: { email: 'new@example.com' } } });
    expect(updated.json.data.attributes.email).toBe('new@example.com');
    const renamed = await call('PATCH', 'organizations/gotfe-org', { data: { type: 'organizations', attributes: { name: 'gotfe-renamed' } } });
    expect(renamed.json.data.id).toBe('gotfe-renamed');
    expect((await call('GET', 'organizations/gotfe-renamed/entitlement-set')).json.data.attributes.teams).toBe(true);

    const teamRes = await call('POST', 'organizations/gotfe-renamed/teams', { data: { type: 'teams', attributes: { name: 'core', visibility: 'organization', 'organization-access': { 'manage-workspaces': true } } } });
    expect(teamRes.status).toBe(201);
    const teamId = teamRes.json.data.id;
    const mem = await call('POST', 'organizations/gotfe-renamed/organization-memberships', { data: { type: 'organization-memberships', attributes: { email: 'invited@example.com' } } });
    expect(mem.status).toBe(201);
    expect((await call('POST', `teams/${teamId}/relationships/organization-memberships`, { data: [{ type: 'organization-memberships', id: mem.json.data.id }] })).status).toBe(204);
    expect((await call('POST', `teams/${teamId}/relationships/users`, { data: [{ type: 'users', id: 'owner' }] })).status).toBe(204);
    const withUsers = await call('GET', `teams/${teamId}?include=users`);
    expect(withUsers.json.included.map((u: any) => u.attributes.username).sort()).toEqual(['invited', 'owner']);
    expect((await call('DELETE', `teams/${teamId}/relationships/users`, { data: [{ type: 'users', id: 'owner' }] })).status).toBe(204);
    expect((await call('DELETE', `teams/${teamId}/relationships/organization-memberships`, { data: [{ type: 'organization-memberships', id: mem.json.data.id }] })).status).toBe(204);
    expect((await call('GET', `teams/${teamId}`)).json.data.attributes['users-count']).toBe(0);

    // go-tfe sends DELETE with Content-Type but no body
    expect((await call('DELETE', 'organizations/gotfe-renamed')).status).toBe(204);
    expect((await call('GET', 'organizations/gotfe-renamed')).status).toBe(404);
  });
});
