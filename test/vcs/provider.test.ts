import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Deps } from '../../src/deps.js';
import type { VcsConnection } from '../../src/vcs/connection.js';
import { deleteWebhook, MAX_PROVIDER_RESPONSE_BYTES, providerUser, ProviderError, registerWebhook } from '../../src/vcs/provider.js';
import { capturingLogger } from '../helpers/logs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

const GH_TOKEN = 'ghp_providerTestToken0123456789';
const GL_TOKEN = 'glpat-providerTestToken0123';

let t: TestServer;
let deps: Deps;
let github: FakeVcsProvider;
let ghe: FakeVcsProvider;
let gitlab: FakeVcsProvider;
const logs = capturingLogger('debug');
const logText = () => JSON.stringify(logs.lines);

function conn(p: FakeVcsProvider, token: string, over: Partial<VcsConnection> = {}): VcsConnection {
  const serviceProvider = p.kind === 'gitlab' ? 'gitlab_hosted' : p.kind;
  return { oauthClientId: 'oc-x', oauthTokenId: 'ot-x', organizationId: 'org-x', serviceProvider, apiUrl: p.apiUrl, httpUrl: p.httpUrl, token, ...over };
}

async function failure(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error('expected a ProviderError');
}

beforeAll(async () => {
  t = await startTestServer({ TERRACE_VCS_REQUEST_TIMEOUT_MS: '300', TERRACE_LOG_LEVEL: 'debug' }, { logger: logs.logger });
  deps = t.running.deps;
  github = await new FakeVcsProvider('github').addToken(GH_TOKEN, 'octocat').addToken('ghp_readonly', 'reader', { admin: false }).addRepository('acme/infra').start();
  ghe = await new FakeVcsProvider('github_enterprise').addToken(GH_TOKEN, 'enterprise-cat').addRepository('acme/infra').start();
  gitlab = await new FakeVcsProvider('gitlab').addToken(GL_TOKEN, 'tanuki').addToken('glpat-dev', 'dev', { admin: false }).addRepository('group/sub/project').start();
});

afterAll(async () => {
  await github.close();
  await ghe.close();
  await gitlab.close();
  await t.close();
});

