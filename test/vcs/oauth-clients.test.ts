import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { connectionForToken, registerOAuthTokenDeletedHook } from '../../src/vcs/service.js';
import { capturingLogger } from '../helpers/logs.js';
import { RFC3339, accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createOAuthClient, oauthClientBody, vcsRows } from '../helpers/vcs.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

const PAT = 'ghp_ownerPersonalAccessToken000001';
const PAT2 = 'ghp_rotatedPersonalAccessToken0002';
const GL_PAT = 'glpat-gitlabPersonalToken00003';
const SECRET = 'oauth-app-secret-never-shown';

let t: TestServer;
let github: FakeVcsProvider;
let gitlab: FakeVcsProvider;
let owner: string;
let member: string;
let vcsManager: string;
let outsider: string;
let orgToken: string;
let vcsTeamToken: string;
let plainTeamToken: string;
let defaultProjectId: string;
let otherOrgProjectId: string;
const logs = capturingLogger('debug');
const deleted: string[] = [];

const logText = () => JSON.stringify(logs.lines);

beforeAll(async () => {
  t = await startTestServer({ TERRACE_VCS_REQUEST_TIMEOUT_MS: '500', TERRACE_JOBS: 'false' }, { logger: logs.logger });
  registerOAuthTokenDeletedHook(async (_deps, id) => {
    deleted.push(id);
  });
  github = await new FakeVcsProvider('github').addToken(PAT, 'octocat').addToken(PAT2, 'octocat-rotated').start();
  gitlab = await new FakeVcsProvider('gitlab').addToken(GL_PAT, 'tanuki').start();
  owner = (await createUserWithToken(t, 'owner')).token;
  await createOrg(t, 'acme', { token: owner });
  await createOrg(t, 'other', { token: owner });
  member = (await createUserWithToken(t, 'member')).token;
  await accept(t, member, await invite(t, owner, 'acme', 'member'));
  const vcsTeam = await createTeam(t, owner, 'acme', 'vcs-admins', { 'organization-access': { 'manage-vcs-settings': true } });
  expect(vcsTeam.attributes['organization-access']['manage-vcs-settings']).toBe(true);
  const plainTeam = await createTeam(t, owner, 'acme', 'devs', { 'organization-access': { 'manage-modules': true } });
  vcsManager = (await createUserWithToken(t, 'vcsmanager')).token;
  await accept(t, vcsManager, await invite(t, owner, 'acme', 'vcsmanager', [vcsTeam.id]));
  outsider = (await createUserWithToken(t, 'outsider')).token;
  orgToken = (await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner })).json.data.attributes.token;
  vcsTeamToken = (await t.api('POST', `/api/v2/teams/${vcsTeam.id}/authentication-token`, { token: owner })).json.data.attributes.token;
  plainTeamToken = (await t.api('POST', `/api/v2/teams/${plainTeam.id}/authentication-token`, { token: owner })).json.data.attributes.token;
  const projects = await t.api('GET', '/api/v2/organizations/acme/projects', { token: owner });
  defaultProjectId = projects.json.data[0].id;
  otherOrgProjectId = (await t.api('GET', '/api/v2/organizations/other/projects', { token: owner })).json.data[0].id;
});

afterAll(async () => {
  await github.close();
  await gitlab.close();
  await t.close();
});

