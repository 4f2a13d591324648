import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { recordVcsEvent } from '../../src/vcs/service.js';
import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createOAuthClient, vcsRows } from '../helpers/vcs.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

const DAY = 24 * 3600 * 1000;
const NOW = Date.parse('2026-06-15T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

let t: TestServer;
let clock: ManualClock;
let github: FakeVcsProvider;
let gitlab: FakeVcsProvider;
let owner: string;
let member: string;
let vcsManager: string;
let outsider: string;
let orgToken: string;
let plainTeamToken: string;
let acmeId: string;
let ghClient: { clientId: string; tokenId: string };
let glClient: { clientId: string; tokenId: string };
/** Event messages by age in days, as recorded below. */
const AGES = [0.5, 1, 2, 3, 5, 9.9, 10.1, 15, 40];

const list = (query = '', token = owner) => t.api('GET', `/api/v2/organizations/acme/vcs-events${query}`, { token });
const messages = (res: { json: any }) => res.json.data.map((d: any) => d.attributes.message);

beforeAll(async () => {
  clock = new ManualClock(new Date(NOW - 50 * DAY));
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_RETENTION_BATCH_SIZE: '2' }, { clock });
  github = await new FakeVcsProvider('github').addToken('ghp_events', 'octocat').start();
  gitlab = await new FakeVcsProvider('gitlab').addToken('glpat-events', 'tanuki').start();
  owner = (await createUserWithToken(t, 'owner')).token;
  await createOrg(t, 'acme', { token: owner });
  await createOrg(t, 'other', { token: owner });
  member = (await createUserWithToken(t, 'member')).token;
  await accept(t, member, await invite(t, owner, 'acme', 'member'));
  const vcsTeam = await createTeam(t, owner, 'acme', 'vcs', { 'organization-access': { 'manage-vcs-settings': true } });
  const plainTeam = await createTeam(t, owner, 'acme', 'plain', { 'organization-access': { 'manage-modules': true, 'manage-run-tasks': true } });
  vcsManager = (await createUserWithToken(t, 'manager')).token;
  await accept(t, vcsManager, await invite(t, owner, 'acme', 'manager', [vcsTeam.id]));
  outsider = (await createUserWithToken(t, 'outsider')).token;
  orgToken = (await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner })).json.data.attributes.token;
  plainTeamToken = (await t.api('POST', `/api/v2/teams/${plainTeam.id}/authentication-token`, { token: owner })).json.data.attributes.token;
  ghClient = await createOAuthClient(t, 'acme', github, 'ghp_events', { token: owner, attributes: { name: 'gh' } });
  glClient = await createOAuthClient(t, 'acme', gitlab, 'glpat-events', { token: owner, attributes: { name: 'gl' } });
  const orgs = await t.running.deps.db.selectFrom('organizations').select(['id', 'name']).execute();
  acmeId = orgs.find((o) => o.name === 'acme')!.id;
  const otherId = orgs.find((o) => o.name === 'other')!.id;
  // Only the events recorded below, at known times.
  await t.running.deps.db.deleteFrom('vcs_events').execute();
  for (const age of AGES) {
    clock.set(new Date(NOW - age * DAY));
    const gh = age < 3;
    await recordVcsEvent(t.running.deps, {
      organizationId: acmeId,
      level: age === 1 || age === 5 ? 'error' : 'info',
      message: `age ${age}`,
      suggestedAction: age === 1 ? 'rotate the token via PATCH /oauth-clients/:id' : null,
      oauthClientId: age === 3 ? null : gh ? ghClient.clientId : glClient.clientId,
      oauthTokenId: age === 3 ? null : gh ? ghClient.tokenId : glClient.tokenId,
    });
  }
  clock.set(new Date(NOW - 1 * DAY));
  await recordVcsEvent(t.running.deps, { organizationId: otherId, level: 'info', message: 'another organization' });
  clock.set(new Date(NOW));
});

