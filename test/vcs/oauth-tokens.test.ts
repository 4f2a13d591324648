import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import { resolvePrincipal } from '../../src/identity/principal.js';
import { sealedColumnsRegistered } from '../../src/encryption/registry.js';
import { connectionForToken, registerOAuthTokenDeletedHook, usableConnection } from '../../src/vcs/service.js';
import { capturingLogger } from '../helpers/logs.js';
import { RFC3339, accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createOAuthClient, vcsRows } from '../helpers/vcs.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

const PAT = 'glpat-tokensTestPersonalToken01';
const SSH_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----';

let t: TestServer;
let gitlab: FakeVcsProvider;
let owner: string;
let member: string;
let vcsManager: string;
let outsider: string;
let orgToken: string;
let acmeId: string;
let otherId: string;
const logs = capturingLogger('debug');
const deletedTokens: string[] = [];
const logText = () => JSON.stringify(logs.lines);

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { logger: logs.logger });
  registerOAuthTokenDeletedHook(async (_deps, id) => {
    deletedTokens.push(id);
  });
  gitlab = await new FakeVcsProvider('gitlab').addToken(PAT, 'tanuki').addToken('glpat-second', 'second').start();
  owner = (await createUserWithToken(t, 'owner')).token;
  await createOrg(t, 'acme', { token: owner });
  await createOrg(t, 'other', { token: owner });
  member = (await createUserWithToken(t, 'member')).token;
  await accept(t, member, await invite(t, owner, 'acme', 'member'));
  const team = await createTeam(t, owner, 'acme', 'vcs', { 'organization-access': { 'manage-vcs-settings': true } });
  vcsManager = (await createUserWithToken(t, 'manager')).token;
  await accept(t, vcsManager, await invite(t, owner, 'acme', 'manager', [team.id]));
  outsider = (await createUserWithToken(t, 'outsider')).token;
  orgToken = (await t.api('POST', '/api/v2/organizations/acme/authentication-token', { token: owner })).json.data.attributes.token;
  const orgs = await t.running.deps.db.selectFrom('organizations').select(['id', 'name']).execute();
  acmeId = orgs.find((o) => o.name === 'acme')!.id;
  otherId = orgs.find((o) => o.name === 'other')!.id;
});

afterAll(async () => {
  await gitlab.close();
  await t.close();
});

function expectTokenShape(d: any, clientId: string, user: string) {
  expect(d).toEqual({
    id: expect.stringMatching(/^ot-[A-Za-z0-9]{16}$/),
    type: 'oauth-tokens',
    attributes: { uid: expect.any(String), 'created-at': expect.stringMatching(RFC3339), 'has-ssh-key': false, 'service-provider-user': user },
    relationships: { 'oauth-client': { data: { type: 'oauth-clients', id: clientId }, links: { related: `/api/v2/oauth-clients/${clientId}` } } },
    links: { self: `/api/v2/oauth-tokens/${d.id}` },
  });
}

describe('reading OAuth tokens', () => {
  let clientId: string;
  let tokenId: string;

  beforeAll(async () => {
    ({ clientId, tokenId } = await createOAuthClient(t, 'acme', gitlab, PAT, { token: owner }));
  });

  it("lists them on go-tfe's path, /organizations/:org/oauth-tokens, with meta", async () => {
    const res = await t.api('GET', '/api/v2/organizations/acme/oauth-tokens', { token: owner });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(1);
    expectTokenShape(res.json.data[0], clientId, 'tanuki');
    expect(res.json.meta.pagination).toMatchObject({ 'current-page': 1, 'total-count': 1, 'total-pages': 1 });
    expect(res.text).not.toContain(PAT);
  });

  it("lists them on the docs' path, /oauth-clients/:id/oauth-tokens", async () => {
    const res = await t.api('GET', `/api/v2/oauth-clients/${clientId}/oauth-tokens`, { token: vcsManager });
    expect(res.status).toBe(200);
    expect(res.json.data.map((d: any) => d.id)).toEqual([tokenId]);
    expectTokenShape(res.json.data[0], clientId, 'tanuki');
  });

  it('shows one', async () => {
    const res = await t.api('GET', `/api/v2/oauth-tokens/${tokenId}`, { token: orgToken });
    expect(res.status).toBe(200);
    expectTokenShape(res.json.data, clientId, 'tanuki');
  });

  it('answers 404 to members without the permission, outsiders and other organizations, 401 without a token', async () => {
    for (const token of [member, outsider]) {
      const res = await t.api('GET', `/api/v2/oauth-tokens/${tokenId}`, { token });
      expect(res.status).toBe(404);
      expect(res.json.errors[0].detail).toBe(`OAuth token "${tokenId}" not found, or you may not manage VCS settings in its organization`);
      expect((await t.api('GET', '/api/v2/organizations/acme/oauth-tokens', { token })).status).toBe(404);
      expect((await t.api('PATCH', `/api/v2/oauth-tokens/${tokenId}`, { token, body: { data: { type: 'oauth-tokens', attributes: { 'ssh-key': SSH_KEY } } } })).status).toBe(404);
      expect((await t.api('DELETE', `/api/v2/oauth-tokens/${tokenId}`, { token })).status).toBe(404);
    }
    const { tokenId: otherToken } = await createOAuthClient(t, 'other', gitlab, PAT, { token: owner });
    expect((await t.api('GET', `/api/v2/oauth-tokens/${otherToken}`, { token: orgToken })).status).toBe(404);
    expect((await t.api('GET', `/api/v2/oauth-tokens/${tokenId}`, { token: null })).status).toBe(401);
    expect((await t.api('GET', '/api/v2/oauth-tokens/ot-doesNotExist000', { token: owner })).status).toBe(404);
    expect(deletedTokens).not.toContain(tokenId);
  });
});

