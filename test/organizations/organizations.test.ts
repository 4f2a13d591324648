import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerOrganizationDeleteHook } from '../../src/organizations/hooks.js';
import { accept, createOrg, createTeam, invite, ownersTeam, RFC3339, snapshot } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let alice: { id: string; username: string; token: string };
let bob: { id: string; username: string; token: string };
beforeAll(async () => {
  t = await startTestServer();
  alice = await createUserWithToken(t, 'alice');
  bob = await createUserWithToken(t, 'bob');
});
afterAll(async () => {
  await t.close();
});

const orgBody = (attributes: Record<string, unknown>) => ({ data: { type: 'organizations', attributes } });

describe('create', () => {
  it('creates an organization with every attribute at its default, owned by its creator', async () => {
    const res = await t.api('POST', '/api/v2/organizations', {
      token: alice.token,
      body: orgBody({ name: 'Acme', email: 'ops@acme.example.com', 'not-a-terrace-attribute': 7 }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/vnd.api+json');
    const d = res.json.data;
    expect(d.type).toBe('organizations');
    expect(d.id).toBe('Acme');
    expect(d.links.self).toBe('/api/v2/organizations/Acme');
    expect(d.attributes['external-id']).toMatch(/^org-[A-Za-z0-9]{16}$/);
    expect(d.attributes['created-at']).toMatch(RFC3339);
    expect(d.attributes).toMatchObject({
      name: 'Acme',
      email: 'ops@acme.example.com',
      'session-timeout': 20160,
      'session-remember': 20160,
      'collaborator-auth-policy': 'password',
      'cost-estimation-enabled': false,
      'send-passing-statuses-for-untriggered-speculative-plans': false,
      'aggregated-commit-status-enabled': true,
      'speculative-plan-management-enabled': true,
      'owners-team-saml-role-id': null,
      'allow-force-delete-workspaces': false,
      'default-execution-mode': 'remote',
      'saml-enabled': false,
    });
    expect(d.attributes).not.toHaveProperty('not-a-terrace-attribute');
    // Self-hosted: HCP returns these two only on its hosted service.
    expect(d.attributes).not.toHaveProperty('two-factor-conformant');
    expect(d.attributes).not.toHaveProperty('assessments-enforced');
    for (const v of Object.values(d.attributes.permissions)) expect(typeof v).toBe('boolean');
    expect(d.attributes.permissions).toMatchObject({ 'can-update': true, 'can-destroy': true, 'can-create-team': true });
    expect(d.relationships['entitlement-set']).toEqual({
      data: { type: 'entitlement-sets', id: d.attributes['external-id'] },
      links: { related: '/api/v2/organizations/Acme/entitlement-set' },
    });
    expect(d.relationships['default-agent-pool']).toEqual({ data: null });
    expect(d.relationships['data-retention-policy'].data).toBeNull();
    expect(res.json.included[0].type).toBe('entitlement-sets');

    const owners = await ownersTeam(t, alice.token, 'acme');
    expect(owners.attributes.name).toBe('owners');
    expect(owners.relationships.users.data).toEqual([{ type: 'users', id: alice.id }]);
    const mine = await t.api('GET', '/api/v2/organization-memberships', { token: alice.token });
    expect(mine.json.data.map((m: any) => [m.relationships.organization.data.id, m.attributes.status])).toEqual([['Acme', 'active']]);
  });

  it('accepts every optional attribute', async () => {
    const res = await t.api('POST', '/api/v2/organizations', {
      token: alice.token,
      body: orgBody({
        name: 'full_options-1',
        email: 'a@b.example',
        'session-timeout': 60,
        'session-remember': 120,
        'collaborator-auth-policy': 'two_factor_mandatory',
        'cost-estimation-enabled': false,
        'send-passing-statuses-for-untriggered-speculative-plans': false,
        'aggregated-commit-status-enabled': false,
        'speculative-plan-management-enabled': false,
        'owners-team-saml-role-id': 'admins',
        'assessments-enforced': true,
        'allow-force-delete-workspaces': true,
        'default-execution-mode': 'local',
      }),
    });
    expect(res.status).toBe(201);
    expect(res.json.data.attributes).toMatchObject({
      'session-timeout': 60,
      'session-remember': 120,
      'collaborator-auth-policy': 'two_factor_mandatory',
      'aggregated-commit-status-enabled': false,
      'speculative-plan-management-enabled': false,
      'owners-team-saml-role-id': 'admins',
      'allow-force-delete-workspaces': true,
      'default-execution-mode': 'local',
    });
  });

  it('refuses a duplicate name case-insensitively', async () => {
    const before = await snapshot(t);
    const res = await t.api('POST', '/api/v2/organizations', { token: bob.token, body: orgBody({ name: 'ACME', email: 'x@y.example' }) });
    expect(res.status).toBe(422);
    expect(res.json.errors[0]).toMatchObject({ status: '422', source: { pointer: '/data/attributes/name' } });
    expect(res.json.errors[0].detail).toContain('already been taken');
    expect(await snapshot(t)).toEqual(before);
  });

  const bad: [string, unknown, string][] = [
    ['a non-object body', [], ''],
    ['no data', { nope: 1 }, '/data'],
    ['data as an array', { data: [] }, '/data'],
    ['the wrong type', { data: { type: 'teams', attributes: { name: 'x1', email: 'a@b.example' } } }, '/data/type'],
    ['attributes as a string', { data: { type: 'organizations', attributes: 'x' } }, '/data/attributes'],
    ['a missing name', orgBody({ email: 'a@b.example' }), '/data/attributes/name'],
    ['a missing email', orgBody({ name: 'x2' }), '/data/attributes/email'],
    ['a numeric name', orgBody({ name: 12, email: 'a@b.example' }), '/data/attributes/name'],
    ['a name with a slash', orgBody({ name: 'a/b', email: 'a@b.example' }), '/data/attributes/name'],
    ['a name with a space', orgBody({ name: 'a b', email: 'a@b.example' }), '/data/attributes/name'],
    ['a name starting with a dash', orgBody({ name: '-ab', email: 'a@b.example' }), '/data/attributes/name'],
    ['a 65-character name', orgBody({ name: 'a'.repeat(65), email: 'a@b.example' }), '/data/attributes/name'],
    ['a bad email', orgBody({ name: 'x3', email: 'nope' }), '/data/attributes/email'],
    ['session-timeout as a string', orgBody({ name: 'x4', email: 'a@b.example', 'session-timeout': '20' }), '/data/attributes/session-timeout'],
    ['session-timeout of 0', orgBody({ name: 'x4', email: 'a@b.example', 'session-timeout': 0 }), '/data/attributes/session-timeout'],
    ['a fractional session-remember', orgBody({ name: 'x4', email: 'a@b.example', 'session-remember': 1.5 }), '/data/attributes/session-remember'],
    ['an unknown auth policy', orgBody({ name: 'x5', email: 'a@b.example', 'collaborator-auth-policy': 'sso' }), '/data/attributes/collaborator-auth-policy'],
    ['an unknown execution mode', orgBody({ name: 'x6', email: 'a@b.example', 'default-execution-mode': 'cloud' }), '/data/attributes/default-execution-mode'],
    ['a boolean as a string', orgBody({ name: 'x7', email: 'a@b.example', 'assessments-enforced': 'true' }), '/data/attributes/assessments-enforced'],
    ['a null boolean', orgBody({ name: 'x7', email: 'a@b.example', 'allow-force-delete-workspaces': null }), '/data/attributes/allow-force-delete-workspaces'],
    ['cost estimation (not enabled in site administration)', orgBody({ name: 'x8', email: 'a@b.example', 'cost-estimation-enabled': true }), '/data/attributes/cost-estimation-enabled'],
    ['agent mode without a pool', orgBody({ name: 'x9', email: 'a@b.example', 'default-execution-mode': 'agent' }), '/data/attributes/default-agent-pool-id'],
    ['agent mode with a pool it cannot own yet', orgBody({ name: 'x9', email: 'a@b.example', 'default-execution-mode': 'agent', 'default-agent-pool-id': 'apool-nope' }), '/data/attributes/default-agent-pool-id'],
    ['a pool id with remote mode', orgBody({ name: 'x9', email: 'a@b.example', 'default-agent-pool-id': 'apool-nope' }), '/data/attributes/default-agent-pool-id'],
    ['a malformed default-agent-pool relationship', { data: { type: 'organizations', attributes: { name: 'x9', email: 'a@b.example' }, relationships: { 'default-agent-pool': { data: { type: 'pools', id: 'apool-x' } } } } }, '/data/relationships/default-agent-pool/data/type'],
  ];
  it.each(bad)('rejects %s with 422 and a pointer, changing nothing', async (_n, body, pointer) => {
    const before = await snapshot(t);
    const res = await t.api('POST', '/api/v2/organizations', { token: alice.token, body });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].status).toBe('422');
    expect(res.json.errors[0].source?.pointer).toBe(pointer);
    expect(res.json.errors[0].detail.length).toBeGreaterThan(10);
    expect(await snapshot(t)).toEqual(before);
  });

  it('reports both broken rules when passing statuses are turned on (self-hosted, and the aggregation conflict)', async () => {
    const before = await snapshot(t);
    const res = await t.api('POST', '/api/v2/organizations', {
      token: alice.token,
      body: orgBody({ name: 'x10', email: 'a@b.example', 'send-passing-statuses-for-untriggered-speculative-plans': true, 'aggregated-commit-status-enabled': true }),
    });
    expect(res.status).toBe(422);
    const pointers = res.json.errors.map((e: any) => e.source.pointer);
    expect(pointers).toEqual([
      '/data/attributes/send-passing-statuses-for-untriggered-speculative-plans',
      '/data/attributes/aggregated-commit-status-enabled',
    ]);
    expect(res.json.errors[0].detail).toContain('self-hosted');
    expect(res.json.errors[1].detail).toContain('cannot be true while');
    expect(await snapshot(t)).toEqual(before);
  });

  it('rejects malformed JSON with 400 and an empty body with 422', async () => {
    const before = await snapshot(t);
    const res = await t.api('POST', '/api/v2/organizations', { token: alice.token, rawBody: '{"data":' });
    expect(res.status).toBe(400);
    const empty = await t.api('POST', '/api/v2/organizations', { token: alice.token, rawBody: '', headers: { 'Content-Type': 'application/vnd.api+json' } });
    expect(empty.status).toBe(422);
    expect(await snapshot(t)).toEqual(before);
  });

  it('is 401 without or with a bad token, and 404 for team and organization tokens', async () => {
    const before = await snapshot(t);
    expect((await t.api('POST', '/api/v2/organizations', { token: null, body: orgBody({ name: 'nope1', email: 'a@b.example' }) })).status).toBe(401);
    expect((await t.api('POST', '/api/v2/organizations', { token: 'x.terrace.y', body: orgBody({ name: 'nope1', email: 'a@b.example' }) })).status).toBe(401);
    const orgToken = await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: alice.token });
    expect(orgToken.status).toBe(201);
    const owners = await ownersTeam(t, alice.token, 'acme');
    const teamToken = await t.api('POST', `/api/v2/teams/${owners.id}/authentication-token`, { token: alice.token });
    expect(teamToken.status).toBe(201);
    const mid = await snapshot(t);
    for (const token of [orgToken.json.data.attributes.token, teamToken.json.data.attributes.token]) {
      const res = await t.api('POST', '/api/v2/organizations', { token, body: orgBody({ name: 'nope2', email: 'a@b.example' }) });
      expect(res.status).toBe(404);
    }
    expect((await snapshot(t)).organizations).toBe(before.organizations);
    expect(await snapshot(t)).toEqual(mid);
  });
});