afterAll(async () => {
  await github.close();
  await gitlab.close();
  await t.close();
});

describe('GET /organizations/:org/vcs-events', () => {
  it('lists the last 10 days, newest first, in the seed shape', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/vnd.api+json');
    expect(messages(res)).toEqual(['age 0.5', 'age 1', 'age 2', 'age 3', 'age 5', 'age 9.9']);
    expect(res.json.data[1]).toEqual({
      id: expect.stringMatching(/^ve-[A-Za-z0-9]{16}$/),
      type: 'vcs-events',
      attributes: {
        'created-at': iso(NOW - DAY),
        level: 'error',
        message: 'age 1',
        'organization-id': acmeId,
        'suggested-action': 'rotate the token via PATCH /oauth-clients/:id',
      },
      relationships: {
        'oauth-client': { data: { type: 'oauth-clients', id: ghClient.clientId }, links: { related: `/api/v2/oauth-clients/${ghClient.clientId}` } },
        'oauth-token': { data: { type: 'oauth-tokens', id: ghClient.tokenId }, links: { related: `/api/v2/oauth-tokens/${ghClient.tokenId}` } },
      },
    });
    expect(res.json.data[3].relationships).toEqual({ 'oauth-client': { data: null }, 'oauth-token': { data: null } });
    expect(res.json.data[0].attributes['suggested-action']).toBeNull();
    expect(res.json.included).toBeUndefined();
    expect(res.json.meta.pagination).toEqual({ 'current-page': 1, 'page-size': 20, 'prev-page': null, 'next-page': null, 'total-pages': 1, 'total-count': 6 });
  });

  it('pages (brackets raw or percent-encoded)', async () => {
    const encoded = await list('?page%5Bnumber%5D=2&page%5Bsize%5D=4');
    const raw = await list('?page[number]=2&page[size]=4');
    expect(messages(encoded)).toEqual(['age 5', 'age 9.9']);
    expect(messages(raw)).toEqual(messages(encoded));
    expect(encoded.json.meta.pagination).toEqual({ 'current-page': 2, 'page-size': 4, 'prev-page': 1, 'next-page': null, 'total-pages': 2, 'total-count': 6 });
    expect(encoded.json.links.prev).toContain('page%5Bnumber%5D=1');
  });

  it('filters by time (from and to inclusive), never reaching past 10 days', async () => {
    expect(messages(await list(`?filter%5Bfrom%5D=${iso(NOW - 3 * DAY)}&filter%5Bto%5D=${iso(NOW - DAY)}`))).toEqual(['age 1', 'age 2', 'age 3']);
    expect(messages(await list(`?filter[to]=${iso(NOW - 2.5 * DAY)}`))).toEqual(['age 3', 'age 5', 'age 9.9']);
    // A from 30 days back still stops at 10 days: older events are gone from the API before the purge runs.
    expect(messages(await list(`?filter[from]=${iso(NOW - 30 * DAY)}`))).toEqual(['age 0.5', 'age 1', 'age 2', 'age 3', 'age 5', 'age 9.9']);
    expect(messages(await list(`?filter[from]=2000-01-01T00:00:00Z&filter[to]=${iso(NOW - 10.05 * DAY)}`))).toEqual([]);
    // +00:00 is UTC too, and fractional seconds are fine.
    expect(messages(await list(`?filter[from]=${encodeURIComponent(iso(NOW - 1.5 * DAY).replace('Z', '+00:00'))}`))).toEqual(['age 0.5', 'age 1']);
  });

  it('follows the injected clock: as time passes, events age out of the list', async () => {
    clock.set(new Date(NOW + 5 * DAY));
    try {
      // The event exactly 10 days old is still in (the window is inclusive); the purge removes only older ones.
      expect(messages(await list())).toEqual(['age 0.5', 'age 1', 'age 2', 'age 3', 'age 5']);
    } finally {
      clock.set(new Date(NOW));
    }
  });

  it('filters by level', async () => {
    expect(messages(await list('?filter%5Blevels%5D=error'))).toEqual(['age 1', 'age 5']);
    expect(messages(await list('?filter[levels]=info'))).toEqual(['age 0.5', 'age 2', 'age 3', 'age 9.9']);
    expect(messages(await list('?filter[levels]=info,error'))).toHaveLength(6);
  });

  it('filters by OAuth client id (comma-separated)', async () => {
    expect(messages(await list(`?filter%5Boauth_client_external_ids%5D=${ghClient.clientId}`))).toEqual(['age 0.5', 'age 1', 'age 2']);
    expect(messages(await list(`?filter[oauth_client_external_ids]=${glClient.clientId}`))).toEqual(['age 5', 'age 9.9']);
    expect(messages(await list(`?filter[oauth_client_external_ids]=${ghClient.clientId},${glClient.clientId}&filter[levels]=error`))).toEqual(['age 1', 'age 5']);
    expect(messages(await list('?filter[oauth_client_external_ids]=oc-unknown0000000'))).toEqual([]);
  });

  it('includes each OAuth client once with only name and service-provider', async () => {
    const res = await list('?include=oauth_client');
    expect(res.json.included).toEqual(
      [
        { id: ghClient.clientId, type: 'oauth-clients', attributes: { name: 'gh', 'service-provider': 'github' } },
        { id: glClient.clientId, type: 'oauth-clients', attributes: { name: 'gl', 'service-provider': 'gitlab_hosted' } },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    const onlyGh = await list(`?include=oauth_client&filter[oauth_client_external_ids]=${ghClient.clientId}`);
    expect(onlyGh.json.included.map((i: any) => i.id)).toEqual([ghClient.clientId]);
  });

  describe('bad query values', () => {
    const cases: [string, number, string, string][] = [
      ['?filter[from]=yesterday', 422, 'filter[from] must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got "yesterday"', 'filter[from]'],
      ['?filter%5Bfrom%5D=2026-06-14', 422, 'filter[from] must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got "2026-06-14"', 'filter[from]'],
      ['?filter[to]=2026-06-14T12:00:00%2B02:00', 422, 'filter[to] must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got "2026-06-14T12:00:00+02:00"', 'filter[to]'],
      ['?filter[to]=2026-02-30T00:00:00Z', 422, 'filter[to] must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got "2026-02-30T00:00:00Z"', 'filter[to]'],
      ['?filter[to]=2026-06-14T25:00:00Z', 422, 'filter[to] must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got "2026-06-14T25:00:00Z"', 'filter[to]'],
      ['?filter[from]=2026-06-14T00:00:00Z&filter[to]=2026-06-13T00:00:00Z', 422, 'filter[from] (2026-06-14T00:00:00Z) must not be later than filter[to] (2026-06-13T00:00:00Z)', 'filter[from]'],
      ['?filter[levels]=warning', 422, 'filter[levels] accepts only info and error (comma-separated), got "warning"', 'filter[levels]'],
      ['?filter[levels]=info,ERROR', 422, 'filter[levels] accepts only info and error (comma-separated), got "ERROR"', 'filter[levels]'],
      ['?filter[oauth_client_external_ids]=ot-abc', 422, 'filter[oauth_client_external_ids] must list OAuth client ids (oc-…), comma-separated, got "ot-abc"', 'filter[oauth_client_external_ids]'],
      ['?include=oauth_token', 400, 'include supports only oauth_client on vcs-events, got "oauth_token"', 'include'],
      ['?page[size]=0', 400, 'page[size] must be a whole number from 1 to 100, got "0"', 'page[size]'],
    ];
    for (const [query, status, detail, parameter] of cases) {
      it(`${query} → ${status}`, async () => {
        const before = await vcsRows(t);
        const res = await list(query);
        expect(res.status).toBe(status);
        expect(res.json.errors[0]).toMatchObject({ status: String(status), detail, source: { parameter } });
        expect(await vcsRows(t)).toEqual(before);
      });
    }
  });

  describe('visibility', () => {
    it('shows the log to owners, VCS managers and the organization token', async () => {
      for (const token of [owner, vcsManager, orgToken]) {
        const res = await list('', token);
        expect(res.status).toBe(200);
        expect(res.json.data).toHaveLength(6);
      }
    });

    it('answers 404 to members without manage-vcs-settings, other teams\' tokens and outsiders', async () => {
      for (const token of [member, plainTeamToken]) {
        const res = await list('', token);
        expect(res.status).toBe(404);
        expect(res.json.errors[0].detail).toBe(
          'organization "acme" not found, or you may not manage its VCS settings (owners, teams with manage-vcs-settings and the organization token may)',
        );
      }
      const res = await list('', outsider);
      expect(res.status).toBe(404);
      expect(res.json.errors[0].detail).toBe('organization "acme" not found, or you are not authorized to see it');
      // Not even a bad filter tells them anything more.
      expect((await list('?filter[levels]=nope', member)).status).toBe(404);
    });

    it('answers 404 for an organization that does not exist, and 401 without a valid token', async () => {
      const res = await t.api('GET', '/api/v2/organizations/nope/vcs-events', { token: owner });
      expect(res.status).toBe(404);
      expect(res.json.errors[0].detail).toBe('organization "nope" not found, or you are not authorized to see it');
      expect((await list('', null as unknown as string)).status).toBe(401);
      expect((await list('', 'bogus-token')).status).toBe(401);
    });

    it("keeps each organization's log to itself", async () => {
      const res = await t.api('GET', '/api/v2/organizations/other/vcs-events', { token: owner });
      expect(messages(res)).toEqual(['another organization']);
      expect((await t.api('GET', '/api/v2/organizations/other/vcs-events', { token: orgToken })).status).toBe(404);
    });
  });
});

describe('the purge', () => {
  it('removes events older than 10 days at each data retention sweep, by the injected clock, in batches', async () => {
    const ages = async () =>
      (await t.running.deps.db.selectFrom('vcs_events').select('message').where('organization_id', '=', acmeId).orderBy('created_at', 'desc').execute()).map((r) => r.message);
    expect(await ages()).toEqual(AGES.map((a) => `age ${a}`));
    // The sweep is one recurring job row; no organization here has a data retention policy.
    const sweep = await t.running.deps.db.selectFrom('jobs').select('run_at').where('kind', '=', 'retention.sweep').executeTakeFirstOrThrow();
    clock.set(new Date(Math.max(NOW, Date.parse(sweep.run_at))));
    const at = clock.now().getTime();
    // Other recurring jobs may be due too; what counts is that the sweep ran (its row moved on).
    await t.running.jobs.runDue();
    const kept = AGES.filter((a) => at - a * DAY >= NOW - 10 * DAY).map((a) => `age ${a}`);
    expect(kept.length).toBeLessThan(AGES.length);
    expect(await ages()).toEqual(kept);
    // The next sweep, 3 days on, removes what has aged out since.
    const next = await t.running.deps.db.selectFrom('jobs').select('run_at').where('kind', '=', 'retention.sweep').executeTakeFirstOrThrow();
    expect(Date.parse(next.run_at)).toBeGreaterThan(at);
    clock.set(new Date(Math.max(at + 3 * DAY, Date.parse(next.run_at))));
    const at2 = clock.now().getTime();
    try {
      await t.running.jobs.runDue();
      expect(await ages()).toEqual(AGES.filter((a) => NOW - a * DAY >= at2 - 10 * DAY).map((a) => `age ${a}`));
      expect(await ages()).not.toEqual(kept);
    } finally {
      clock.set(new Date(NOW));
    }
  });
});