describe('creating an OAuth client with a personal access token', () => {
  it('answers 201 in HCP shape with exactly one OAuth token, after asking the provider who owns the PAT', async () => {
    const callsBefore = github.calls.length;
    const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', {
      token: owner,
      body: oauthClientBody(github, PAT, { name: 'GitHub', secret: SECRET, key: 'app-key', 'organization-scoped': true }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/vnd.api+json');
    const d = res.json.data;
    expect(d.id).toMatch(/^oc-[A-Za-z0-9]{16}$/);
    expect(d.type).toBe('oauth-clients');
    expect(d.attributes).toEqual({
      'created-at': expect.stringMatching(RFC3339),
      name: 'GitHub',
      'service-provider': 'github',
      'service-provider-display-name': 'GitHub',
      'http-url': github.httpUrl,
      'api-url': github.apiUrl,
      key: 'app-key',
      'rsa-public-key': null,
      'callback-url': null,
      'connect-path': null,
      'organization-scoped': true,
    });
    const tokens = d.relationships['oauth-tokens'];
    expect(tokens.data).toHaveLength(1);
    expect(tokens.data[0]).toEqual({ type: 'oauth-tokens', id: expect.stringMatching(/^ot-[A-Za-z0-9]{16}$/) });
    expect(tokens.links).toEqual({ related: `/api/v2/oauth-clients/${d.id}/oauth-tokens` });
    expect(d.relationships.organization).toEqual({ data: { type: 'organizations', id: 'acme' } });
    expect(d.relationships.projects).toEqual({ data: [] });
    expect(d.relationships['agent-pool']).toEqual({ data: null });
    expect(d.links).toEqual({ self: `/api/v2/oauth-clients/${d.id}` });
    // Write-only secrets appear nowhere: not in the body, not in the logs, not in clear in the DB.
    expect(res.text).not.toContain(PAT);
    expect(res.text).not.toContain(SECRET);
    expect(logText()).not.toContain(PAT);
    expect(logText()).not.toContain(SECRET);
    const rows = await vcsRows(t);
    expect(JSON.stringify(rows)).not.toContain(PAT);
    expect(JSON.stringify(rows)).not.toContain(SECRET);
    const tokenRow = rows.oauth_tokens.find((r: any) => r.id === tokens.data[0].id) as any;
    expect(tokenRow.token_sealed).toMatch(/^v2\./);
    expect(tokenRow.service_provider_user).toBe('octocat');
    // The provider was asked once, with the PAT, at GET {api-url}/user.
    expect(github.calls.slice(callsBefore).map((c) => `${c.method} ${c.path} ${c.headers.authorization}`)).toEqual([`GET /user Bearer ${PAT}`]);
    // The connection works for background work, with the PAT in clear.
    expect(await connectionForToken(t.running.deps, tokens.data[0].id)).toEqual({
      oauthClientId: d.id,
      oauthTokenId: tokens.data[0].id,
      organizationId: expect.stringMatching(/^org-/),
      serviceProvider: 'github',
      apiUrl: github.apiUrl,
      httpUrl: github.httpUrl,
      token: PAT,
    });
    // And the VCS event log says so.
    const events = await t.api('GET', '/api/v2/organizations/acme/vcs-events', { token: owner });
    expect(events.json.data[0].attributes).toMatchObject({ level: 'info', message: `Connected to GitHub at ${github.apiUrl} as octocat` });
    expect(events.json.data[0].relationships['oauth-client'].data.id).toBe(d.id);
  });

  it('creates GitLab clients for a manage-vcs-settings team member, its team token and the organization token', async () => {
    for (const [token, name] of [
      [vcsManager, 'by manager'],
      [vcsTeamToken, 'by team token'],
      [orgToken, 'by org token'],
    ] as const) {
      const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token, body: oauthClientBody(gitlab, GL_PAT, { name }) });
      expect(res.status).toBe(201);
      expect(res.json.data.attributes['service-provider']).toBe('gitlab_hosted');
      expect(res.json.data.attributes['service-provider-display-name']).toBe('GitLab');
      expect(res.json.data.relationships['oauth-tokens'].data).toHaveLength(1);
    }
    expect(gitlab.calls.at(-1)!.headers['private-token']).toBe(GL_PAT);
  });

  it('accepts each GitHub and GitLab provider name, booleans as strings, and stores URLs without a trailing slash', async () => {
    const ghe = await new FakeVcsProvider('github_enterprise').addToken(PAT, 'ent').start();
    try {
      const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', {
        token: owner,
        body: oauthClientBody(ghe, PAT, { 'api-url': `${ghe.apiUrl}/`, 'http-url': `${ghe.httpUrl}/`, 'organization-scoped': 'false' }),
      });
      expect(res.status).toBe(201);
      expect(res.json.data.attributes['api-url']).toBe(ghe.apiUrl);
      expect(res.json.data.attributes['http-url']).toBe(ghe.httpUrl);
      expect(res.json.data.attributes['organization-scoped']).toBe(false);
      expect(res.json.data.attributes['service-provider-display-name']).toBe('GitHub Enterprise');
    } finally {
      await ghe.close();
    }
    for (const [sp, display] of [
      ['gitlab_community_edition', 'GitLab Community Edition'],
      ['gitlab_enterprise_edition', 'GitLab Enterprise Edition'],
    ]) {
      const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, body: oauthClientBody(gitlab, GL_PAT, { 'service-provider': sp }) });
      expect(res.status).toBe(201);
      expect(res.json.data.attributes['service-provider-display-name']).toBe(display);
    }
  });

  it('takes projects of the organization from relationships (go-tfe sends full nodes)', async () => {
    const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', {
      token: owner,
      body: oauthClientBody(github, PAT, {}, { projects: { data: [{ type: 'projects', id: defaultProjectId, attributes: { name: '' } }] } }),
    });
    expect(res.status).toBe(201);
    expect(res.json.data.relationships.projects).toEqual({ data: [{ type: 'projects', id: defaultProjectId }] });
  });

  describe('bad input changes nothing', () => {
    const cases: [string, () => unknown, number, string | (() => string), string?][] = [
      ['an unsupported provider', () => oauthClientBody(github, PAT, { 'service-provider': 'bitbucket_hosted' }), 422, 'service-provider: must be one of github, github_enterprise, gitlab_hosted, gitlab_community_edition, gitlab_enterprise_edition (Terrace connects to GitHub and GitLab), got "bitbucket_hosted"', '/data/attributes/service-provider'],
      ['no provider', () => oauthClientBody(github, PAT, { 'service-provider': undefined }), 422, 'service-provider: is required', '/data/attributes/service-provider'],
      ['an ftp api-url', () => oauthClientBody(github, PAT, { 'api-url': 'ftp://example.com' }), 422, 'api-url must use http or https, got "ftp"', '/data/attributes/api-url'],
      ['credentials in the api-url', () => oauthClientBody(github, PAT, { 'api-url': 'https://user:pw@example.com' }), 422, 'api-url must not carry a user name or password: the token is sent in a header', '/data/attributes/api-url'],
      ['a query in the api-url', () => oauthClientBody(github, PAT, { 'api-url': 'https://example.com/api?x=1' }), 422, 'api-url must not have a query string (?…)', '/data/attributes/api-url'],
      ['an empty query in the http-url', () => oauthClientBody(github, PAT, { 'http-url': 'https://example.com/?' }), 422, 'http-url must not have a query string (?…)', '/data/attributes/http-url'],
      ['a fragment in the http-url', () => oauthClientBody(github, PAT, { 'http-url': 'https://example.com/#top' }), 422, 'http-url must not have a fragment (#…)', '/data/attributes/http-url'],
      ['a relative http-url', () => oauthClientBody(github, PAT, { 'http-url': 'example.com' }), 422, 'http-url must be an absolute http or https URL, got "example.com"', '/data/attributes/http-url'],
      ['a numeric api-url', () => oauthClientBody(github, PAT, { 'api-url': 42 }), 422, 'api-url: must be a string', '/data/attributes/api-url'],
      ['no http-url', () => oauthClientBody(github, PAT, { 'http-url': null }), 422, 'http-url: is required', '/data/attributes/http-url'],
      ['no PAT', () => oauthClientBody(github, PAT, { 'oauth-token-string': undefined }), 422, 'oauth-token-string is required: Terrace connects to GitHub and GitLab with a personal access token', '/data/attributes/oauth-token-string'],
      ['an empty PAT', () => oauthClientBody(github, ''), 422, 'oauth-token-string is required: Terrace connects to GitHub and GitLab with a personal access token', '/data/attributes/oauth-token-string'],
      ['a numeric PAT', () => oauthClientBody(github, 123 as unknown as string), 422, 'oauth-token-string: must be a string', '/data/attributes/oauth-token-string'],
      ['a name that is a number', () => oauthClientBody(github, PAT, { name: 5 }), 422, 'name: must be a string or null', '/data/attributes/name'],
      ['organization-scoped "yes"', () => oauthClientBody(github, PAT, { 'organization-scoped': 'yes' }), 422, 'organization-scoped: must be true or false', '/data/attributes/organization-scoped'],
      ['a project of another organization', () => oauthClientBody(github, PAT, {}, { projects: { data: [{ type: 'projects', id: otherOrgProjectId }] } }), 422, () => `projects not found in organization "acme": "${otherOrgProjectId}"`, '/data/relationships/projects'],
      ['an unknown project', () => oauthClientBody(github, PAT, {}, { projects: { data: [{ type: 'projects', id: 'prj-nope' }] } }), 422, 'projects not found in organization "acme": "prj-nope"', '/data/relationships/projects'],
      ['projects that are not an array', () => oauthClientBody(github, PAT, {}, { projects: { data: { type: 'projects', id: defaultProjectId } } }), 422, 'relationships.projects.data must be an array of {"type":"projects","id":"prj-…"}', '/data/relationships/projects/data'],
      ['a project node of the wrong type', () => oauthClientBody(github, PAT, {}, { projects: { data: [{ type: 'workspaces', id: defaultProjectId }] } }), 422, 'relationships.projects.data[0] must be {"type":"projects","id":"prj-…"}', '/data/relationships/projects/data/0'],
      ['the wrong type', () => ({ data: { ...oauthClientBody(github, PAT).data, type: 'oauth-tokens' } }), 422, 'data.type must be "oauth-clients", got "oauth-tokens"', '/data/type'],
      ['no data', () => ({}), 422, '"data" must be an object', '/data'],
    ];
    for (const [what, body, status, detail, pointer] of cases) {
      it(`refuses ${what}`, async () => {
        const before = await vcsRows(t);
        const calls = github.calls.length;
        const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, body: body() });
        expect(res.status).toBe(status);
        expect(res.json.errors[0]).toMatchObject({ status: String(status), detail: typeof detail === 'function' ? detail() : detail });
        if (pointer) expect(res.json.errors[0].source).toEqual({ pointer });
        expect(await vcsRows(t)).toEqual(before);
        expect(github.calls.length).toBe(calls);
      });
    }

    it('refuses malformed JSON (400) and a form body (415)', async () => {
      const before = await vcsRows(t);
      const bad = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, rawBody: '{"data":' });
      expect(bad.status).toBe(400);
      expect(bad.json.errors[0].detail).toMatch(/^the request body is not valid JSON/);
      const form = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, rawBody: 'a=b', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
      expect(form.status).toBe(415);
      expect(await vcsRows(t)).toEqual(before);
    });
  });

  it('refuses a PAT the provider rejects (422 with what it said) and logs an error event, creating no client', async () => {
    const clientsBefore = (await vcsRows(t)).oauth_clients;
    const res = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, body: oauthClientBody(github, 'ghp_notKnownToGitHub') });
    expect(res.status).toBe(422);
    expect(res.json.errors[0]).toEqual({
      status: '422',
      title: 'invalid attribute',
      detail: `oauth-token-string was refused: GET ${github.apiUrl}/user failed (GitHub API returned 401: Bad credentials); check the token and api-url`,
      source: { pointer: '/data/attributes/oauth-token-string' },
    });
    expect((await vcsRows(t)).oauth_clients).toEqual(clientsBefore);
    const events = await t.api('GET', '/api/v2/organizations/acme/vcs-events?filter%5Blevels%5D=error', { token: owner });
    expect(events.json.data[0].attributes).toMatchObject({
      level: 'error',
      message: 'Could not verify the personal access token: GitHub API returned 401: Bad credentials',
      'suggested-action': "check the token and its scopes, and that api-url points at the provider's API",
    });
    expect(events.json.data[0].relationships['oauth-client']).toEqual({ data: null });
    expect(events.text).not.toContain('ghp_notKnownToGitHub');
    expect(logText()).not.toContain('ghp_notKnownToGitHub');
  });

  it('refuses when the provider is down or hangs', async () => {
    github.answers.push({ status: 500 });
    const down = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, body: oauthClientBody(github, PAT) });
    expect(down.status).toBe(422);
    expect(down.json.errors[0].detail).toBe(`oauth-token-string was refused: GET ${github.apiUrl}/user failed (GitHub API returned 500: Server Error); check the token and api-url`);
    github.answers.push({ hang: true });
    const hung = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token: owner, body: oauthClientBody(github, PAT) });
    expect(hung.status).toBe(422);
    expect(hung.json.errors[0].detail).toBe(`oauth-token-string was refused: GET ${github.apiUrl}/user failed (GitHub API did not answer within 500 ms); check the token and api-url`);
  });
});