describe('providerUser', () => {
  it('reads GitHub\'s login with Bearer auth and GitHub\'s media type', async () => {
    expect(await providerUser(deps, conn(github, GH_TOKEN))).toBe('octocat');
    const call = github.calls.at(-1)!;
    expect(call.method).toBe('GET');
    expect(call.path).toBe('/user');
    expect(call.headers.authorization).toBe(`Bearer ${GH_TOKEN}`);
    expect(call.headers.accept).toBe('application/vnd.github+json');
    expect(call.headers['private-token']).toBeUndefined();
    expect(call.headers['user-agent']).toBe('Terrace');
  });

  it('reads GitHub Enterprise under its /api/v3 root', async () => {
    expect(await providerUser(deps, conn(ghe, GH_TOKEN))).toBe('enterprise-cat');
    expect(ghe.calls.at(-1)!.path).toBe('/api/v3/user');
  });

  it('reads GitLab\'s username with PRIVATE-TOKEN and no Authorization header', async () => {
    expect(await providerUser(deps, conn(gitlab, GL_TOKEN))).toBe('tanuki');
    const call = gitlab.calls.at(-1)!;
    expect(call.path).toBe('/api/v4/user');
    expect(call.headers['private-token']).toBe(GL_TOKEN);
    expect(call.headers.authorization).toBeUndefined();
  });

  it('accepts an api-url with a trailing slash', async () => {
    expect(await providerUser(deps, conn(gitlab, GL_TOKEN, { apiUrl: `${gitlab.apiUrl}/` }))).toBe('tanuki');
    expect(gitlab.calls.at(-1)!.path).toBe('/api/v4/user');
  });

  it('turns a bad token into a ProviderError with the status and the provider\'s words', async () => {
    const gh = await failure(providerUser(deps, conn(github, 'ghp_wrong')));
    expect(gh.status).toBe(401);
    expect(gh.message).toBe('GitHub API returned 401: Bad credentials');
    const gl = await failure(providerUser(deps, conn(gitlab, 'glpat-wrong')));
    expect(gl.status).toBe(401);
    expect(gl.message).toBe('GitLab API returned 401: 401 Unauthorized');
  });

  it('reports 403 and 500 with their status', async () => {
    github.answers.push({ status: 403 });
    expect((await failure(providerUser(deps, conn(github, GH_TOKEN)))).status).toBe(403);
    github.answers.push({ status: 500 });
    const e = await failure(providerUser(deps, conn(github, GH_TOKEN)));
    expect(e.status).toBe(500);
    expect(e.message).toBe('GitHub API returned 500: Server Error');
  });

  it('gives up on a provider that does not answer within TERRACE_VCS_REQUEST_TIMEOUT_MS', async () => {
    github.answers.push({ hang: true });
    const e = await failure(providerUser(deps, conn(github, GH_TOKEN)));
    expect(e.status).toBeNull();
    expect(e.message).toBe('GitHub API did not answer within 300 ms');
  });

  it('does not follow a redirect (the token would travel with it)', async () => {
    const other = await new FakeVcsProvider('github').addToken(GH_TOKEN, 'thief').start();
    try {
      github.answers.push({ redirect: `${other.apiUrl}/user`, status: 307 });
      const e = await failure(providerUser(deps, conn(github, GH_TOKEN)));
      expect(e.status).toBe(307);
      expect(e.message).toMatch(/redirect \(HTTP 307\), which Terrace does not follow/);
      expect(other.calls).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('refuses an answer larger than the cap, declared or streamed', async () => {
    const big = 'x'.repeat(MAX_PROVIDER_RESPONSE_BYTES + 10);
    github.answers.push({ status: 200, rawBody: big });
    const declared = await failure(providerUser(deps, conn(github, GH_TOKEN)));
    expect(declared.message).toBe(`GitHub API: the answer is larger than ${MAX_PROVIDER_RESPONSE_BYTES} bytes`);
    github.answers.push({ status: 200, rawBody: big, contentLength: false });
    const streamed = await failure(providerUser(deps, conn(github, GH_TOKEN)));
    expect(streamed.message).toBe(`GitHub API: the answer is larger than ${MAX_PROVIDER_RESPONSE_BYTES} bytes`);
  });

  it('refuses an answer that is not JSON, or has no login', async () => {
    github.answers.push({ status: 200, rawBody: '<html>' });
    expect((await failure(providerUser(deps, conn(github, GH_TOKEN)))).message).toBe('GitHub API answered 200 with a body that is not JSON');
    github.answers.push({ status: 200, body: { username: 'wrong-field' } });
    expect((await failure(providerUser(deps, conn(github, GH_TOKEN)))).message).toBe('GitHub API answered GET /user without a login');
  });

  it('reports a provider that is down without a status', async () => {
    const dead: Server = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const e = await failure(providerUser(deps, conn(github, GH_TOKEN, { apiUrl: `http://127.0.0.1:${port}` })));
    expect(e.status).toBeNull();
    expect(e.message).toBe('GitHub API could not be reached (ECONNREFUSED)');
  });

  it('never repeats the token, even when the provider echoes it', async () => {
    github.answers.push({ status: 401, body: { message: `token ${GH_TOKEN} is revoked` } });
    const e = await failure(providerUser(deps, conn(github, GH_TOKEN)));
    expect(e.message).toBe('GitHub API returned 401: token [token] is revoked');
    expect(logText()).not.toContain(GH_TOKEN);
    expect(logText()).not.toContain(GL_TOKEN);
    expect(logText()).toContain('VCS provider call');
  });
});

describe('registerWebhook and deleteWebhook on GitHub', () => {
  it('creates a JSON push/create hook carrying the secret, and returns its id', async () => {
    const { hookId } = await registerWebhook(deps, conn(github, GH_TOKEN), 'acme/infra', 'https://terrace.example/webhooks/vcs/abc', 'hook-secret');
    expect(hookId).toMatch(/^\d+$/);
    const call = github.calls.at(-1)!;
    expect(call.method).toBe('POST');
    expect(call.path).toBe('/repos/acme/infra/hooks');
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.body).toEqual({
      name: 'web',
      active: true,
      events: ['push', 'create'],
      config: { url: 'https://terrace.example/webhooks/vcs/abc', content_type: 'json', secret: 'hook-secret', insecure_ssl: '0' },
    });
    expect(github.hooks.map((h) => String(h.id))).toContain(hookId);

    await deleteWebhook(deps, conn(github, GH_TOKEN), 'acme/infra', hookId);
    expect(github.calls.at(-1)!.method).toBe('DELETE');
    expect(github.calls.at(-1)!.path).toBe(`/repos/acme/infra/hooks/${hookId}`);
    expect(github.hooks.map((h) => String(h.id))).not.toContain(hookId);
  });

  it('treats deleting a hook that is already gone as done', async () => {
    await expect(deleteWebhook(deps, conn(github, GH_TOKEN), 'acme/infra', '999999')).resolves.toBeUndefined();
  });

  it('reports a repository the token may not administer (GitHub says 404)', async () => {
    const e = await failure(registerWebhook(deps, conn(github, 'ghp_readonly'), 'acme/infra', 'https://x.example/h', 's'));
    expect(e.status).toBe(404);
    expect(e.message).toBe('GitHub API returned 404: Not Found');
  });

  it('refuses identifiers that are not owner/repo without calling the provider', async () => {
    const before = github.calls.length;
    for (const bad of ['acme', 'acme/infra/extra', '../etc', 'acme/..', 'acme/in fra', 'acme/infra?x=1', 'acme%2Finfra']) {
      const e = await failure(registerWebhook(deps, conn(github, GH_TOKEN), bad, 'https://x.example/h', 's'));
      expect(e.status).toBeNull();
      expect(e.message).toMatch(/is not a repository identifier \(owner\/repository\)/);
    }
    const e = await failure(deleteWebhook(deps, conn(github, GH_TOKEN), 'acme/infra', '12/../../user'));
    expect(e.message).toMatch(/is not a webhook id/);
    expect(github.calls.length).toBe(before);
  });
});

describe('registerWebhook and deleteWebhook on GitLab', () => {
  it('creates a tag-push hook on the url-encoded project path with the secret as its token', async () => {
    const { hookId } = await registerWebhook(deps, conn(gitlab, GL_TOKEN), 'group/sub/project', 'https://terrace.example/webhooks/vcs/def', 'gl-secret');
    const call = gitlab.calls.at(-1)!;
    expect(call.method).toBe('POST');
    expect(call.path).toBe('/api/v4/projects/group%2Fsub%2Fproject/hooks');
    expect(call.headers['private-token']).toBe(GL_TOKEN);
    expect(call.body).toEqual({ url: 'https://terrace.example/webhooks/vcs/def', token: 'gl-secret', tag_push_events: true, push_events: false, enable_ssl_verification: true });

    await deleteWebhook(deps, conn(gitlab, GL_TOKEN), 'group/sub/project', hookId);
    expect(gitlab.calls.at(-1)!.path).toBe(`/api/v4/projects/group%2Fsub%2Fproject/hooks/${hookId}`);
    expect(gitlab.hooks).toHaveLength(0);
  });

  it('reports 403 for a developer token and 404 for an unknown project', async () => {
    const forbidden = await failure(registerWebhook(deps, conn(gitlab, 'glpat-dev'), 'group/sub/project', 'https://x.example/h', 's'));
    expect(forbidden.status).toBe(403);
    expect(forbidden.message).toBe('GitLab API returned 403: 403 Forbidden');
    const missing = await failure(registerWebhook(deps, conn(gitlab, GL_TOKEN), 'group/nope', 'https://x.example/h', 's'));
    expect(missing.status).toBe(404);
    expect(missing.message).toBe('GitLab API returned 404: 404 Project Not Found');
  });

  it('refuses a delete the provider answers with 500', async () => {
    gitlab.answers.push({ status: 500 });
    const e = await failure(deleteWebhook(deps, conn(gitlab, GL_TOKEN), 'group/sub/project', '1'));
    expect(e.status).toBe(500);
  });
});