describe('updating an OAuth token', () => {
  let tokenId: string;

  beforeAll(async () => {
    ({ tokenId } = await createOAuthClient(t, 'acme', gitlab, PAT, { token: owner }));
  });

  it('sets a write-only ssh-key (has-ssh-key true, the key sealed and never shown), and removes it with null', async () => {
    const res = await t.api('PATCH', `/api/v2/oauth-tokens/${tokenId}`, { token: vcsManager, body: { data: { type: 'oauth-tokens', attributes: { 'ssh-key': SSH_KEY } } } });
    expect(res.status).toBe(200);
    expect(res.json.data.attributes['has-ssh-key']).toBe(true);
    expect(res.text).not.toContain('b3BlbnNzaC1rZXktdjEAAAAA');
    const row = (await vcsRows(t)).oauth_tokens.find((r: any) => r.id === tokenId) as any;
    expect(row.ssh_key_sealed).toMatch(/^v2\./);
    expect(JSON.stringify(await vcsRows(t))).not.toContain('b3BlbnNzaC1rZXktdjEAAAAA');
    expect(logText()).not.toContain('b3BlbnNzaC1rZXktdjEAAAAA');
    const kept = await t.api('PATCH', `/api/v2/oauth-tokens/${tokenId}`, { token: owner, body: { data: { type: 'oauth-tokens', attributes: {} } } });
    expect(kept.json.data.attributes['has-ssh-key']).toBe(true);
    const cleared = await t.api('PATCH', `/api/v2/oauth-tokens/${tokenId}`, { token: owner, body: { data: { type: 'oauth-tokens', attributes: { 'ssh-key': null } } } });
    expect(cleared.json.data.attributes['has-ssh-key']).toBe(false);
  });

  it('refuses bad bodies with 422 and changes nothing', async () => {
    const before = await vcsRows(t);
    const cases: [unknown, string, string][] = [
      [{ data: { type: 'oauth-tokens', attributes: { 'ssh-key': 42 } } }, 'ssh-key: must be a string', '/data/attributes/ssh-key'],
      [{ data: { type: 'oauth-tokens', attributes: { 'ssh-key': 'x'.repeat(16385) } } }, 'ssh-key: must be at most 16384 characters', '/data/attributes/ssh-key'],
      [{ data: { type: 'oauth-clients', attributes: { 'ssh-key': SSH_KEY } } }, 'data.type must be "oauth-tokens", got "oauth-clients"', '/data/type'],
      [{ data: [] }, '"data" must be an object', '/data'],
    ];
    for (const [body, detail, pointer] of cases) {
      const res = await t.api('PATCH', `/api/v2/oauth-tokens/${tokenId}`, { token: owner, body });
      expect(res.status).toBe(422);
      expect(res.json.errors[0]).toMatchObject({ status: '422', detail, source: { pointer } });
    }
    expect(await vcsRows(t)).toEqual(before);
  });
});