describe('who may see and manage OAuth clients', () => {
  let clientId: string;

  beforeAll(async () => {
    ({ clientId } = await createOAuthClient(t, 'acme', github, PAT, { token: owner, attributes: { name: 'visibility' } }));
  });

  const denied = () => [
    ['a member without manage-vcs-settings', member],
    ['a team token without manage-vcs-settings', plainTeamToken],
    ['a user of no organization', outsider],
  ] as const;

  it('answers 404 to everyone else, for every endpoint, and changes nothing', async () => {
    const before = await vcsRows(t);
    for (const [who, token] of denied()) {
      const list = await t.api('GET', '/api/v2/organizations/acme/oauth-clients', { token });
      expect(list.status, who).toBe(404);
      expect(list.json.errors[0].detail).toBe(
        token === outsider
          ? 'organization "acme" not found, or you are not authorized to see it'
          : 'organization "acme" not found, or you may not manage its VCS settings (owners, teams with manage-vcs-settings and the organization token may)',
      );
      const create = await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token, body: oauthClientBody(github, PAT) });
      expect(create.status, who).toBe(404);
      for (const [method, body] of [['GET', undefined], ['PATCH', { data: { type: 'oauth-clients', attributes: { name: 'x' } } }], ['DELETE', undefined]] as const) {
        const res = await t.api(method, `/api/v2/oauth-clients/${clientId}`, { token, body });
        expect(res.status, `${who} ${method}`).toBe(404);
        expect(res.json.errors[0].detail).toBe(`OAuth client "${clientId}" not found, or you may not manage VCS settings in its organization`);
      }
      // Even an invalid body gets the 404: nothing is read before the caller is authorized.
      const junk = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token, rawBody: '{' });
      expect(junk.status, who).toBe(404);
      expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}/oauth-tokens`, { token })).status).toBe(404);
    }
    expect(await vcsRows(t)).toEqual(before);
  });

  it('answers 401 without a token, or with a bad one', async () => {
    for (const token of [null, 'not-a-token']) {
      expect((await t.api('GET', '/api/v2/organizations/acme/oauth-clients', { token })).status).toBe(401);
      expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token })).status).toBe(401);
      expect((await t.api('POST', '/api/v2/organizations/acme/oauth-clients', { token, body: oauthClientBody(github, PAT) })).status).toBe(401);
    }
  });

  it('answers 404 for an organization that does not exist and a client id that does not', async () => {
    expect((await t.api('GET', '/api/v2/organizations/nope/oauth-clients', { token: owner })).status).toBe(404);
    const res = await t.api('GET', '/api/v2/oauth-clients/oc-doesNotExist0000', { token: owner });
    expect(res.status).toBe(404);
    expect(res.json.errors[0].detail).toBe('OAuth client "oc-doesNotExist0000" not found, or you may not manage VCS settings in its organization');
  });

  it('lets owners, VCS managers, their team token and the organization token read', async () => {
    for (const token of [owner, vcsManager, vcsTeamToken, orgToken]) {
      expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token })).status).toBe(200);
      expect((await t.api('GET', '/api/v2/organizations/acme/oauth-clients', { token })).status).toBe(200);
    }
  });

  it("keeps another organization's owners out (the org token of acme cannot see other's clients)", async () => {
    const { clientId: otherClient } = await createOAuthClient(t, 'other', github, PAT, { token: owner });
    expect((await t.api('GET', `/api/v2/oauth-clients/${otherClient}`, { token: orgToken })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/oauth-clients/${otherClient}`, { token: vcsManager })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/other/oauth-clients', { token: orgToken })).status).toBe(404);
  });
});

