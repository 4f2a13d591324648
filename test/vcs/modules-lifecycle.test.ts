import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { accept, createOrg, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createOAuthClient } from '../helpers/vcs.js';
import { createVcsModule, deliverGitHub, deliverGitLab, eventMessages, eventually, githubTagPush, gitlabTagPush, readModule, versionSettled } from '../helpers/vcs-modules.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

const PAT = 'ghp_lifecyclePersonalAccessToken01';
const NO_GIT_PAT = 'ghp_tokenTheGitServerRefuses00002';
const NO_ADMIN_PAT = 'ghp_tokenWithoutAdminRights000003';
const ROTATED_PAT = 'ghp_rotatedLifecycleToken00000004';
const GL_PAT = 'glpat-lifecycleGitLabToken0005';

let t: TestServer;
let git: GitServer;
let github: FakeVcsProvider;
let gitlab: FakeVcsProvider;
let member: string;

const modulePath = (name: string, provider: string) => `/api/v2/organizations/acme/registry-modules/private/acme/${name}/${provider}`;
async function webhookOf(name: string, provider: string) {
  return (await t.api('GET', `${modulePath(name, provider)}/vcs-webhook`)).json.data.attributes as { url: string; secret: string; registered: boolean; error: string | null };
}
const settledStatus = (name: string, provider: string) =>
  eventually(async () => {
    const m = await readModule(t, 'acme', name, provider);
    return m.attributes.status === 'pending' ? undefined : m;
  }, `the setup of ${name}`);

beforeAll(async () => {
  git = await startGitServer({ tokens: [PAT, NO_ADMIN_PAT, ROTATED_PAT, GL_PAT] });
  github = await new FakeVcsProvider('github').addToken(PAT, 'octocat').addToken(NO_GIT_PAT, 'stranger').addToken(NO_ADMIN_PAT, 'reader', { admin: false }).addToken(ROTATED_PAT, 'octocat').start();
  gitlab = await new FakeVcsProvider('gitlab').addToken(GL_PAT, 'tanuki').start();
  for (const r of ['acme/terraform-aws-down', 'acme/terraform-aws-refused', 'acme/terraform-aws-revoked', 'acme/terraform-aws-branchy', 'acme/terraform-aws-readonly', 'acme/terraform-aws-orphan', 'acme/terraform-aws-midscan']) github.addRepository(r);
  gitlab.addRepository('grp/terraform-google-net');
  // A rescan every 5 seconds: tags pushed without any webhook appear on their own.
  t = await startTestServer({ TERRACE_VCS_REQUEST_TIMEOUT_MS: '2000', TERRACE_GIT_TIMEOUT_MS: '20000', TERRACE_VCS_RESCAN_SECONDS: '5' }, { clock: systemClock });
  await createOrg(t, 'acme');
  const m = await createUserWithToken(t, 'member');
  await accept(t, m.token, await invite(t, t.adminToken, 'acme', 'member'));
  member = m.token;
});

afterAll(async () => {
  await t?.close();
  await github?.close();
  await gitlab?.close();
  await git?.close();
});

