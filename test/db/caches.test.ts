import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { accept, createTeam, invite } from '../helpers/organizations.js';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { openTestStore } from '../helpers/store.js';
import { eventually } from '../helpers/vcs-modules.js';

/**
 * The in-memory caches (db/generations.ts: principals by token hash, readable organizations,
 * module rows, /versions bodies and download lookups) and their invalidation. Every test warms
 * what it reads first (the same request answered the same way twice), then changes what the cache
 * was built from and proves the change is seen at once on the instance that made it, or, made by
 * another instance or straight in the store, within the sync bound. Runs on SQLite and PostgreSQL.
 */

/** As the /v1 protocol answers a token it does not know (any longer). */
const V1_UNAUTHORIZED = { errors: ['the API token is invalid or has expired'] };

const versionsPath = (org: string, name: string) => `/v1/modules/${org}/${name}/aws/versions`;
const downloadPath = (org: string, name: string, version: string) => `/v1/modules/${org}/${name}/aws/${version}/download`;

/** Answers the same GET twice with the same status: whatever the caches hold for it is warm. */
async function warm(t: TestServer, path: string, token: string, status: number): Promise<void> {
  for (let i = 0; i < 2; i++) expect((await t.api('GET', path, { token })).status, `${path} (warming, ${i + 1})`).toBe(status);
}

async function listedVersions(t: TestServer, org: string, name: string, token = t.adminToken): Promise<string[]> {
  const r = await t.api('GET', versionsPath(org, name), { token });
  expect(r.status).toBe(200);
  return r.json.modules[0].versions.map((v: { version: string }) => v.version).sort();
}

/** A user token of userId made through the API: its id and secret. */
async function userToken(t: TestServer, userId: string, attributes: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const r = await t.api('POST', `/api/v2/users/${userId}/authentication-tokens`, {
    body: { data: { type: 'authentication-tokens', attributes: { description: 'cache test', ...attributes } } },
  });
  expect(r.status).toBe(201);
  return { id: r.json.data.id, token: r.json.data.attributes.token };
}

async function teamToken(t: TestServer, teamId: string): Promise<string> {
  const r = await t.api('POST', `/api/v2/teams/${teamId}/authentication-token`);
  expect(r.status).toBe(201);
  return r.json.data.attributes.token;
}

async function organizationToken(t: TestServer, org: string): Promise<string> {
  const r = await t.api('POST', `/api/v2/organizations/${org}/authentication-token`);
  expect(r.status).toBe(201);
  return r.json.data.attributes.token;
}

async function generations(t: TestServer): Promise<Record<string, string>> {
  const rows = await t.running.deps.db.selectFrom('cache_generations').select(['name', 'value']).execute();
  return Object.fromEntries(rows.map((r) => [r.name, String(r.value)]));
}

/** The sync bound here is 100 ms: a deadline far beyond it, a wait and not a timed assertion. */
const DEADLINE_MS = 5000;

const status = async (t: TestServer, path: string, token: string): Promise<number> => (await t.api('GET', path, { token })).status;