describe('listing and showing', () => {
  it('lists every client without page parameters (with meta), pages with them, and includes tokens on request', async () => {
    const all = await t.api('GET', '/api/v2/organizations/acme/oauth-clients', { token: owner });
    expect(all.status).toBe(200);
    const n = all.json.data.length;
    expect(n).toBeGreaterThan(5);
    expect(all.json.meta.pagination).toMatchObject({ 'current-page': 1, 'total-count': n, 'total-pages': 1, 'next-page': null, 'prev-page': null });
    for (const d of all.json.data) {
      expect(d.type).toBe('oauth-clients');
      expect(d.relationships['oauth-tokens'].data).toHaveLength(1);
    }
    expect(all.json.included).toBeUndefined();
    const paged = await t.api('GET', '/api/v2/organizations/acme/oauth-clients?page%5Bnumber%5D=2&page%5Bsize%5D=2', { token: owner });
    expect(paged.json.data.map((d: any) => d.id)).toEqual(all.json.data.slice(2, 4).map((d: any) => d.id));
    expect(paged.json.meta.pagination).toEqual({ 'current-page': 2, 'page-size': 2, 'prev-page': 1, 'next-page': 3, 'total-pages': Math.ceil(n / 2), 'total-count': n });
    const raw = await t.api('GET', '/api/v2/organizations/acme/oauth-clients?page[number]=2&page[size]=2&include=oauth_tokens', { token: owner });
    expect(raw.json.data.map((d: any) => d.id)).toEqual(paged.json.data.map((d: any) => d.id));
    expect(raw.json.included.map((i: any) => i.id)).toEqual(raw.json.data.map((d: any) => d.relationships['oauth-tokens'].data[0].id));
    expect(raw.json.included[0]).toMatchObject({ type: 'oauth-tokens', attributes: { 'service-provider-user': expect.any(String), 'has-ssh-key': false } });
    expect(all.text).not.toContain(PAT);
    expect(raw.text).not.toContain(PAT);
  });

  it('refuses a bad page number with 400', async () => {
    const res = await t.api('GET', '/api/v2/organizations/acme/oauth-clients?page%5Bnumber%5D=abc', { token: owner });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].detail).toBe('page[number] must be a whole number from 1 to 2147483647, got "abc"');
  });
});