describe('connection failures', () => {
  it('a repository host that is down: setup_failed with an error event; a resync once it is back publishes', async () => {
    const { tokenId } = await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } });
    const repo = git.repo('acme/terraform-aws-down');
    repo.commit({ 'main.tf': 'variable "x" {}\n' });
    repo.tag('v0.1.0');
    repo.push();
    git.mode = 'down';
    try {
      await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-down', 'oauth-token-id': tokenId });
      expect((await settledStatus('down', 'aws')).attributes.status).toBe('setup_failed');
    } finally {
      git.mode = 'ok';
    }
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message.startsWith('acme/down/aws: could not list the tags of acme/terraform-aws-down'));
    expect(ev).toMatchObject({ level: 'error', 'suggested-action': 'check that the repository host is reachable; a resync retries' });
    expect(ev!.message).toContain('could not be reached');
    expect((await t.api('POST', `${modulePath('down', 'aws')}/actions/resync`)).status).toBe(200);
    expect(await versionSettled(t, 'acme', 'down', 'aws', '0.1.0')).toMatchObject({ status: 'ok' });
    expect((await readModule(t, 'acme', 'down', 'aws')).attributes.status).toBe('setup_complete');
  });

  it('a token the repository refuses: setup_failed, and the event says to rotate it', async () => {
    const { tokenId } = await createOAuthClient(t, 'acme', github, NO_GIT_PAT, { attributes: { 'http-url': git.url } });
    git.repo('acme/terraform-aws-refused').commit({ 'main.tf': 'variable "x" {}\n' });
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-refused', 'oauth-token-id': tokenId });
    const m = await settledStatus('refused', 'aws');
    expect(m.attributes.status).toBe('setup_failed');
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message.startsWith('acme/refused/aws: could not list the tags'));
    expect(ev!.message).toContain('the repository refused the OAuth token');
    expect(ev!['suggested-action']).toContain('rotate the token with PATCH /api/v2/oauth-clients/:id');
    expect(JSON.stringify(await eventMessages(t, 'acme'))).not.toContain(NO_GIT_PAT);
  });

  it('a revoked token stops publishing; rotating it on the OAuth client (same ot- id) brings the module back', async () => {
    const client = await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } });
    const repo = git.repo('acme/terraform-aws-revoked');
    repo.commit({ 'main.tf': 'variable "x" {}\n' });
    repo.tag('v1.0.0');
    repo.push();
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-revoked', 'oauth-token-id': client.tokenId });
    expect(await versionSettled(t, 'acme', 'revoked', 'aws', '1.0.0')).toMatchObject({ status: 'ok' });
    git.tokens.delete(PAT);
    try {
      repo.commit({ 'main.tf': 'variable "y" {}\n' });
      repo.tag('v1.1.0');
      repo.push();
      await t.api('POST', `${modulePath('revoked', 'aws')}/actions/resync`);
      const m = await eventually(async () => {
        const x = await readModule(t, 'acme', 'revoked', 'aws');
        return x.attributes.status === 'setup_failed' ? x : undefined;
      }, 'setup_failed');
      expect(m.attributes['version-statuses'].map((v: any) => v.version)).toEqual(['1.0.0']);
    } finally {
      git.tokens.add(PAT);
    }
    const rotate = await t.api('PATCH', `/api/v2/oauth-clients/${client.clientId}`, { body: { data: { type: 'oauth-clients', attributes: { 'oauth-token-string': ROTATED_PAT } } } });
    expect(rotate.status).toBe(200);
    expect(rotate.json.data.relationships['oauth-tokens'].data[0].id).toBe(client.tokenId);
    git.tokens.delete(PAT);
    try {
      await t.api('POST', `${modulePath('revoked', 'aws')}/actions/resync`);
      expect(await versionSettled(t, 'acme', 'revoked', 'aws', '1.1.0')).toMatchObject({ status: 'ok' });
    } finally {
      git.tokens.add(PAT);
    }
    expect((await readModule(t, 'acme', 'revoked', 'aws')).attributes.status).toBe('setup_complete');
  });

  it('a token that may not create the webhook: the event log says why, the URL and secret are readable, and the module still publishes', async () => {
    const { tokenId } = await createOAuthClient(t, 'acme', github, NO_ADMIN_PAT, { attributes: { 'http-url': git.url } });
    const repo = git.repo('acme/terraform-aws-readonly');
    repo.commit({ 'main.tf': 'variable "x" {}\n' });
    repo.tag('v1.0.0');
    repo.push();
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-readonly', 'oauth-token-id': tokenId });
    expect(await versionSettled(t, 'acme', 'readonly', 'aws', '1.0.0')).toMatchObject({ status: 'ok' });
    expect((await readModule(t, 'acme', 'readonly', 'aws')).attributes.status).toBe('setup_complete');
    const w = await webhookOf('readonly', 'aws');
    expect(w.registered).toBe(false);
    expect(w.error).toMatch(/404|not found/i);
    expect(w.url).toMatch(/\/webhooks\/vcs\/[0-9a-f-]{36}$/);
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message.startsWith('Could not create the webhook of acme/readonly/aws on acme/terraform-aws-readonly'));
    expect(ev!.level).toBe('error');
    expect(ev!['suggested-action']).toContain('admin (GitHub) or maintainer (GitLab)');
    // A hook added by hand with that URL and secret works.
    const sha = repo.commit({ 'main.tf': 'variable "y" {}\n' });
    repo.tag('v1.1.0');
    repo.push();
    const r = await deliverGitHub(t, w.url, 'push', githubTagPush('acme/terraform-aws-readonly', 'v1.1.0', { after: sha }), w.secret);
    expect(r.status).toBe(202);
    expect(await versionSettled(t, 'acme', 'readonly', 'aws', '1.1.0')).toMatchObject({ status: 'ok' });
  });

  it('deleting the OAuth client stops ingestion with a clear status', async () => {
    const client = await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } });
    const repo = git.repo('acme/terraform-aws-orphan');
    repo.commit({ 'main.tf': 'variable "x" {}\n' });
    repo.tag('v1.0.0');
    repo.push();
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-orphan', 'oauth-token-id': client.tokenId });
    expect(await versionSettled(t, 'acme', 'orphan', 'aws', '1.0.0')).toMatchObject({ status: 'ok' });
    const w = await webhookOf('orphan', 'aws');
    expect((await t.api('DELETE', `/api/v2/oauth-clients/${client.clientId}`)).status).toBe(204);
    const m = await readModule(t, 'acme', 'orphan', 'aws');
    expect(m.attributes.status).toBe('setup_failed');
    expect(m.attributes['vcs-repo']['oauth-token-id']).toBeNull();
    expect(m.attributes.permissions).toEqual({ 'can-delete': true, 'can-resync': false, 'can-retry': false });
    // The published version stays servable.
    expect((await t.api('GET', '/v1/modules/acme/orphan/aws/versions')).json.modules[0].versions.map((v: any) => v.version)).toEqual(['1.0.0']);
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message.startsWith(`acme/orphan/aws: its OAuth token ${client.tokenId} was deleted`));
    expect(ev).toMatchObject({ level: 'error', 'suggested-action': 'connect the module to another OAuth token with PATCH (vcs-repo.oauth-token-id)' });
    // Later deliveries are acknowledged and publish nothing; resync says what to do.
    const sha = repo.commit({ 'main.tf': 'variable "y" {}\n' });
    repo.tag('v1.1.0');
    repo.push();
    const r = await deliverGitHub(t, w.url, 'push', githubTagPush('acme/terraform-aws-orphan', 'v1.1.0', { after: sha }), w.secret);
    expect(r.status).toBe(200);
    expect(r.json.status).toBe('ignored');
    const resync = await t.api('POST', `${modulePath('orphan', 'aws')}/actions/resync`);
    expect(resync.status).toBe(422);
    expect(resync.json.errors[0].detail).toContain('has lost its OAuth token');
  });

  it('a client deleted while a scan reads the tags: the module stays setup_failed and the scan queues nothing', async () => {
    const client = await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } });
    const repo = git.repo('acme/terraform-aws-midscan');
    repo.commit({ 'main.tf': 'variable "x" {}\n' });
    repo.tag('v1.0.0');
    repo.push();
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-midscan', 'oauth-token-id': client.tokenId });
    expect(await versionSettled(t, 'acme', 'midscan', 'aws', '1.0.0')).toMatchObject({ status: 'ok' });
    repo.commit({ 'main.tf': 'variable "y" {}\n' });
    repo.tag('v1.1.0');
    repo.push();
    // The next scan (a resync, or the periodic rescan if it comes first) is caught inside its read.
    const held = git.hold('acme/terraform-aws-midscan');
    expect((await t.api('POST', `${modulePath('midscan', 'aws')}/actions/resync`)).status).toBe(200);
    await held.arrived;
    expect((await t.api('DELETE', `/api/v2/oauth-clients/${client.clientId}`)).status).toBe(204);
    held.release();
    await eventually(
      async () => (await eventMessages(t, 'acme')).find((e) => e.message.startsWith('Discarded the 2 tag(s) read from acme/terraform-aws-midscan')),
      'the discarded scan',
    );
    const m = await readModule(t, 'acme', 'midscan', 'aws');
    expect(m.attributes.status).toBe('setup_failed');
    expect(m.attributes['vcs-repo']['oauth-token-id']).toBeNull();
    expect(m.attributes['version-statuses'].map((v: any) => v.version)).toEqual(['1.0.0']);
  });
});

