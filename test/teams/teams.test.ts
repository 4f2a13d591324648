import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accept, createOrg, createTeam, invite, ownersTeam, RFC3339, snapshot } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
type U = { id: string; username: string; token: string };
let owner: U, member: U, outsider: U;

beforeAll(async () => {
  t = await startTestServer();
  owner = await createUserWithToken(t, 'owner');
  member = await createUserWithToken(t, 'member');
  outsider = await createUserWithToken(t, 'outsider');
  await createOrg(t, 'acme', { token: owner.token });
  await createOrg(t, 'elsewhere', { token: outsider.token });
  await accept(t, member.token, await invite(t, owner.token, 'acme', 'member'));
});
afterAll(async () => {
  await t.close();
});

const teamBody = (attributes: Record<string, unknown>) => ({ data: { type: 'teams', attributes } });
const SUPPORTED = ['manage-modules', 'manage-run-tasks', 'manage-vcs-settings', 'manage-workspaces', 'read-state-outputs'];

describe('create, show, update, delete', () => {
  let team: any;

  it('creates a secret team by default with the organization-level permissions it was given', async () => {
    const res = await t.api('POST', '/api/v2/organizations/acme/teams', {
      token: owner.token,
      body: teamBody({
        name: 'platform',
        'organization-access': { 'manage-modules': true, 'read-state-outputs': true, 'manage-policies': false, 'made-up': true },
        'ignored-extra': 1,
      }),
    });
    expect(res.status).toBe(201);
    team = res.json.data;
    expect(team.type).toBe('teams');
    expect(team.id).toMatch(/^team-[A-Za-z0-9]{16}$/);
    expect(team.attributes).toMatchObject({ name: 'platform', 'users-count': 0, visibility: 'secret', 'sso-team-id': null });
    expect(team.attributes['created-at']).toMatch(RFC3339);
    expect(team.attributes['organization-access']).toMatchObject({
      'manage-modules': true,
      'manage-vcs-settings': false,
      'manage-workspaces': false,
      'read-state-outputs': true,
      'manage-policies': false,
      'manage-teams': false,
    });
    expect(team.attributes['organization-access']).not.toHaveProperty('made-up');
    for (const v of Object.values(team.attributes['organization-access'])) expect(typeof v).toBe('boolean');
    for (const v of Object.values(team.attributes.permissions)) expect(typeof v).toBe('boolean');
    expect(team.attributes.permissions).toMatchObject({ 'can-update-membership': true, 'can-destroy': true });
    expect(team.relationships.organization.data).toEqual({ type: 'organizations', id: 'acme' });
    expect(team.relationships.users.data).toEqual([]);
    expect(team.links.self).toBe(`/api/v2/teams/${team.id}`);
  });

  it('refuses bad teams, changing nothing', async () => {
    const before = await snapshot(t);
    const cases: [unknown, string][] = [
      [teamBody({}), '/data/attributes/name'],
      [teamBody({ name: 'Platform' }), '/data/attributes/name'],
      [teamBody({ name: 'owners' }), '/data/attributes/name'],
      [teamBody({ name: 'a b' }), '/data/attributes/name'],
      [teamBody({ name: 7 }), '/data/attributes/name'],
      [teamBody({ name: 'x', visibility: 'public' }), '/data/attributes/visibility'],
      [teamBody({ name: 'x', 'organization-access': { 'manage-modules': 'yes' } }), '/data/attributes/organization-access/manage-modules'],
      [teamBody({ name: 'x', 'organization-access': 'all' }), '/data/attributes/organization-access'],
      [teamBody({ name: 'x', 'organization-access': { 'manage-teams': true } }), '/data/attributes/organization-access/manage-teams'],
      [teamBody({ name: 'x', 'sso-team-id': 'abc' }), '/data/attributes/sso-team-id'],
      [{ data: { type: 'team', attributes: { name: 'x' } } }, '/data/type'],
    ];
    for (const [body, pointer] of cases) {
      const r = await t.api('POST', '/api/v2/organizations/acme/teams', { token: owner.token, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.json.errors[0].source.pointer).toBe(pointer);
    }
    expect((await t.api('POST', '/api/v2/organizations/acme/teams', { token: owner.token, rawBody: '{' })).status).toBe(400);
    expect((await t.api('POST', '/api/v2/organizations/acme/teams', { token: member.token, body: teamBody({ name: 'x' }) })).status).toBe(404);
    expect((await t.api('POST', '/api/v2/organizations/acme/teams', { token: outsider.token, body: teamBody({ name: 'x' }) })).status).toBe(404);
    expect((await t.api('POST', '/api/v2/organizations/acme/teams', { token: null, body: teamBody({ name: 'x' }) })).status).toBe(401);
    expect(await snapshot(t)).toEqual(before);
  });

  it('updates name, visibility and access without data.id; a taken name is 422', async () => {
    const res = await t.api('PATCH', `/api/v2/teams/${team.id}`, {
      token: owner.token,
      body: teamBody({ name: 'platform-eng', visibility: 'organization', 'organization-access': { 'manage-vcs-settings': true, 'manage-modules': false } }),
    });
    expect(res.status).toBe(200);
    expect(res.json.data.attributes).toMatchObject({ name: 'platform-eng', visibility: 'organization' });
    expect(res.json.data.attributes['organization-access']).toMatchObject({ 'manage-vcs-settings': true, 'manage-modules': false, 'read-state-outputs': true });
    await createTeam(t, owner.token, 'acme', 'taken');
    const before = (await t.api('GET', `/api/v2/teams/${team.id}`, { token: owner.token })).json.data;
    for (const [attrs, pointer] of [
      [{ name: 'TAKEN' }, '/data/attributes/name'],
      [{ visibility: 'hidden' }, '/data/attributes/visibility'],
      [{ 'organization-access': { 'manage-agent-pools': true } }, '/data/attributes/organization-access/manage-agent-pools'],
    ] as const) {
      const r = await t.api('PATCH', `/api/v2/teams/${team.id}`, { token: owner.token, body: teamBody(attrs) });
      expect(r.status).toBe(422);
      expect(r.json.errors[0].source.pointer).toBe(pointer);
    }
    expect((await t.api('PATCH', `/api/v2/teams/${team.id}`, { token: member.token, body: teamBody({ name: 'mine' }) })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/teams/${team.id}`, { token: owner.token })).json.data).toEqual(before);
  });

  it('deletes a team (204), and its token stops working', async () => {
    const doomed = await createTeam(t, owner.token, 'acme', 'doomed');
    const tok = (await t.api('POST', `/api/v2/teams/${doomed.id}/authentication-token`, { token: owner.token })).json.data.attributes.token;
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: tok })).status).toBe(200);
    expect((await t.api('DELETE', `/api/v2/teams/${doomed.id}`, { token: member.token })).status).toBe(404);
    expect((await t.api('DELETE', `/api/v2/teams/${doomed.id}`, { token: outsider.token })).status).toBe(404);
    const res = await t.api('DELETE', `/api/v2/teams/${doomed.id}`, { token: owner.token });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await t.api('GET', `/api/v2/teams/${doomed.id}`, { token: owner.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: tok })).status).toBe(401);
    expect((await t.api('DELETE', `/api/v2/teams/${doomed.id}`, { token: owner.token })).status).toBe(404);
  });
});

describe('the owners team', () => {
  it('holds the creator, and cannot be deleted, renamed, emptied or given other access', async () => {
    const owners = await ownersTeam(t, owner.token, 'acme');
    expect(owners.relationships.users.data).toEqual([{ type: 'users', id: owner.id }]);
    expect(owners.attributes.permissions).toMatchObject({ 'can-destroy': false, 'can-update-organization-access': false });
    for (const k of SUPPORTED) expect(owners.attributes['organization-access'][k]).toBe(true);
    const before = await snapshot(t);
    const del = await t.api('DELETE', `/api/v2/teams/${owners.id}`, { token: owner.token });
    expect(del.status).toBe(422);
    expect(del.json.errors[0].detail).toContain('cannot be deleted');
    const rename = await t.api('PATCH', `/api/v2/teams/${owners.id}`, { token: owner.token, body: teamBody({ name: 'admins' }) });
    expect(rename.status).toBe(422);
    expect(rename.json.errors[0].source.pointer).toBe('/data/attributes/name');
    const access = await t.api('PATCH', `/api/v2/teams/${owners.id}`, { token: owner.token, body: teamBody({ 'organization-access': { 'manage-modules': false } }) });
    expect(access.status).toBe(422);
    expect(access.json.errors[0].source.pointer).toBe('/data/attributes/organization-access/manage-modules');
    const empty = await t.api('DELETE', `/api/v2/teams/${owners.id}/relationships/users`, { token: owner.token, body: { data: [{ type: 'users', id: 'owner' }] } });
    expect(empty.status).toBe(422);
    expect(empty.json.errors[0].detail).toContain('cannot be emptied');
    expect(await snapshot(t)).toEqual(before);
    // sending its current values back (as the tfe provider does) is fine
    const same = await t.api('PATCH', `/api/v2/teams/${owners.id}`, { token: owner.token, body: teamBody({ name: 'owners', 'organization-access': { 'manage-modules': true } }) });
    expect(same.status).toBe(200);
  });
});

describe('visibility and listing', () => {
  it('shows secret teams only to owners and their members; other tenants get 404', async () => {
    const secret = await createTeam(t, owner.token, 'acme', 'secret-squad');
    const mine = await createTeam(t, owner.token, 'acme', 'members-secret');
    await t.api('POST', `/api/v2/teams/${mine.id}/relationships/users`, { token: owner.token, body: { data: [{ type: 'users', id: 'member' }] } });
    expect((await t.api('GET', `/api/v2/teams/${secret.id}`, { token: member.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/teams/${mine.id}`, { token: member.token })).status).toBe(200);
    expect((await t.api('GET', `/api/v2/teams/${secret.id}`, { token: outsider.token })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/organizations/acme/teams`, { token: outsider.token })).status).toBe(404);

    const asMember = await t.api('GET', '/api/v2/organizations/acme/teams', { token: member.token });
    const names = asMember.json.data.map((x: any) => x.attributes.name);
    expect(names).toContain('members-secret');
    expect(names).toContain('owners');
    expect(names).not.toContain('secret-squad');
    expect(asMember.json.data.find((x: any) => x.attributes.name === 'owners').attributes.permissions['can-update-membership']).toBe(false);
    const asOwner = await t.api('GET', '/api/v2/organizations/acme/teams', { token: owner.token });
    expect(asOwner.json.data.map((x: any) => x.attributes.name)).toContain('secret-squad');
    expect(asOwner.json.data[0].attributes.name).toBe('owners');
  });

  it('pages, searches with q and filters by filter[names]', async () => {
    const list = async (q: string) => (await t.api('GET', `/api/v2/organizations/acme/teams?${q}`, { token: owner.token })).json;
    const page = await list('page%5Bnumber%5D=2&page%5Bsize%5D=2');
    expect(page.data).toHaveLength(2);
    expect(page.meta.pagination).toMatchObject({ 'current-page': 2, 'page-size': 2 });
    expect((await list('q=SQUAD')).data.map((x: any) => x.attributes.name)).toEqual(['secret-squad']);
    expect((await list('filter%5Bnames%5D=taken,owners')).data.map((x: any) => x.attributes.name)).toEqual(['owners', 'taken']);
    expect((await list('filter[names]=nope')).data).toEqual([]);
  });
});

describe('team tokens', () => {
  it('creates (replacing), reads and deletes a team token; owners only unless members may manage it', async () => {
    const team = await createTeam(t, owner.token, 'acme', 'ci');
    const path = `/api/v2/teams/${team.id}/authentication-token`;
    expect((await t.api('GET', path, { token: owner.token })).status).toBe(404);
    const first = await t.api('POST', path, { token: owner.token, body: { data: { type: 'authentication-tokens', attributes: { description: 'ci' } } } });
    expect(first.status).toBe(201);
    expect(first.json.data).toMatchObject({ type: 'authentication-tokens', attributes: { description: 'ci' } });
    const second = await t.api('POST', path, { token: owner.token });
    expect(second.status).toBe(201);
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: first.json.data.attributes.token })).status).toBe(401);
    const teamToken = second.json.data.attributes.token;
    // a team token sees its organization but cannot manage teams or mint tokens
    expect((await t.api('GET', `/api/v2/teams/${team.id}`, { token: teamToken })).status).toBe(200);
    expect((await t.api('POST', '/api/v2/organizations/acme/teams', { token: teamToken, body: teamBody({ name: 'nope' }) })).status).toBe(404);
    expect((await t.api('POST', path, { token: teamToken })).status).toBe(404);

    await t.api('POST', `/api/v2/teams/${team.id}/relationships/users`, { token: owner.token, body: { data: [{ type: 'users', id: 'member' }] } });
    expect((await t.api('POST', path, { token: member.token })).status).toBe(404);
    await t.api('PATCH', `/api/v2/teams/${team.id}`, { token: owner.token, body: teamBody({ 'allow-member-token-management': true }) });
    expect((await t.api('POST', path, { token: member.token })).status).toBe(201);
    expect((await t.api('DELETE', path, { token: outsider.token })).status).toBe(404);
    expect((await t.api('DELETE', path, { token: owner.token })).status).toBe(204);
    expect((await t.api('DELETE', path, { token: owner.token })).status).toBe(404);
  });
});
