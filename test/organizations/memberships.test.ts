import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, createTeam, ownersTeam, RFC3339, snapshot } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
type U = { id: string; username: string; token: string };
let owner: U, dana: U, eve: U, frank: U;

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'owner');
  dana = await createUserWithToken(t, 'dana');
  eve = await createUserWithToken(t, 'eve');
  frank = await createUserWithToken(t, 'frank');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'other', { token: eve.token });
});
afterAll(async () => {
  await t.close();
});

const inviteBody = (email: unknown, teams?: unknown[]) => ({
  data: { type: 'organization-memberships', attributes: { email }, ...(teams ? { relationships: { teams: { data: teams } } } : {}) },
});

describe('invite, accept, list, remove', () => {
  let ouDana: string;
  let devs: { id: string };

  it('invites an existing user by email (status invited), into teams right away', async () => {
    devs = await createTeam(t, owner.token, 'acme', 'devs');
    const res = await t.api('POST', '/api/v2/organizations/acme/organization-memberships', {
      token: owner.token,
      body: inviteBody('DANA@example.com', [{ type: 'teams', id: devs.id }]),
    });
    expect(res.status).toBe(201);
    const d = res.json.data;
    expect(d.type).toBe('organization-memberships');
    expect(d.id).toMatch(/^ou-[A-Za-z0-9]{16}$/);
    expect(d.attributes).toEqual({ status: 'invited', email: 'dana@example.com', 'created-at': expect.stringMatching(RFC3339) });
    expect(d.relationships.user.data).toEqual({ type: 'users', id: dana.id });
    expect(d.relationships.organization.data).toEqual({ type: 'organizations', id: 'acme' });
    expect(d.relationships.teams.data).toEqual([{ type: 'teams', id: devs.id }]);
    ouDana = d.id;

    // invited is not a member yet: the organization stays invisible
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: dana.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations', { token: dana.token })).json.data).toEqual([]);
  });

  it('refuses bad invitations, changing nothing', async () => {
    const before = await snapshot(t);
    const cases: [unknown, number, string | undefined][] = [
      [inviteBody('nobody@example.com'), 422, '/data/attributes/email'],
      [inviteBody('dana@example.com'), 422, '/data/attributes/email'],
      [inviteBody('owner@example.com'), 422, '/data/attributes/email'],
      [inviteBody('not-an-email'), 422, '/data/attributes/email'],
      [inviteBody(42), 422, '/data/attributes/email'],
      [{ data: { type: 'organization-memberships', attributes: {} } }, 422, '/data/attributes/email'],
      [{ data: { type: 'users', attributes: { email: 'frank@example.com' } } }, 422, '/data/type'],
      [inviteBody('frank@example.com', [{ type: 'teams', id: 'team-nope' }]), 422, '/data/relationships/teams/data/0/id'],
      [inviteBody('frank@example.com', [{ type: 'users', id: 'x' }]), 422, '/data/relationships/teams/data/0/type'],
      [{ data: { type: 'organization-memberships', attributes: { email: 'frank@example.com' }, relationships: { teams: { data: 'x' } } } }, 422, '/data/relationships/teams/data'],
    ];
    for (const [body, status, pointer] of cases) {
      const r = await t.api('POST', '/api/v2/organizations/acme/organization-memberships', { token: owner.token, body });
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.json.errors[0].source?.pointer).toBe(pointer);
    }
    // a team of another organization
    const theirs = await ownersTeam(t, eve.token, 'other');
    const cross = await t.api('POST', '/api/v2/organizations/acme/organization-memberships', {
      token: owner.token,
      body: inviteBody('frank@example.com', [{ type: 'teams', id: theirs.id }]),
    });
    expect(cross.status).toBe(422);
    expect((await t.api('POST', '/api/v2/organizations/acme/organization-memberships', { token: eve.token, body: inviteBody('frank@example.com') })).status).toBe(404);
    expect((await t.api('POST', '/api/v2/organizations/acme/organization-memberships', { token: null, body: inviteBody('frank@example.com') })).status).toBe(401);
    expect(await snapshot(t)).toEqual(before);
  });

  it('lets the invited user find the invitation and accept it', async () => {
    const mine = await t.api('GET', '/api/v2/organization-memberships', { token: dana.token });
    expect(mine.status).toBe(200);
    expect(mine.json.data.map((m: any) => [m.id, m.attributes.status])).toEqual([[ouDana, 'invited']]);
    expect(mine.json.meta.pagination['total-count']).toBe(1);
    expect((await t.api('GET', `/api/v2/organization-memberships/${ouDana}?include=user`, { token: dana.token })).json.included[0].type).toBe('users');

    // nobody else may accept it
    const before = await snapshot(t);
    expect((await t.api('POST', `/api/v2/organization-memberships/${ouDana}/actions/accept`, { token: owner.token })).status).toBe(404);
    expect((await t.api('POST', `/api/v2/organization-memberships/${ouDana}/actions/accept`)).status).toBe(404);
    expect((await t.api('POST', '/api/v2/organization-memberships/ou-nope/actions/accept', { token: dana.token })).status).toBe(404);
    expect(await snapshot(t)).toEqual(before);

    const res = await t.api('POST', `/api/v2/organization-memberships/${ouDana}/actions/accept`, { token: dana.token });
    expect(res.status).toBe(200);
    expect(res.json.data.attributes.status).toBe('active');
    expect((await t.api('POST', `/api/v2/organization-memberships/${ouDana}/actions/accept`, { token: dana.token })).json.data.attributes.status).toBe('active');
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: dana.token })).status).toBe(200);
  });

  it('lists an organization’s memberships with paging, filter[status], filter[email] and q', async () => {
    await t.api('POST', '/api/v2/organizations/acme/organization-memberships', { token: owner.token, body: inviteBody('frank@example.com') });
    const all = await t.api('GET', '/api/v2/organizations/acme/organization-memberships?include=', { token: owner.token });
    expect(all.status).toBe(200);
    expect(all.json.data.map((m: any) => [m.attributes.email, m.attributes.status])).toEqual([
      ['dana@example.com', 'active'],
      ['frank@example.com', 'invited'],
      ['owner@example.com', 'active'],
    ]);
    const emails = async (q: string) =>
      (await t.api('GET', `/api/v2/organizations/acme/organization-memberships?${q}`, { token: owner.token })).json.data.map((m: any) => m.attributes.email);
    expect(await emails('filter%5Bstatus%5D=invited')).toEqual(['frank@example.com']);
    expect(await emails('filter[email]=owner@example.com,DANA@example.com')).toEqual(['dana@example.com', 'owner@example.com']);
    expect(await emails('q=fra')).toEqual(['frank@example.com']);
    expect(await emails('page%5Bsize%5D=1&page%5Bnumber%5D=3')).toEqual(['owner@example.com']);
    const bad = await t.api('GET', '/api/v2/organizations/acme/organization-memberships?filter[status]=gone', { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0].source).toEqual({ parameter: 'filter[status]' });
    // plain members and strangers may not list members
    expect((await t.api('GET', '/api/v2/organizations/acme/organization-memberships', { token: dana.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme/organization-memberships', { token: eve.token })).status).toBe(404);
  });

  it('shows a membership to its user and to owners only', async () => {
    expect((await t.api('GET', `/api/v2/organization-memberships/${ouDana}`, { token: owner.token })).status).toBe(200);
    expect((await t.api('GET', `/api/v2/organization-memberships/${ouDana}`, { token: eve.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/organization-memberships/${ouDana}`, { token: frank.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organization-memberships/ou-missing', { token: owner.token })).status).toBe(404);
  });

  it('removes a membership: off the organization and all its teams', async () => {
    const before = await snapshot(t);
    expect((await t.api('DELETE', `/api/v2/organization-memberships/${ouDana}`, { token: eve.token })).status).toBe(404);
    expect(await snapshot(t)).toEqual(before);
    const res = await t.api('DELETE', `/api/v2/organization-memberships/${ouDana}`, { token: owner.token });
    expect(res.status).toBe(204);
    expect((await t.api('GET', `/api/v2/teams/${devs.id}`, { token: owner.token })).json.data.relationships.users.data).toEqual([]);
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: dana.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/organization-memberships/${ouDana}`, { token: owner.token })).status).toBe(404);
  });

  it('refuses to remove the last active owner, changing nothing', async () => {
    const mine = (await t.api('GET', '/api/v2/organization-memberships', { token: owner.token })).json.data;
    const ouOwner = mine.find((m: any) => m.relationships.organization.data.id === 'acme').id;
    const before = await snapshot(t);
    const res = await t.api('DELETE', `/api/v2/organization-memberships/${ouOwner}`, { token: owner.token });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].detail).toContain('owners team cannot be emptied');
    expect(await snapshot(t)).toEqual(before);
  });

  it('lets a user decline an invitation by deleting it; team and organization tokens have no own memberships', async () => {
    const mine = (await t.api('GET', '/api/v2/organization-memberships?filter%5Bstatus%5D=invited', { token: frank.token })).json.data;
    expect(mine).toHaveLength(1);
    expect((await t.api('DELETE', `/api/v2/organization-memberships/${mine[0].id}`, { token: frank.token })).status).toBe(204);
    const orgToken = (await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner.token })).json.data.attributes.token;
    expect((await t.api('GET', '/api/v2/organization-memberships', { token: orgToken })).status).toBe(404);
    // but the organization token manages memberships
    const invited = await t.api('POST', '/api/v2/organizations/acme/organization-memberships', { token: orgToken, body: inviteBody('frank@example.com') });
    expect(invited.status).toBe(201);
    expect((await t.api('GET', `/api/v2/organization-memberships/${invited.json.data.id}`, { token: orgToken })).status).toBe(200);
  });
});