describe('updating an OAuth client', () => {
  let clientId: string;
  let tokenId: string;

  beforeAll(async () => {
    ({ clientId, tokenId } = await createOAuthClient(t, 'acme', github, PAT, { token: owner, attributes: { name: 'to-update' } }));
  });

  it('renames, resets the name with null, and changes key, secret and organization-scoped (secret write-only)', async () => {
    const res = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, {
      token: vcsManager,
      body: { data: { type: 'oauth-clients', attributes: { name: 'renamed', key: 'k2', secret: 'new-secret-xyz', 'organization-scoped': false } } },
    });
    expect(res.status).toBe(200);
    expect(res.json.data.attributes).toMatchObject({ name: 'renamed', key: 'k2', 'organization-scoped': false });
    expect(res.text).not.toContain('new-secret-xyz');
    const sealed = (await vcsRows(t)).oauth_clients.find((r: any) => r.id === clientId) as any;
    expect(sealed.secret_sealed).toMatch(/^v2\./);
    const reset = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token: owner, body: { data: { type: 'oauth-clients', attributes: { name: null } } } });
    expect(reset.json.data.attributes.name).toBeNull();
    expect(reset.json.data.attributes.key).toBe('k2');
  });

  it('rotates the PAT in place: the ot- id stays, the owner is re-read, the new token is used from then on', async () => {
    const callsBefore = github.calls.length;
    const res = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token: owner, body: { data: { type: 'oauth-clients', attributes: { 'oauth-token-string': PAT2 } } } });
    expect(res.status).toBe(200);
    expect(res.json.data.relationships['oauth-tokens'].data).toEqual([{ type: 'oauth-tokens', id: tokenId }]);
    expect(res.text).not.toContain(PAT2);
    expect(github.calls.slice(callsBefore).map((c) => c.headers.authorization)).toEqual([`Bearer ${PAT2}`]);
    const tok = await t.api('GET', `/api/v2/oauth-tokens/${tokenId}`, { token: owner });
    expect(tok.json.data.attributes['service-provider-user']).toBe('octocat-rotated');
    expect((await connectionForToken(t.running.deps, tokenId))!.token).toBe(PAT2);
    expect(logText()).not.toContain(PAT2);
  });

  it('refuses a rotation the provider rejects, keeping the old token', async () => {
    const before = (await vcsRows(t)).oauth_tokens;
    const res = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token: owner, body: { data: { type: 'oauth-clients', attributes: { 'oauth-token-string': 'ghp_revoked', name: 'not-applied' } } } });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].detail).toBe(`oauth-token-string was refused: GET ${github.apiUrl}/user failed (GitHub API returned 401: Bad credentials); check the token and api-url`);
    expect((await vcsRows(t)).oauth_tokens).toEqual(before);
    expect((await connectionForToken(t.running.deps, tokenId))!.token).toBe(PAT2);
    expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token: owner })).json.data.attributes.name).toBeNull();
    const events = await t.api('GET', `/api/v2/organizations/acme/vcs-events?filter%5Boauth_client_external_ids%5D=${clientId}&filter%5Blevels%5D=error`, { token: owner });
    expect(events.json.data[0].relationships['oauth-token'].data).toEqual({ type: 'oauth-tokens', id: tokenId });
  });

  it('refuses changes to the provider and URLs, and an empty PAT, changing nothing; accepts the same values', async () => {
    const before = await vcsRows(t);
    const cases: [Record<string, unknown>, string, string][] = [
      [{ 'api-url': 'https://api.github.example' }, `api-url cannot be changed (it is "${github.apiUrl}"): create a new OAuth client instead`, '/data/attributes/api-url'],
      [{ 'http-url': 'https://github.example' }, `http-url cannot be changed (it is "${github.httpUrl}"): create a new OAuth client instead`, '/data/attributes/http-url'],
      [{ 'service-provider': 'gitlab_hosted' }, 'service-provider cannot be changed (it is "github"): create a new OAuth client instead', '/data/attributes/service-provider'],
      [{ 'oauth-token-string': '' }, 'oauth-token-string must be a non-empty personal access token; omit it to keep the current one', '/data/attributes/oauth-token-string'],
      [{ 'oauth-token-string': null }, 'oauth-token-string must be a non-empty personal access token; omit it to keep the current one', '/data/attributes/oauth-token-string'],
      [{ secret: 7 }, 'secret: must be a string', '/data/attributes/secret'],
    ];
    for (const [attributes, detail, pointer] of cases) {
      const res = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token: owner, body: { data: { type: 'oauth-clients', attributes: { name: 'nope', ...attributes } } } });
      expect(res.status).toBe(422);
      expect(res.json.errors[0]).toMatchObject({ detail, source: { pointer } });
    }
    const projects = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, {
      token: owner,
      body: { data: { type: 'oauth-clients', attributes: { name: 'nope' }, relationships: { projects: { data: [{ type: 'projects', id: otherOrgProjectId }] } } } },
    });
    expect(projects.status).toBe(422);
    expect(await vcsRows(t)).toEqual(before);
    const same = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, {
      token: owner,
      body: { data: { type: 'oauth-clients', attributes: { 'api-url': `${github.apiUrl}/`, 'http-url': github.httpUrl, 'service-provider': 'github' } } },
    });
    expect(same.status).toBe(200);
  });

  it('sets projects from relationships, clears them with an empty array, and adds or removes them by relationship', async () => {
    const set = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, {
      token: owner,
      body: { data: { type: 'oauth-clients', relationships: { projects: { data: [{ type: 'projects', id: defaultProjectId }] } } } },
    });
    expect(set.json.data.relationships.projects.data).toEqual([{ type: 'projects', id: defaultProjectId }]);
    const cleared = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token: owner, body: { data: { type: 'oauth-clients', relationships: { projects: { data: [] } } } } });
    expect(cleared.json.data.relationships.projects.data).toEqual([]);
    const add = await t.api('POST', `/api/v2/oauth-clients/${clientId}/relationships/projects`, { token: owner, body: { data: [{ type: 'projects', id: defaultProjectId }] } });
    expect(add.status).toBe(204);
    expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token: owner })).json.data.relationships.projects.data).toEqual([{ type: 'projects', id: defaultProjectId }]);
    const before = await vcsRows(t);
    const unknown = await t.api('POST', `/api/v2/oauth-clients/${clientId}/relationships/projects`, { token: owner, body: { data: [{ type: 'projects', id: otherOrgProjectId }] } });
    expect(unknown.status).toBe(422);
    expect(unknown.json.errors[0].detail).toBe(`projects not found in organization "acme": "${otherOrgProjectId}"`);
    expect(await vcsRows(t)).toEqual(before);
    const remove = await t.api('DELETE', `/api/v2/oauth-clients/${clientId}/relationships/projects`, { token: owner, body: { data: [{ type: 'projects', id: defaultProjectId }] } });
    expect(remove.status).toBe(204);
    expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token: owner })).json.data.relationships.projects.data).toEqual([]);
  });
});