describe('branch-based publishing', () => {
  let tokenId: string;
  let head: string;
  beforeAll(async () => {
    tokenId = (await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } })).tokenId;
    const repo = git.repo('acme/terraform-aws-branchy');
    repo.commit({ 'main.tf': 'variable "first" {}\n' });
    head = repo.commit({ 'main.tf': 'variable "second" {}\n' });
    repo.push();
  });

  it('publishes the initial version from the branch head, and later versions only from a commit SHA', async () => {
    const d = await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-branchy', 'oauth-token-id': tokenId, branch: 'main', tags: false }, { 'initial-version': '0.1.0' });
    expect(d.attributes['publishing-mechanism']).toBe('branch');
    expect(d.attributes['vcs-repo']).toMatchObject({ branch: 'main', tags: false });
    expect(d.attributes.permissions['can-resync']).toBe(false);
    expect(await versionSettled(t, 'acme', 'branchy', 'aws', '0.1.0')).toMatchObject({ status: 'ok' });
    expect((await t.api('GET', '/v1/modules/acme/branchy/aws/0.1.0')).json.root.inputs.map((i: any) => i.name)).toEqual(['second']);
    const first = git.repo('acme/terraform-aws-branchy');
    const sha = first.commit({ 'main.tf': 'variable "third" {}\n' });
    first.push();
    const r = await t.api('POST', `${modulePath('branchy', 'aws')}/versions`, { body: { data: { type: 'registry-module-versions', attributes: { version: '0.2.0', 'commit-sha': sha } } } });
    expect(r.status).toBe(201);
    expect(r.json.data).toMatchObject({ type: 'registry-module-versions', attributes: { version: '0.2.0', status: 'cloning', 'commit-sha': sha } });
    expect(r.json.data.links.upload).toBeUndefined();
    expect(await versionSettled(t, 'acme', 'branchy', 'aws', '0.2.0')).toMatchObject({ status: 'ok' });
    expect((await t.api('GET', '/v1/modules/acme/branchy/aws/0.2.0')).json.root.inputs.map((i: any) => i.name)).toEqual(['third']);
  });

  it('refuses versions without a full commit SHA, existing versions, and versions of tag-based modules (422, nothing changes)', async () => {
    const p = `${modulePath('branchy', 'aws')}/versions`;
    const body = (attributes: Record<string, unknown>) => ({ body: { data: { type: 'registry-module-versions', attributes } } });
    const missing = await t.api('POST', p, body({ version: '0.3.0' }));
    expect(missing.status).toBe(422);
    expect(missing.json.errors[0]).toMatchObject({ detail: 'commit-sha is required for a branch-based module: the full SHA of the commit to publish', source: { pointer: '/data/attributes/commit-sha' } });
    const short = await t.api('POST', p, body({ version: '0.3.0', 'commit-sha': head.slice(0, 7) }));
    expect(short.status).toBe(422);
    expect(short.json.errors[0].detail).toContain('full 40-character commit SHA');
    const exists = await t.api('POST', p, body({ version: '0.1.0', 'commit-sha': head }));
    expect(exists.status).toBe(422);
    expect(exists.json.errors[0].detail).toContain('already exists');
    const unknown = await t.api('POST', p, body({ version: '0.4.0', 'commit-sha': 'e'.repeat(40) }));
    expect(unknown.status).toBe(201);
    const failed = await versionSettled(t, 'acme', 'branchy', 'aws', '0.4.0');
    expect(failed.status).toBe('clone_failed');
    expect(failed.error).toContain('is not in the repository');
    expect((await t.api('POST', p, { token: member, ...body({ version: '0.5.0', 'commit-sha': head }) })).status).toBe(404);
    // Tag-based: versions come from tags only (also on go-tfe's older path).
    const tagged = await t.api('POST', `${modulePath('down', 'aws')}/versions`, body({ version: '9.0.0', 'commit-sha': head }));
    expect(tagged.status).toBe(422);
    expect(tagged.json.errors[0].detail).toContain('push a tag instead');
    expect((await t.api('POST', '/api/v2/registry-modules/acme/down/aws/versions', body({ version: '9.0.0', 'commit-sha': head }))).status).toBe(422);
  });

  it('PATCH switches between branch and tag publishing as HCP does; a connection cannot be removed', async () => {
    const patch = (vcsRepo: unknown, token = t.adminToken) => t.api('PATCH', modulePath('branchy', 'aws'), { token, body: { data: { type: 'registry-modules', attributes: { 'vcs-repo': vcsRepo }, relationships: { 'tag-bindings': { data: [] } } } } });
    const toTags = await patch({ branch: '', tags: true });
    expect(toTags.status).toBe(200);
    expect(toTags.json.data.attributes['publishing-mechanism']).toBe('git_tag');
    expect(toTags.json.data.attributes['vcs-repo']).toMatchObject({ branch: '', tags: true });
    const toBranch = await patch({ branch: 'main' });
    expect(toBranch.status).toBe(200);
    expect(toBranch.json.data.attributes['publishing-mechanism']).toBe('branch');
    expect(toBranch.json.data.attributes['vcs-repo']).toMatchObject({ branch: 'main', tags: false });
    const withSlash = await t.api('PATCH', `${modulePath('branchy', 'aws')}/`, { body: { data: { type: 'registry-modules', attributes: { 'vcs-repo': { 'tag-prefix': 'v' } } } } });
    expect(withSlash.status).toBe(200);
    expect(withSlash.json.data.attributes['vcs-repo']['tag-prefix']).toBe('v');
    const before = await readModule(t, 'acme', 'branchy', 'aws');
    const removed = await patch(null);
    expect(removed.status).toBe(422);
    expect(removed.json.errors[0].detail).toContain('cannot be disconnected');
    const both = await patch({ branch: 'main', tags: true });
    expect(both.status).toBe(422);
    const badToken = await patch({ 'oauth-token-id': 'ot-nope0000000000000' });
    expect(badToken.status).toBe(422);
    expect((await patch({ branch: '' }, member)).status).toBe(404);
    expect(await readModule(t, 'acme', 'branchy', 'aws')).toEqual(before);
  });
});