describe('show and list', () => {
  beforeAll(async () => {
    await createOrg(t, 'bobs-org', { token: bob.token, attributes: { email: 'bob@shop.example' } });
    await createOrg(t, 'zeta', { token: bob.token, attributes: { email: 'z@other.example' } });
  });

  it('shows an organization by name in any case, with include=entitlement_set', async () => {
    const res = await t.api('GET', '/api/v2/organizations/ACME?include=entitlement_set', { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.json.data.id).toBe('Acme');
    expect(res.json.included).toHaveLength(1);
    expect(res.json.included[0]).toMatchObject({ type: 'entitlement-sets', id: res.json.data.attributes['external-id'] });
    const plain = await t.api('GET', '/api/v2/organizations/acme?include=', { token: alice.token });
    expect(plain.json.included).toBeUndefined();
  });

  it("hides other tenants' organizations behind 404, and wants a valid token", async () => {
    expect((await t.api('GET', '/api/v2/organizations/bobs-org', { token: alice.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/no-such-org', { token: alice.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: null })).status).toBe(401);
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: 'bad.terrace.token' })).status).toBe(401);
    expect((await t.api('GET', '/api/v2/organizations/bobs-org')).status).toBe(200); // the site admin
  });

  it('lists only the caller’s organizations, all of them and without meta when no page parameter is given', async () => {
    const res = await t.api('GET', '/api/v2/organizations', { token: bob.token });
    expect(res.status).toBe(200);
    expect(res.json.data.map((o: any) => o.id)).toEqual(['bobs-org', 'zeta']);
    expect(res.json.meta).toBeUndefined();
    expect(res.json.links).toBeUndefined();
    const admin = await t.api('GET', '/api/v2/organizations');
    expect(admin.json.data.map((o: any) => o.id)).toEqual(expect.arrayContaining(['Acme', 'bobs-org', 'zeta', 'full_options-1']));
  });

  it('pages when either page parameter is given, raw or percent-encoded', async () => {
    for (const q of ['page%5Bsize%5D=1&page%5Bnumber%5D=2', 'page[size]=1&page[number]=2']) {
      const res = await t.api('GET', `/api/v2/organizations?${q}`, { token: bob.token });
      expect(res.json.data.map((o: any) => o.id)).toEqual(['zeta']);
      expect(res.json.meta.pagination).toEqual({ 'current-page': 2, 'page-size': 1, 'prev-page': 1, 'next-page': null, 'total-pages': 2, 'total-count': 2 });
    }
    const numberOnly = await t.api('GET', '/api/v2/organizations?page%5Bnumber%5D=1', { token: bob.token });
    expect(numberOnly.json.meta.pagination['page-size']).toBe(20);
    const bad = await t.api('GET', '/api/v2/organizations?page[size]=-1', { token: bob.token });
    expect(bad.status).toBe(400);
  });

  it('filters with q (name or email, taking precedence), q[name] and q[email] (both must match)', async () => {
    const names = async (q: string) => (await t.api('GET', `/api/v2/organizations?${q}`, { token: bob.token })).json.data.map((o: any) => o.id);
    expect(await names('q=shop')).toEqual(['bobs-org']);
    expect(await names('q=ZET')).toEqual(['zeta']);
    expect(await names('q=zeta&q%5Bname%5D=bobs')).toEqual(['zeta']);
    expect(await names('q[name]=e&q[email]=other')).toEqual(['zeta']);
    expect(await names('q%5Bname%5D=bobs&q%5Bemail%5D=other')).toEqual([]);
    expect(await names('q=%25')).toEqual([]);
  });
});

describe('update', () => {
  it('updates settings without data.id (as go-tfe sends) and renames, keeping everything attached', async () => {
    await createOrg(t, 'renameme', { token: alice.token });
    const owners = await ownersTeam(t, alice.token, 'renameme');
    const tok = await t.api('POST', `/api/v2/teams/${owners.id}/authentication-token`, { token: alice.token });
    const teamToken = tok.json.data.attributes.token;

    const res = await t.api('PATCH', '/api/v2/organizations/renameme', {
      token: alice.token,
      body: orgBody({ name: 'Renamed', email: 'new@x.example', 'session-timeout': 30, 'allow-force-delete-workspaces': true }),
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ id: 'Renamed', links: { self: '/api/v2/organizations/Renamed' } });
    expect(res.json.data.attributes).toMatchObject({ name: 'Renamed', email: 'new@x.example', 'session-timeout': 30, 'session-remember': 20160, 'allow-force-delete-workspaces': true });
    expect((await t.api('GET', '/api/v2/organizations/renameme', { token: alice.token })).status).toBe(404);
    const again = await t.api('GET', '/api/v2/organizations/renamed', { token: teamToken });
    expect(again.status).toBe(200);
    expect((await ownersTeam(t, alice.token, 'Renamed')).id).toBe(owners.id);
    // a case-only rename of itself is not a clash
    const caseOnly = await t.api('PATCH', '/api/v2/organizations/renamed', { token: alice.token, body: orgBody({ name: 'RENAMED' }) });
    expect(caseOnly.status).toBe(200);
    expect(caseOnly.json.data.id).toBe('RENAMED');
  });

  it('refuses a taken name, bad values and self-hosted rules, changing nothing', async () => {
    const before = (await t.api('GET', '/api/v2/organizations/acme', { token: alice.token })).json.data;
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'BOBS-ORG' }, '/data/attributes/name'],
      [{ name: 'bad name' }, '/data/attributes/name'],
      [{ email: '' }, '/data/attributes/email'],
      [{ 'session-remember': -5 }, '/data/attributes/session-remember'],
      [{ 'default-execution-mode': 'AGENT' }, '/data/attributes/default-execution-mode'],
      [{ 'cost-estimation-enabled': true }, '/data/attributes/cost-estimation-enabled'],
      [{ 'send-passing-statuses-for-untriggered-speculative-plans': true, 'aggregated-commit-status-enabled': false }, '/data/attributes/send-passing-statuses-for-untriggered-speculative-plans'],
      [{ 'default-execution-mode': 'agent' }, '/data/attributes/default-agent-pool-id'],
      [{ 'default-agent-pool-id': 'apool-x' }, '/data/attributes/default-agent-pool-id'],
    ];
    for (const [attributes, pointer] of cases) {
      const res = await t.api('PATCH', '/api/v2/organizations/acme', { token: alice.token, body: orgBody(attributes) });
      expect(res.status, JSON.stringify(attributes)).toBe(422);
      expect(res.json.errors[0].source.pointer).toBe(pointer);
    }
    const wrongType = await t.api('PATCH', '/api/v2/organizations/acme', { token: alice.token, body: { data: { type: 'organization', attributes: {} } } });
    expect(wrongType.status).toBe(422);
    const after = (await t.api('GET', '/api/v2/organizations/acme', { token: alice.token })).json.data;
    expect(after).toEqual(before);
  });

  it('lets only owners update: members see 404 and nothing changes', async () => {
    const ou = await invite(t, alice.token, 'acme', 'bob');
    await accept(t, bob.token, ou);
    const before = (await t.api('GET', '/api/v2/organizations/acme', { token: alice.token })).json.data;
    const asMember = await t.api('GET', '/api/v2/organizations/acme', { token: bob.token });
    expect(asMember.status).toBe(200);
    expect(asMember.json.data.attributes.permissions).toMatchObject({ 'can-update': false, 'can-destroy': false, 'can-create-team': false, 'can-traverse': true });
    const res = await t.api('PATCH', '/api/v2/organizations/acme', { token: bob.token, body: orgBody({ email: 'evil@x.example' }) });
    expect(res.status).toBe(404);
    expect((await t.api('DELETE', '/api/v2/organizations/acme', { token: bob.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme', { token: alice.token })).json.data).toEqual(before);
    // a team with manage-modules shows it in the permissions
    const team = await createTeam(t, alice.token, 'acme', 'publishers', { 'organization-access': { 'manage-modules': true } });
    await t.api('POST', `/api/v2/teams/${team.id}/relationships/users`, { token: alice.token, body: { data: [{ type: 'users', id: 'bob' }] } });
    const perms = (await t.api('GET', '/api/v2/organizations/acme', { token: bob.token })).json.data.attributes.permissions;
    expect(perms).toMatchObject({ 'can-create-module': true, 'can-update': false, 'can-create-workspace': false });
  });

  it('sets default-execution-mode agent with a pool of this organization (attribute or relationship), and clears it', async () => {
    const pool = await t.api('POST', '/api/v2/organizations/acme/agent-pools', { token: alice.token, body: { data: { type: 'agent-pools', attributes: { name: 'runners' } } } });
    expect(pool.status).toBe(201);
    const poolId = pool.json.data.id;
    await createOrg(t, 'other-pools', { token: bob.token });
    const foreign = await t.api('POST', '/api/v2/organizations/other-pools/agent-pools', { token: bob.token, body: { data: { type: 'agent-pools', attributes: { name: 'theirs' } } } });

    const viaAttr = await t.api('PATCH', '/api/v2/organizations/acme', {
      token: alice.token,
      body: orgBody({ 'default-execution-mode': 'agent', 'default-agent-pool-id': poolId }),
    });
    expect(viaAttr.status).toBe(200);
    expect(viaAttr.json.data.attributes['default-execution-mode']).toBe('agent');
    expect(viaAttr.json.data.relationships['default-agent-pool']).toEqual({ data: { type: 'agent-pools', id: poolId } });

    const otherOrgsPool = await t.api('PATCH', '/api/v2/organizations/acme', {
      token: alice.token,
      body: { data: { type: 'organizations', attributes: {}, relationships: { 'default-agent-pool': { data: { type: 'agent-pools', id: foreign.json.data.id } } } } },
    });
    expect(otherOrgsPool.status).toBe(422);
    expect(otherOrgsPool.json.errors[0].source.pointer).toBe('/data/relationships/default-agent-pool/data/id');

    const viaRel = await t.api('PATCH', '/api/v2/organizations/acme', {
      token: alice.token,
      body: { data: { type: 'organizations', attributes: { 'default-execution-mode': 'agent' }, relationships: { 'default-agent-pool': { data: { type: 'agent-pools', id: poolId } } } } },
    });
    expect(viaRel.status).toBe(200);
    // the mode alone keeps the previous pool
    const keep = await t.api('PATCH', '/api/v2/organizations/acme', { token: alice.token, body: orgBody({ 'default-execution-mode': 'agent' }) });
    expect(keep.json.data.relationships['default-agent-pool'].data.id).toBe(poolId);

    const mixed = await t.api('PATCH', '/api/v2/organizations/acme', { token: alice.token, body: orgBody({ 'default-execution-mode': 'remote', 'default-agent-pool-id': poolId }) });
    expect(mixed.status).toBe(422);
    expect(mixed.json.errors[0].detail).toContain('must not be given');

    const back = await t.api('PATCH', '/api/v2/organizations/acme', { token: alice.token, body: orgBody({ 'default-execution-mode': 'remote' }) });
    expect(back.status).toBe(200);
    expect(back.json.data.relationships['default-agent-pool']).toEqual({ data: null });
    const noPool = await t.api('PATCH', '/api/v2/organizations/acme', { token: alice.token, body: orgBody({ 'default-execution-mode': 'agent' }) });
    expect(noPool.status).toBe(422);
  });
});

describe('entitlement set', () => {
  it('shows what this installation offers, as JSON booleans and null limits', async () => {
    const org = (await t.api('GET', '/api/v2/organizations/acme', { token: alice.token })).json.data;
    const res = await t.api('GET', '/api/v2/organizations/acme/entitlement-set', { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ type: 'entitlement-sets', id: org.attributes['external-id'] });
    const a = res.json.data.attributes;
    for (const k of ['agents', 'audit-logging', 'cost-estimation', 'global-run-tasks', 'operations', 'private-module-registry', 'private-run-tasks', 'run-tasks', 'sso', 'sentinel', 'state-storage', 'teams', 'vcs-integrations', 'waypoint-actions', 'waypoint-templates-and-addons', 'infragraph', 'infragraph-with-nrtu']) {
      expect(typeof a[k], k).toBe('boolean');
    }
    expect(a).toMatchObject({ 'private-module-registry': true, teams: true, 'state-storage': true, 'run-tasks': true, 'vcs-integrations': true, agents: true, operations: false, sentinel: false, sso: false, 'audit-logging': false, 'cost-estimation': false });
    expect(a['user-limit']).toBeNull();
    expect((await t.api('GET', '/api/v2/organizations/bobs-org/entitlement-set', { token: alice.token })).status).toBe(404);
  });
});

describe('destroy', () => {
  it('removes the organization, everything it owns and its blobs, and stops its tokens', async () => {
    const carol = await createUserWithToken(t, 'carol');
    await createOrg(t, 'doomed', { token: carol.token });
    const orgId = (await t.api('GET', '/api/v2/organizations/doomed', { token: carol.token })).json.data.attributes['external-id'];
    const team = await createTeam(t, carol.token, 'doomed', 'devs');
    const teamToken = (await t.api('POST', `/api/v2/teams/${team.id}/authentication-token`, { token: carol.token })).json.data.attributes.token;
    const orgToken = (await t.api('POST', '/api/v2/organizations/doomed/authentication-token', { token: carol.token })).json.data.attributes.token;
    await t.api('POST', '/api/v2/organizations/doomed/agent-pools', { token: carol.token, body: { data: { type: 'agent-pools', attributes: { name: 'p' } } } });
    await t.api('POST', '/api/v2/organizations/doomed/relationships/data-retention-policy', {
      token: carol.token,
      body: { data: { type: 'data-retention-policy-dont-deletes', attributes: {} } },
    });
    await t.api('PATCH', '/api/v2/admin/organizations/doomed/relationships/module-consumers', { body: { data: [{ type: 'organizations', id: 'acme' }] } });
    await invite(t, carol.token, 'doomed', 'bob', [team.id]);
    const blobs = t.running.deps.blobs;
    await blobs.put(`modules/${orgId}/m/1.0.0.tar.gz`, Readable.from([Buffer.from('x')]));
    await blobs.put(`organizations/${orgId}/state/1.json`, Readable.from([Buffer.from('{}')]));
    await blobs.put('modules/org-someoneelse/keep.tar.gz', Readable.from([Buffer.from('y')]));
    const hooked: string[] = [];
    registerOrganizationDeleteHook(async (_deps, org) => {
      hooked.push(org.id);
    });

    expect((await t.api('DELETE', '/api/v2/organizations/doomed', { token: orgToken })).status).toBe(404);
    expect((await t.api('DELETE', '/api/v2/organizations/doomed', { token: bob.token })).status).toBe(404);
    const res = await t.api('DELETE', '/api/v2/organizations/doomed', { token: carol.token });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(hooked).toEqual([orgId]);

    expect((await t.api('GET', '/api/v2/organizations/doomed', { token: carol.token })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/account/details', { token: teamToken })).status).toBe(401);
    expect((await t.api('GET', '/api/v2/account/details', { token: orgToken })).status).toBe(401);
    const db = t.running.deps.db;
    for (const table of ['teams', 'organization_memberships', 'agent_pools', 'data_retention_policies'] as const) {
      const rows = await db.selectFrom(table).selectAll().where('organization_id', '=', orgId).execute();
      expect(rows, table).toEqual([]);
    }
    expect(await db.selectFrom('team_members').selectAll().where('team_id', '=', team.id).execute()).toEqual([]);
    expect(await db.selectFrom('tokens').selectAll().where((eb) => eb.or([eb('organization_id', '=', orgId), eb('team_id', '=', team.id)])).execute()).toEqual([]);
    expect(await db.selectFrom('organization_module_producers').selectAll().where('producer_id', '=', orgId).execute()).toEqual([]);
    const left: string[] = [];
    for await (const b of blobs.list('')) left.push(b.key);
    expect(left.filter((k) => k.includes(orgId))).toEqual([]);
    expect(left).toContain('modules/org-someoneelse/keep.tar.gz');
    // the name is free again
    await createOrg(t, 'doomed', { token: carol.token });
    expect((await t.api('DELETE', '/api/v2/organizations/doomed', { token: carol.token })).status).toBe(204);
    expect((await t.api('DELETE', '/api/v2/organizations/doomed', { token: carol.token })).status).toBe(404);
  });
});