describe('deleting an OAuth client', () => {
  it('removes the client and its token (204), tells the token-deleted hooks, and answers 404 after', async () => {
    const { clientId, tokenId } = await createOAuthClient(t, 'acme', github, PAT, { token: owner });
    // Events of the same instant have no defined order: let the injected clock move on.
    (t.clock as ManualClock).advance(1000);
    const res = await t.api('DELETE', `/api/v2/oauth-clients/${clientId}`, { token: orgToken, headers: { 'Content-Type': 'application/vnd.api+json' } });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(deleted).toContain(tokenId);
    expect((await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token: owner })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/oauth-tokens/${tokenId}`, { token: owner })).status).toBe(404);
    expect(await connectionForToken(t.running.deps, tokenId)).toBeUndefined();
    expect((await t.api('DELETE', `/api/v2/oauth-clients/${clientId}`, { token: owner })).status).toBe(404);
    // The log keeps naming the client it was about.
    const events = await t.api('GET', `/api/v2/organizations/acme/vcs-events?filter%5Boauth_client_external_ids%5D=${clientId}`, { token: owner });
    expect(events.json.data.map((e: any) => e.attributes.message)).toEqual([`OAuth client ${clientId} deleted`, `Connected to GitHub at ${github.apiUrl} as octocat`]);
  });
});