/** Members' reads of modules, with the one server's own poll slowed so that only its own writes can have refreshed it. */
describe('on the instance that made the change, at once', () => {
  let t: TestServer;
  let clock: ManualClock;

  beforeAll(async () => {
    clock = new ManualClock(new Date());
    // The poll (the bound for other instances' writes) as slow as it can be: nothing here may rely on it.
    t = await startTestServer({ TERRACE_CACHE_SYNC_MS: '60000' }, { clock });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('tokens', () => {
    beforeAll(async () => {
      await createOrganization(t, 'tok');
      await publish(t, 'tok', 'net', 'aws', '1.0.0');
    });

    it('a deleted user token is 401 on its next request', async () => {
      const u = await createUserWithToken(t, 'tok-user');
      await addMember(t, 'tok', u);
      const second = await userToken(t, u.id);
      await warm(t, '/api/v2/account/details', second.token, 200);
      await warm(t, versionsPath('tok', 'net'), second.token, 200);

      const del = await t.api('DELETE', `/api/v2/authentication-tokens/${second.id}`, { token: u.token });
      expect(del.status).toBe(204);
      const api = await t.api('GET', '/api/v2/account/details', { token: second.token });
      expect(api.status).toBe(401);
      expect(api.json.errors[0]).toMatchObject({ status: '401', title: 'unauthorized' });
      const v1 = await t.api('GET', versionsPath('tok', 'net'), { token: second.token });
      expect(v1.status).toBe(401);
      expect(v1.json).toEqual(V1_UNAUTHORIZED);
      // The user's other token is untouched.
      expect(await status(t, '/api/v2/account/details', u.token)).toBe(200);
    });

    it('a deleted or replaced team token is 401 on its next request', async () => {
      const team = await createTeam(t, t.adminToken, 'tok', 'tok-team');
      const first = await teamToken(t, team.id);
      await warm(t, versionsPath('tok', 'net'), first, 200);

      // Replacing the team token retires the one it replaces.
      const second = await teamToken(t, team.id);
      const old = await t.api('GET', versionsPath('tok', 'net'), { token: first });
      expect(old.status).toBe(401);
      expect(old.json).toEqual(V1_UNAUTHORIZED);
      await warm(t, versionsPath('tok', 'net'), second, 200);

      expect((await t.api('DELETE', `/api/v2/teams/${team.id}/authentication-token`)).status).toBe(204);
      const gone = await t.api('GET', versionsPath('tok', 'net'), { token: second });
      expect(gone.status).toBe(401);
      expect(gone.json).toEqual(V1_UNAUTHORIZED);
    });

    it('a deleted or replaced organization token is 401 on its next request', async () => {
      const first = await organizationToken(t, 'tok');
      await warm(t, versionsPath('tok', 'net'), first, 200);
      await warm(t, '/api/v2/organizations/tok', first, 200);

      const second = await organizationToken(t, 'tok');
      expect(await status(t, versionsPath('tok', 'net'), first)).toBe(401);
      await warm(t, versionsPath('tok', 'net'), second, 200);

      expect((await t.api('DELETE', '/api/v2/organizations/tok/authentication-token')).status).toBe(204);
      const gone = await t.api('GET', '/api/v2/organizations/tok', { token: second });
      expect(gone.status).toBe(401);
      expect(gone.json.errors[0]).toMatchObject({ status: '401', title: 'unauthorized' });
      expect(await status(t, versionsPath('tok', 'net'), second)).toBe(401);
    });

    it('a token past its expiry is 401 on its next request, by the clock alone', async () => {
      const u = await createUserWithToken(t, 'tok-expiring');
      await addMember(t, 'tok', u);
      const expiring = await userToken(t, u.id, { 'expired-at': new Date(clock.now().getTime() + 60_000).toISOString() });
      await warm(t, versionsPath('tok', 'net'), expiring.token, 200);
      clock.advance(59_000);
      expect(await status(t, versionsPath('tok', 'net'), expiring.token)).toBe(200);
      clock.advance(1_000);
      const expired = await t.api('GET', versionsPath('tok', 'net'), { token: expiring.token });
      expect(expired.status).toBe(401);
      expect(expired.json).toEqual(V1_UNAUTHORIZED);
      expect(await status(t, '/api/v2/account/details', expiring.token)).toBe(401);
      // A token without expiry is not affected by the clock.
      expect(await status(t, versionsPath('tok', 'net'), u.token)).toBe(200);
    });
  });

  describe('who may read', () => {
    beforeAll(async () => {
      await createOrganization(t, 'mem');
      await publish(t, 'mem', 'net', 'aws', '1.0.0');
    });

    it('a member removed from the organization reads nothing of it at once, and reads again once back', async () => {
      const u = await createUserWithToken(t, 'mem-user');
      const membership = await addMember(t, 'mem', u);
      await warm(t, versionsPath('mem', 'net'), u.token, 200);
      await warm(t, downloadPath('mem', 'net', '1.0.0'), u.token, 204);

      expect((await t.api('DELETE', `/api/v2/organization-memberships/${membership}`)).status).toBe(204);
      const hidden = await t.api('GET', versionsPath('mem', 'net'), { token: u.token });
      expect(hidden.status).toBe(404);
      expect(hidden.json).toEqual({ errors: [expect.any(String)] });
      expect(await status(t, downloadPath('mem', 'net', '1.0.0'), u.token)).toBe(404);
      await warm(t, versionsPath('mem', 'net'), u.token, 404);

      // Invited again: not a member until the invitation is accepted.
      const again = await invite(t, t.adminToken, 'mem', u.username);
      await warm(t, versionsPath('mem', 'net'), u.token, 404);
      await accept(t, u.token, again);
      expect(await status(t, versionsPath('mem', 'net'), u.token)).toBe(200);
      expect(await status(t, downloadPath('mem', 'net', '1.0.0'), u.token)).toBe(204);
    });

    it('a deleted team\'s token is 401 at once', async () => {
      const team = await createTeam(t, t.adminToken, 'mem', 'mem-team');
      const token = await teamToken(t, team.id);
      await warm(t, versionsPath('mem', 'net'), token, 200);
      expect((await t.api('DELETE', `/api/v2/teams/${team.id}`)).status).toBe(204);
      const r = await t.api('GET', versionsPath('mem', 'net'), { token });
      expect(r.status).toBe(401);
      expect(r.json).toEqual(V1_UNAUTHORIZED);
    });

    it('members of a consumer organization read a producer\'s modules while it produces for them, and not after', async () => {
      await createOrganization(t, 'producer');
      await createOrganization(t, 'consumer');
      await publish(t, 'producer', 'base', 'aws', '1.0.0');
      const u = await createUserWithToken(t, 'consumer-user');
      await addMember(t, 'consumer', u);
      const orgToken = await organizationToken(t, 'consumer');
      const consumers = (names: string[]) =>
        t.api('PATCH', '/api/v2/admin/organizations/producer/relationships/module-consumers', {
          body: { data: names.map((id) => ({ type: 'organizations', id })) },
        });
      await warm(t, versionsPath('producer', 'base'), u.token, 404);
      await warm(t, versionsPath('producer', 'base'), orgToken, 404);

      expect((await consumers(['consumer'])).status).toBe(204);
      expect(await status(t, versionsPath('producer', 'base'), u.token)).toBe(200);
      expect(await status(t, versionsPath('producer', 'base'), orgToken)).toBe(200);
      await warm(t, versionsPath('producer', 'base'), u.token, 200);
      await warm(t, downloadPath('producer', 'base', '1.0.0'), u.token, 204);
      await warm(t, versionsPath('producer', 'base'), orgToken, 200);

      expect((await consumers([])).status).toBe(204);
      expect(await status(t, versionsPath('producer', 'base'), u.token)).toBe(404);
      expect(await status(t, downloadPath('producer', 'base', '1.0.0'), u.token)).toBe(404);
      expect(await status(t, versionsPath('producer', 'base'), orgToken)).toBe(404);
      // Their own organization's modules are as they were.
      expect(await status(t, '/api/v2/organizations/consumer', u.token)).toBe(200);
    });
  });

  describe('the registry', () => {
    let reader: { id: string; username: string; token: string };

    beforeAll(async () => {
      await createOrganization(t, 'reg');
      reader = await createUserWithToken(t, 'reg-reader');
      await addMember(t, 'reg', reader);
      await publish(t, 'reg', 'net', 'aws', '1.0.0');
    });

    it('a new version is listed and downloads as soon as its publish has returned', async () => {
      await warm(t, versionsPath('reg', 'net'), reader.token, 200);
      await warm(t, downloadPath('reg', 'net', '1.1.0'), reader.token, 404);
      expect(await listedVersions(t, 'reg', 'net', reader.token)).toEqual(['1.0.0']);

      await publish(t, 'reg', 'net', 'aws', '1.1.0');
      expect(await listedVersions(t, 'reg', 'net', reader.token)).toEqual(['1.0.0', '1.1.0']);
      expect(await status(t, downloadPath('reg', 'net', '1.1.0'), reader.token)).toBe(204);
      const latest = await t.api('GET', '/v1/modules/reg/net/aws', { token: reader.token });
      expect(latest.status).toBe(200);
      expect(latest.json.version).toBe('1.1.0');
    });

    it("a version's detail shows publishes, a sibling provider and deletions at once, and its download total on every request", async () => {
      const detail = async (path: string) => {
        const r = await t.api('GET', path, { token: reader.token });
        expect(r.status, path).toBe(200);
        return r.json;
      };
      await publish(t, 'reg', 'detail', 'aws', '1.0.0');
      const v1 = '/v1/modules/reg/detail/aws/1.0.0';
      const latest = '/v1/modules/reg/detail/aws';
      await warm(t, v1, reader.token, 200);
      await warm(t, latest, reader.token, 200);
      await warm(t, '/v1/modules/reg/detail/aws/2.0.0', reader.token, 404);
      const before = await detail(v1);
      expect(before).toMatchObject({ version: '1.0.0', versions: ['1.0.0'], providers: ['aws'] });

      expect(await status(t, downloadPath('reg', 'detail', '1.0.0'), reader.token)).toBe(204);
      expect((await detail(v1)).downloads).toBe(before.downloads + 1);
      expect((await detail(latest)).downloads).toBe(before.downloads + 1);

      await publish(t, 'reg', 'detail', 'aws', '1.1.0');
      expect(await detail(latest)).toMatchObject({ id: 'reg/detail/aws/1.1.0', version: '1.1.0', versions: ['1.1.0', '1.0.0'] });
      expect((await detail(v1)).versions).toEqual(['1.1.0', '1.0.0']);
      await publish(t, 'reg', 'detail', 'aws', '2.0.0');
      expect((await detail('/v1/modules/reg/detail/aws/2.0.0')).version).toBe('2.0.0');

      await publish(t, 'reg', 'detail', 'azurerm', '1.0.0');
      expect((await detail(v1)).providers.sort()).toEqual(['aws', 'azurerm']);

      expect((await t.api('DELETE', '/api/v2/organizations/reg/registry-modules/private/reg/detail/aws/2.0.0')).status).toBe(204);
      const gone = await t.api('GET', '/v1/modules/reg/detail/aws/2.0.0', { token: reader.token });
      expect(gone.status).toBe(404);
      expect(gone.json).toEqual({ errors: ['version 2.0.0 of reg/detail/aws not found'] });
      expect(await detail(latest)).toMatchObject({ version: '1.1.0', versions: ['1.1.0', '1.0.0'] });
      // Everything but the counted total is as it was first rendered.
      const after = await detail(v1);
      expect({ ...after, versions: before.versions, providers: before.providers }).toEqual({ ...before, downloads: before.downloads + 1 });
    });

    it('a new module is found as soon as it is published', async () => {
      await warm(t, versionsPath('reg', 'fresh'), reader.token, 404);
      await publish(t, 'reg', 'fresh', 'aws', '0.1.0');
      expect(await listedVersions(t, 'reg', 'fresh', reader.token)).toEqual(['0.1.0']);
    });

    it('a deleted version does not download and is not listed, at once', async () => {
      await publish(t, 'reg', 'gone', 'aws', '1.0.0');
      await publish(t, 'reg', 'gone', 'aws', '2.0.0');
      await warm(t, downloadPath('reg', 'gone', '2.0.0'), reader.token, 204);
      await warm(t, versionsPath('reg', 'gone'), reader.token, 200);
      expect(await listedVersions(t, 'reg', 'gone', reader.token)).toEqual(['1.0.0', '2.0.0']);

      const del = await t.api('DELETE', '/api/v2/organizations/reg/registry-modules/private/reg/gone/aws/2.0.0');
      expect(del.status).toBe(204);
      const dl = await t.api('GET', downloadPath('reg', 'gone', '2.0.0'), { token: reader.token });
      expect(dl.status).toBe(404);
      expect(dl.json).toEqual({ errors: ['version 2.0.0 of reg/gone/aws not found'] });
      expect(await listedVersions(t, 'reg', 'gone', reader.token)).toEqual(['1.0.0']);
      const latest = await t.api('GET', '/v1/modules/reg/gone/aws', { token: reader.token });
      expect(latest.json.version).toBe('1.0.0');
      expect(await status(t, downloadPath('reg', 'gone', '1.0.0'), reader.token)).toBe(204);
    });

    it('a deleted module is 404 at once', async () => {
      await publish(t, 'reg', 'doomed', 'aws', '1.0.0');
      await warm(t, versionsPath('reg', 'doomed'), reader.token, 200);
      await warm(t, downloadPath('reg', 'doomed', '1.0.0'), reader.token, 204);
      expect((await t.api('DELETE', '/api/v2/organizations/reg/registry-modules/private/reg/doomed/aws')).status).toBe(204);
      const r = await t.api('GET', versionsPath('reg', 'doomed'), { token: reader.token });
      expect(r.status).toBe(404);
      expect(r.json).toEqual({ errors: [expect.any(String)] });
      expect(await status(t, downloadPath('reg', 'doomed', '1.0.0'), reader.token)).toBe(404);
    });

    it('a renamed organization\'s modules are under the new namespace only, at once', async () => {
      await createOrganization(t, 'oldname');
      const u = await createUserWithToken(t, 'rename-reader');
      await addMember(t, 'oldname', u);
      await publish(t, 'oldname', 'net', 'aws', '1.0.0');
      await warm(t, versionsPath('oldname', 'net'), u.token, 200);
      await warm(t, downloadPath('oldname', 'net', '1.0.0'), u.token, 204);
      await warm(t, versionsPath('newname', 'net'), u.token, 404);

      const r = await t.api('PATCH', '/api/v2/organizations/oldname', { body: { data: { type: 'organizations', attributes: { name: 'newname' } } } });
      expect(r.status).toBe(200);
      expect(await status(t, versionsPath('oldname', 'net'), u.token)).toBe(404);
      expect(await status(t, downloadPath('oldname', 'net', '1.0.0'), u.token)).toBe(404);
      const renamed = await t.api('GET', versionsPath('newname', 'net'), { token: u.token });
      expect(renamed.status).toBe(200);
      expect(renamed.json).toEqual({ modules: [{ source: 'newname/net/aws', versions: [expect.objectContaining({ version: '1.0.0' })] }] });
      expect(await status(t, downloadPath('newname', 'net', '1.0.0'), u.token)).toBe(204);
    });

    it('a deleted organization\'s modules are 404 at once', async () => {
      await createOrganization(t, 'closing');
      await publish(t, 'closing', 'net', 'aws', '1.0.0');
      await warm(t, versionsPath('closing', 'net'), t.adminToken, 200);
      await warm(t, downloadPath('closing', 'net', '1.0.0'), t.adminToken, 204);
      expect((await t.api('DELETE', '/api/v2/organizations/closing')).status).toBe(204);
      expect(await status(t, versionsPath('closing', 'net'), t.adminToken)).toBe(404);
      expect(await status(t, downloadPath('closing', 'net', '1.0.0'), t.adminToken)).toBe(404);
    });
  });

  describe('hot paths do not move the generations', () => {
    it('neither a token\'s creation, its first use (which records it) nor downloads', async () => {
      await createOrganization(t, 'hot');
      const u = await createUserWithToken(t, 'hot-user');
      await addMember(t, 'hot', u);
      await publish(t, 'hot', 'net', 'aws', '1.0.0');

      const before = await generations(t);
      expect(Object.keys(before).sort()).toEqual(['identity', 'registry']);
      const fresh = await userToken(t, u.id);
      expect(await generations(t)).toEqual(before);

      const row = () => t.running.deps.db.selectFrom('tokens').select('last_used_at').where('id', '=', fresh.id).executeTakeFirstOrThrow();
      expect((await row()).last_used_at).toBeNull();
      expect(await status(t, versionsPath('hot', 'net'), fresh.token)).toBe(200);
      expect((await row()).last_used_at).toBe(clock.now().toISOString());
      // A minute on, the next use records it again.
      clock.advance(61_000);
      expect(await status(t, downloadPath('hot', 'net', '1.0.0'), fresh.token)).toBe(204);
      expect((await row()).last_used_at).toBe(clock.now().toISOString());
      for (let i = 0; i < 3; i++) expect(await status(t, downloadPath('hot', 'net', '1.0.0'), fresh.token)).toBe(204);
      const summary = await t.api('GET', '/v2/modules/hot/net/aws/downloads/summary', { token: fresh.token });
      expect(summary.status).toBe(200);
      expect(summary.json.data.attributes.total).toBe(4);

      expect(await generations(t)).toEqual(before);
      // And a change that matters does move them.
      expect((await t.api('DELETE', `/api/v2/authentication-tokens/${fresh.id}`)).status).toBe(204);
      expect(Number((await generations(t)).identity)).toBeGreaterThan(Number(before.identity));
    });
  });
});

/** Two servers on one store, as two instances are; and writes made in the store by hand. */
describe('other instances, within the sync bound', () => {
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    a = await startTestServer({ TERRACE_CACHE_SYNC_MS: '100' });
    b = await startTestServer({ TERRACE_CACHE_SYNC_MS: '100', TERRACE_JOBS: 'false' }, { dataDir: a.dataDir });
    await createOrganization(a, 'multi');
    await publish(a, 'multi', 'net', 'aws', '1.0.0');
    await publish(a, 'multi', 'net', 'aws', '1.1.0');
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a token revoked on one instance stops working on the other', async () => {
    const u = await createUserWithToken(a, 'multi-revoked');
    await addMember(a, 'multi', u);
    const tok = await userToken(a, u.id);
    await warm(b, versionsPath('multi', 'net'), tok.token, 200);
    await warm(a, versionsPath('multi', 'net'), tok.token, 200);

    expect((await a.api('DELETE', `/api/v2/authentication-tokens/${tok.id}`)).status).toBe(204);
    expect(await status(a, versionsPath('multi', 'net'), tok.token)).toBe(401);
    await eventually(async () => ((await status(b, versionsPath('multi', 'net'), tok.token)) === 401) || undefined, 'B to refuse the revoked token', DEADLINE_MS);
    expect((await b.api('GET', versionsPath('multi', 'net'), { token: tok.token })).json).toEqual(V1_UNAUTHORIZED);
  });

  it('a version published or deleted on one instance is seen on the other', async () => {
    await warm(b, downloadPath('multi', 'net', '1.1.0'), b.adminToken, 204);
    await warm(b, downloadPath('multi', 'net', '1.2.0'), b.adminToken, 404);
    expect(await listedVersions(b, 'multi', 'net')).toEqual(['1.0.0', '1.1.0']);

    await publish(a, 'multi', 'net', 'aws', '1.2.0');
    await eventually(async () => ((await listedVersions(b, 'multi', 'net')).includes('1.2.0')) || undefined, 'B to list 1.2.0', DEADLINE_MS);
    expect(await status(b, downloadPath('multi', 'net', '1.2.0'), b.adminToken)).toBe(204);

    // Warm again: the publish retired what B held. The list and the download are separate entries,
    // each seen to change on its own (one may be read afresh before B has synced).
    await warm(b, downloadPath('multi', 'net', '1.1.0'), b.adminToken, 204);
    expect(await listedVersions(b, 'multi', 'net')).toEqual(['1.0.0', '1.1.0', '1.2.0']);
    expect((await a.api('DELETE', '/api/v2/organizations/multi/registry-modules/private/multi/net/aws/1.1.0')).status).toBe(204);
    await eventually(async () => ((await status(b, downloadPath('multi', 'net', '1.1.0'), b.adminToken)) === 404) || undefined, "B to refuse the deleted version's download", DEADLINE_MS);
    await eventually(async () => (!(await listedVersions(b, 'multi', 'net')).includes('1.1.0')) || undefined, 'B to stop listing the deleted version', DEADLINE_MS);
    expect(await listedVersions(b, 'multi', 'net')).toEqual(['1.0.0', '1.2.0']);
  });

  it("a version published on one instance shows in the other's cached detail", async () => {
    await publish(a, 'multi', 'detailed', 'aws', '1.0.0');
    await warm(b, '/v1/modules/multi/detailed/aws/1.0.0', b.adminToken, 200);
    await warm(b, '/v1/modules/multi/detailed/aws/1.1.0', b.adminToken, 404);
    await publish(a, 'multi', 'detailed', 'aws', '1.1.0');
    const versions = async () => (await b.api('GET', '/v1/modules/multi/detailed/aws/1.0.0')).json.versions as string[];
    await eventually(async () => ((await versions()).includes('1.1.0')) || undefined, "B's detail to list 1.1.0", DEADLINE_MS);
    expect(await versions()).toEqual(['1.1.0', '1.0.0']);
    expect(await status(b, '/v1/modules/multi/detailed/aws/1.1.0', b.adminToken)).toBe(200);
  });

  it('a token row deleted straight in the store stops working on every instance', async () => {
    const u = await createUserWithToken(a, 'multi-by-hand');
    await addMember(a, 'multi', u);
    const tok = await userToken(a, u.id);
    await warm(a, versionsPath('multi', 'net'), tok.token, 200);
    await warm(b, versionsPath('multi', 'net'), tok.token, 200);

    const store = openTestStore(a.dataDir);
    try {
      const deleted = await store.db.deleteFrom('tokens').where('id', '=', tok.id).executeTakeFirst();
      expect(Number(deleted.numDeletedRows)).toBe(1);
    } finally {
      await store.close();
    }
    for (const t of [a, b]) await eventually(async () => ((await status(t, versionsPath('multi', 'net'), tok.token)) === 401) || undefined, 'the deleted token row to be refused', DEADLINE_MS);
  });

  it('a user made site admin straight in the store reads every organization, on every instance', async () => {
    await createOrganization(a, 'elsewhere');
    await publish(a, 'elsewhere', 'net', 'aws', '1.0.0');
    const u = await createUserWithToken(a, 'multi-promoted');
    await warm(a, versionsPath('elsewhere', 'net'), u.token, 404);
    await warm(b, versionsPath('elsewhere', 'net'), u.token, 404);

    const store = openTestStore(a.dataDir);
    try {
      await store.db.updateTable('users').set({ is_site_admin: 1 }).where('id', '=', u.id).execute();
      for (const t of [a, b]) await eventually(async () => ((await status(t, versionsPath('elsewhere', 'net'), u.token)) === 200) || undefined, 'the site admin to read another organization', DEADLINE_MS);
      await store.db.updateTable('users').set({ is_site_admin: 0 }).where('id', '=', u.id).execute();
      for (const t of [a, b]) await eventually(async () => ((await status(t, versionsPath('elsewhere', 'net'), u.token)) === 404) || undefined, 'the former site admin to be refused again', DEADLINE_MS);
    } finally {
      await store.close();
    }
  });
});