describe('deleting an OAuth token', () => {
  it('removes it (204), tells the hooks, leaves the client without a token; a new PAT on the client makes a new one', async () => {
    const { clientId, tokenId } = await createOAuthClient(t, 'acme', gitlab, PAT, { token: owner });
    const res = await t.api('DELETE', `/api/v2/oauth-tokens/${tokenId}`, { token: vcsManager });
    expect(res.status).toBe(204);
    expect(deletedTokens).toContain(tokenId);
    expect(await connectionForToken(t.running.deps, tokenId)).toBeUndefined();
    const client = await t.api('GET', `/api/v2/oauth-clients/${clientId}`, { token: owner });
    expect(client.json.data.relationships['oauth-tokens'].data).toEqual([]);
    expect((await t.api('GET', `/api/v2/oauth-tokens/${tokenId}`, { token: owner })).status).toBe(404);
    const again = await t.api('PATCH', `/api/v2/oauth-clients/${clientId}`, { token: owner, body: { data: { type: 'oauth-clients', attributes: { 'oauth-token-string': 'glpat-second' } } } });
    expect(again.status).toBe(200);
    const tokens = again.json.data.relationships['oauth-tokens'].data;
    expect(tokens).toHaveLength(1);
    expect(tokens[0].id).not.toBe(tokenId);
    expect((await t.api('GET', `/api/v2/oauth-tokens/${tokens[0].id}`, { token: owner })).json.data.attributes['service-provider-user']).toBe('second');
  });
});

describe('what other domains use', () => {
  it('usableConnection gives a member the connection of a token of the organization, and 422 otherwise', async () => {
    const { tokenId, clientId } = await createOAuthClient(t, 'acme', gitlab, PAT, { token: owner });
    const { tokenId: otherToken } = await createOAuthClient(t, 'other', gitlab, PAT, { token: owner });
    const deps = t.running.deps;
    const asMember = (await resolvePrincipal(deps, member))!;
    const asOutsider = (await resolvePrincipal(deps, outsider))!;
    expect(await usableConnection(deps, asMember, acmeId, tokenId)).toEqual({
      oauthClientId: clientId,
      oauthTokenId: tokenId,
      organizationId: acmeId,
      serviceProvider: 'gitlab_hosted',
      apiUrl: gitlab.apiUrl,
      httpUrl: gitlab.httpUrl,
      token: PAT,
    });
    for (const [p, org, tok] of [
      [asMember, acmeId, otherToken],
      [asMember, otherId, otherToken],
      [asOutsider, acmeId, tokenId],
      [asMember, acmeId, 'ot-doesNotExist000'],
    ] as const) {
      const err = await usableConnection(deps, p, org, tok).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(422);
      expect((err as ApiError).detail).toBe(`oauth-token-id "${tok}" is not an OAuth token of this organization: list them with GET /api/v2/organizations/:org/oauth-tokens`);
    }
  });

  it('registers every secret column for key rotation', () => {
    const cols = sealedColumnsRegistered().map((c) => `${c.table}.${c.column}`);
    expect(cols).toEqual(expect.arrayContaining(['oauth_tokens.token_sealed', 'oauth_tokens.ssh_key_sealed', 'oauth_clients.secret_sealed']));
  });
});

describe('key rotation', () => {
  it('re-encrypts PATs and SSH keys under the new key; they still read once the old key is gone', async () => {
    const KEY_A = `a:${Buffer.alloc(32, 7).toString('base64')}`;
    const dataDir = tempDir('terrace-vcs-keys-');
    const provider = await new FakeVcsProvider('github').addToken('ghp_rotationPat', 'rotor').start();
    let s = await startTestServer({ TERRACE_JOBS: 'false' }, { dataDir });
    try {
      await createOrg(s, 'keys');
      const { tokenId, clientId } = await createOAuthClient(s, 'keys', provider, 'ghp_rotationPat', { attributes: { secret: 'app-secret' } });
      await s.api('PATCH', `/api/v2/oauth-tokens/${tokenId}`, { body: { data: { type: 'oauth-tokens', attributes: { 'ssh-key': SSH_KEY } } } });
      const sealed = async () => {
        const tok = await s.running.deps.db.selectFrom('oauth_tokens').select(['token_sealed', 'ssh_key_sealed']).where('id', '=', tokenId).executeTakeFirstOrThrow();
        const cl = await s.running.deps.db.selectFrom('oauth_clients').select('secret_sealed').where('id', '=', clientId).executeTakeFirstOrThrow();
        return [tok.token_sealed, tok.ssh_key_sealed, cl.secret_sealed];
      };
      expect((await sealed()).every((v) => v?.startsWith('v2.default.'))).toBe(true);
      await s.close({ keepData: true });
      s = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_ENCRYPTION_KEYS: KEY_A }, { dataDir });
      await s.running.jobs.runDue();
      expect((await sealed()).every((v) => v?.startsWith('v2.a.'))).toBe(true);
      fs.rmSync(path.join(dataDir, 'secret.key'));
      await s.close({ keepData: true });
      s = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_ENCRYPTION_KEYS: KEY_A }, { dataDir });
      expect((await connectionForToken(s.running.deps, tokenId))!.token).toBe('ghp_rotationPat');
    } finally {
      await s.close();
      await provider.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