describe('GitLab', () => {
  let url: string;
  let secret: string;
  it('registers a tag push hook on the project and publishes tags (Basic oauth2:<token> to git)', async () => {
    const { tokenId } = await createOAuthClient(t, 'acme', gitlab, GL_PAT, { attributes: { 'http-url': git.url } });
    const repo = git.repo('grp/terraform-google-net');
    repo.commit({ 'main.tf': 'variable "net" {}\n' });
    repo.tag('v1.0.0');
    repo.push();
    const d = await createVcsModule(t, 'acme', { identifier: 'grp/terraform-google-net', 'oauth-token-id': tokenId });
    expect(d.attributes['vcs-repo']['service-provider']).toBe('gitlab_hosted');
    expect(await versionSettled(t, 'acme', 'net', 'google', '1.0.0')).toMatchObject({ status: 'ok' });
    const hook = await eventually(async () => gitlab.hooks.find((h) => h.repo === 'grp/terraform-google-net'), 'the GitLab hook');
    ({ url, secret } = await webhookOf('net', 'google'));
    expect(hook.body).toEqual({ url, token: secret, tag_push_events: true, push_events: false, enable_ssl_verification: true });
    expect(git.requests.some((r) => r.authorization === `Basic ${Buffer.from(`oauth2:${GL_PAT}`).toString('base64')}`)).toBe(true);
  });

  it('takes a Tag Push Hook with X-Gitlab-Token; refuses a wrong token; ignores branches and deletions; dedupes on Idempotency-Key', async () => {
    const repo = git.repo('grp/terraform-google-net');
    const sha = repo.commit({ 'main.tf': 'variable "net" {}\nvariable "mtu" {}\n' });
    repo.tag('v1.1.0', { message: 'annotated' });
    repo.push();
    const payload = gitlabTagPush('grp/terraform-google-net', 'v1.1.0', { checkoutSha: sha, after: 'f'.repeat(40) });
    expect((await deliverGitLab(t, url, 'Tag Push Hook', payload, 'wrong-token')).status).toBe(401);
    const uuid = '4a2f3e1c-9b8d-4c7e-a6f5-3d2c1b0a9e8f';
    const r = await deliverGitLab(t, url, 'Tag Push Hook', payload, secret, { uuid });
    expect(r.status).toBe(202);
    expect(await versionSettled(t, 'acme', 'net', 'google', '1.1.0')).toMatchObject({ status: 'ok' });
    const replay = await deliverGitLab(t, url, 'Tag Push Hook', payload, secret, { uuid });
    expect(replay.status).toBe(200);
    expect(replay.json.status).toBe('duplicate');
    const branch = await deliverGitLab(t, url, 'Push Hook', { ...payload, object_kind: 'push', event_name: 'push', ref: 'refs/heads/main' }, secret);
    expect(branch.status).toBe(200);
    expect(branch.json.status).toBe('ignored');
    // The old "test" button: a push payload under the tag header; object_kind decides.
    const test = await deliverGitLab(t, url, 'Tag Push Hook', { ...payload, object_kind: 'push', ref: 'refs/heads/main' }, secret);
    expect(test.json.status).toBe('ignored');
    const deletion = await deliverGitLab(t, url, 'Tag Push Hook', gitlabTagPush('grp/terraform-google-net', 'v1.0.0', { checkoutSha: null, after: sha }), secret);
    expect(deletion.json.status).toBe('ignored');
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message === 'Rejected a webhook delivery for acme/net/google: X-Gitlab-Token is wrong');
    expect(ev?.level).toBe('error');
  });

  it('the periodic rescan finds a tag pushed without any webhook', async () => {
    const repo = git.repo('grp/terraform-google-net');
    repo.commit({ 'main.tf': 'variable "net" {}\nvariable "rescan" {}\n' });
    repo.tag('v1.2.0');
    repo.tag('v1.3.0');
    repo.tag('v1.4.0');
    repo.tag('v1.5.0');
    repo.push();
    for (const v of ['1.2.0', '1.3.0', '1.4.0', '1.5.0']) expect(await versionSettled(t, 'acme', 'net', 'google', v)).toMatchObject({ status: 'ok' });
    expect((await eventMessages(t, 'acme')).some((e) => e.message.startsWith('Loaded') && e.message.includes('(periodic)') && e.message.includes('grp/terraform-google-net'))).toBe(true);
  });
});