describe('with the caches off (TERRACE_CACHE_MAX_ENTRIES=0)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ TERRACE_CACHE_MAX_ENTRIES: '0', TERRACE_CACHE_SYNC_MS: '60000' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers every change as it happens', async () => {
    await createOrganization(t, 'off');
    await publish(t, 'off', 'net', 'aws', '1.0.0');
    const u = await createUserWithToken(t, 'off-user');
    const membership = await addMember(t, 'off', u);
    const tok = await userToken(t, u.id);
    await warm(t, versionsPath('off', 'net'), tok.token, 200);
    await warm(t, downloadPath('off', 'net', '1.0.0'), tok.token, 204);

    await publish(t, 'off', 'net', 'aws', '1.1.0');
    expect(await listedVersions(t, 'off', 'net', tok.token)).toEqual(['1.0.0', '1.1.0']);
    expect((await t.api('DELETE', '/api/v2/organizations/off/registry-modules/private/off/net/aws/1.0.0')).status).toBe(204);
    expect(await status(t, downloadPath('off', 'net', '1.0.0'), tok.token)).toBe(404);
    expect(await listedVersions(t, 'off', 'net', tok.token)).toEqual(['1.1.0']);

    expect((await t.api('DELETE', `/api/v2/organization-memberships/${membership}`)).status).toBe(204);
    expect(await status(t, versionsPath('off', 'net'), tok.token)).toBe(404);
    expect((await t.api('DELETE', `/api/v2/authentication-tokens/${tok.id}`)).status).toBe(204);
    expect(await status(t, versionsPath('off', 'net'), tok.token)).toBe(401);
  });
});
