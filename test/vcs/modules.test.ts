import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { startGitServer, type GitServer, type TestRepo } from '../helpers/git-server.js';
import { capturingLogger } from '../helpers/logs.js';
import { accept, createOrg, invite, RFC3339 } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { testStore } from '../helpers/store.js';
import { createOAuthClient } from '../helpers/vcs.js';
import {
  createVcsModule,
  deliverGitHub,
  eventMessages,
  eventually,
  githubBranchPush,
  githubTagPush,
  readModule,
  vcsModuleBody,
  versionSettled,
} from '../helpers/vcs-modules.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

const PAT = 'ghp_modulesPersonalAccessToken0001';
const OTHER_PAT = 'ghp_otherOrgPersonalAccessToken002';

let t: TestServer;
let git: GitServer;
let github: FakeVcsProvider;
let tokenId: string;
let otherTokenId: string;
let member: string;
let outsider: string;
let vpc: TestRepo;
let created: any;
const logs = capturingLogger('debug');

async function secretOf(org: string, name: string, provider: string): Promise<{ url: string; secret: string }> {
  const r = await t.api('GET', `/api/v2/organizations/${org}/registry-modules/private/${org}/${name}/${provider}/vcs-webhook`);
  expect(r.status).toBe(200);
  return r.json.data.attributes;
}

async function counts() {
  const db = t.running.deps.db;
  const n = async (table: 'registry_modules' | 'vcs_modules' | 'registry_module_versions' | 'jobs') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return { modules: await n('registry_modules'), vcs: await n('vcs_modules'), versions: await n('registry_module_versions') };
}

beforeAll(async () => {
  git = await startGitServer({ tokens: [PAT, OTHER_PAT] });
  github = await new FakeVcsProvider('github').addToken(PAT, 'octocat').addToken(OTHER_PAT, 'hubot').start();
  for (const r of ['acme/terraform-aws-vpc', 'acme/infra', 'acme/terraform-aws-evil', 'acme/terraform-aws-gone', 'other/terraform-aws-x']) github.addRepository(r);
  // System time: ingestion and its follow-up jobs run as they would in production.
  t = await startTestServer({ TERRACE_VCS_REQUEST_TIMEOUT_MS: '2000', TERRACE_GIT_TIMEOUT_MS: '20000' }, { clock: systemClock, logger: logs.logger });
  await createOrg(t, 'acme');
  await createOrg(t, 'other');
  tokenId = (await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } })).tokenId;
  otherTokenId = (await createOAuthClient(t, 'other', github, OTHER_PAT, { attributes: { 'http-url': git.url } })).tokenId;
  const m = await createUserWithToken(t, 'member');
  await accept(t, m.token, await invite(t, t.adminToken, 'acme', 'member'));
  member = m.token;
  outsider = (await createUserWithToken(t, 'outsider')).token;

  vpc = git.repo('acme/terraform-aws-vpc');
  vpc.commit({ 'main.tf': 'variable "cidr" {\n  type = string\n}\n', 'README.md': '# VPC\n' });
  vpc.tag('v1.0.0');
  vpc.commit({ 'main.tf': 'variable "cidr" {\n  type = string\n}\noutput "id" {\n  value = "x"\n}\n', 'README.md': '# VPC\n' });
  vpc.tag('1.1.0', { message: 'annotated release' });
  vpc.tag('not-a-version');
  vpc.push();
});

afterAll(async () => {
  await t?.close();
  await github?.close();
  await git?.close();
});

describe('a tag-based module from a GitHub repository', () => {
  it('answers 201 in HCP shape, readable at once, with name and provider inferred from terraform-<provider>-<name>', async () => {
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules/vcs', {
      body: vcsModuleBody({ identifier: 'acme/terraform-aws-vpc', 'oauth-token-id': tokenId, 'display-identifier': 'acme/terraform-aws-vpc', branch: '', tags: true, 'github-app-installation-id': '', 'tag-prefix': '', 'source-directory': '' }),
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('content-type')).toContain('application/vnd.api+json');
    created = r.json.data;
    expect(created.id).toMatch(/^mod-[A-Za-z0-9]{16}$/);
    expect(created.type).toBe('registry-modules');
    const a = created.attributes;
    expect(a).toMatchObject({ name: 'vpc', provider: 'aws', namespace: 'acme', 'registry-name': 'private', 'publishing-mechanism': 'git_tag' });
    expect(['pending', 'setup_complete']).toContain(a.status);
    expect(a['created-at']).toMatch(RFC3339);
    expect(a.permissions).toEqual({ 'can-delete': true, 'can-resync': true, 'can-retry': true });
    expect(a['vcs-repo']).toEqual({
      identifier: 'acme/terraform-aws-vpc',
      'display-identifier': 'acme/terraform-aws-vpc',
      'oauth-token-id': tokenId,
      'github-app-installation-id': null,
      branch: '',
      tags: true,
      'tags-regex': null,
      'tag-prefix': null,
      'source-directory': null,
      'ingress-submodules': true,
      'repository-http-url': `${git.url}/acme/terraform-aws-vpc`,
      'service-provider': 'github',
      'webhook-url': expect.stringMatching(new RegExp(`^${t.url}/webhooks/vcs/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)),
    });
    expect(created.relationships.organization.data).toEqual({ type: 'organizations', id: 'acme' });
    expect(created.links.self).toBe('/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws');
    // Readable at once, by id and by coordinates.
    expect((await t.api('GET', `/api/v2/registry-modules/${created.id}`)).status).toBe(200);
    expect((await readModule(t, 'acme', 'vpc', 'aws')).id).toBe(created.id);
  });

  it('publishes every semver tag (lightweight and annotated), skips the rest, and serves them to Terraform', async () => {
    expect(await versionSettled(t, 'acme', 'vpc', 'aws', '1.0.0')).toEqual({ version: '1.0.0', status: 'ok', error: '' });
    expect(await versionSettled(t, 'acme', 'vpc', 'aws', '1.1.0')).toEqual({ version: '1.1.0', status: 'ok', error: '' });
    const m = await readModule(t, 'acme', 'vpc', 'aws');
    expect(m.attributes.status).toBe('setup_complete');
    expect(m.attributes['version-statuses'].map((v: any) => v.version).sort()).toEqual(['1.0.0', '1.1.0']);
    const v = await t.api('GET', '/v1/modules/acme/vpc/aws/versions');
    expect(v.status).toBe(200);
    expect(v.json.modules[0].versions.map((x: any) => x.version).sort()).toEqual(['1.0.0', '1.1.0']);
    // The annotated tag's tree (the commit it points at, not the tag object) was published.
    const detail = await t.api('GET', '/v1/modules/acme/vpc/aws/1.1.0');
    expect(detail.json.root.outputs.map((o: any) => o.name)).toEqual(['id']);
    const dl = await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download');
    expect(dl.status).toBe(204);
    expect(dl.headers.get('x-terraform-get')).toBeTruthy();
  });

  it('registered the repository webhook with its own URL and secret, which managers can read', async () => {
    const hook = await eventually(async () => github.hooks.find((h) => h.repo === 'acme/terraform-aws-vpc'), 'the webhook');
    const w = await secretOf('acme', 'vpc', 'aws');
    expect(hook.url).toBe(created.attributes['vcs-repo']['webhook-url']);
    expect(w.url).toBe(hook.url);
    expect(hook.secret).toBe(w.secret);
    expect(w.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(hook.body).toEqual({ name: 'web', active: true, events: ['push', 'create'], config: { url: hook.url, content_type: 'json', secret: w.secret, insecure_ssl: '0' } });
    const details = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/vcs-webhook');
    expect(details.json.data.attributes).toMatchObject({ registered: true, 'hook-id': String(hook.id), error: null, 'content-type': 'json' });
    // A member who may not manage modules, and everyone outside, see nothing.
    expect((await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/vcs-webhook', { token: member })).status).toBe(404);
    expect((await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/vcs-webhook', { token: outsider })).status).toBe(404);
    // The secret is not in the module's rendering.
    expect(JSON.stringify(await readModule(t, 'acme', 'vpc', 'aws'))).not.toContain(w.secret);
  });

  it('logs every step in the VCS event log', async () => {
    const events = await eventually(async () => {
      const e = await eventMessages(t, 'acme');
      return e.some((x) => x.message === 'Published acme/vpc/aws 1.1.0' || x.message.startsWith('Published acme/vpc/aws 1.1.0 ')) ? e : undefined;
    }, 'the publish events');
    const msgs = events.map((e) => e.message);
    expect(msgs).toContain('Connected acme/vpc/aws to acme/terraform-aws-vpc (tag-based publishing)');
    expect(msgs).toContain('Created the webhook of acme/vpc/aws on acme/terraform-aws-vpc');
    expect(msgs.find((m) => m.startsWith('Loaded 3 tag(s) of acme/terraform-aws-vpc for acme/vpc/aws (setup): queued 2 new version(s)'))).toBeTruthy();
    expect(msgs).toContain('Skipped 1 tag(s) of acme/terraform-aws-vpc for acme/vpc/aws: not-a-version (not semver)');
    expect(msgs.filter((m) => /^Published acme\/vpc\/aws 1\.[01]\.0 \(commit [0-9a-f]{12}\)$/.test(m))).toHaveLength(2);
    expect(events.every((e) => e.level === 'info')).toBe(true);
  });

  it('never puts the token in a URL git was asked for, a log line or an event', async () => {
    expect(git.requests.length).toBeGreaterThan(0);
    for (const r of git.requests) {
      expect(r.url).not.toContain(PAT);
      expect(r.authorization).toBe(`Basic ${Buffer.from(`x-access-token:${PAT}`).toString('base64')}`);
    }
    expect(JSON.stringify(logs.lines)).not.toContain(PAT);
    expect(JSON.stringify(await eventMessages(t, 'acme'))).not.toContain(PAT);
    const rows = await t.running.deps.db.selectFrom('vcs_modules').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(PAT);
  });
});

describe('webhook deliveries (GitHub)', () => {
  let url: string;
  let secret: string;
  beforeAll(async () => {
    ({ url, secret } = await secretOf('acme', 'vpc', 'aws'));
  });

  it('publishes a pushed tag from a signed push delivery; a replay and a re-pushed tag publish nothing twice', async () => {
    const sha = vpc.commit({ 'main.tf': 'variable "cidr" {}\nvariable "az" {}\n' });
    const tagged = vpc.tag('v1.2.0', { message: 'annotated' });
    expect(tagged).toBe(sha);
    vpc.push();
    const delivery = '72d3162e-cc78-11e3-81ab-4c9367dc0958';
    // Annotated: "after" is the tag object; head_commit.id the commit.
    const payload = githubTagPush('acme/terraform-aws-vpc', 'v1.2.0', { after: 'a'.repeat(40), commit: sha });
    const r = await deliverGitHub(t, url, 'push', payload, secret, { delivery });
    expect(r.status).toBe(202);
    expect(r.json).toEqual({ status: 'queued', detail: 'version 1.2.0 is being published', version: '1.2.0' });
    expect(await versionSettled(t, 'acme', 'vpc', 'aws', '1.2.0')).toEqual({ version: '1.2.0', status: 'ok', error: '' });
    const v = await t.api('GET', '/v1/modules/acme/vpc/aws/versions');
    expect(v.json.modules[0].versions.map((x: any) => x.version)).toContain('1.2.0');
    const before = await counts();
    const replay = await deliverGitHub(t, url, 'push', payload, secret, { delivery });
    expect(replay.status).toBe(200);
    expect(replay.json.status).toBe('duplicate');
    const again = await deliverGitHub(t, url, 'push', payload, secret);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ status: 'exists', version: '1.2.0' });
    expect(await counts()).toEqual(before);
    const msgs = (await eventMessages(t, 'acme')).map((e) => e.message);
    expect(msgs).toContain('Received push for acme/terraform-aws-vpc (ref refs/tags/v1.2.0): publishing acme/vpc/aws 1.2.0');
    expect(msgs.find((m) => m.startsWith(`Processing skipped for duplicate delivery ${delivery}`))).toBeTruthy();
  });

  it('accepts form-encoded deliveries (the REST API default content type)', async () => {
    const sha = vpc.commit({ 'main.tf': 'variable "cidr" {}\nvariable "zones" {}\n' });
    vpc.tag('v1.3.0');
    vpc.push();
    const r = await deliverGitHub(t, url, 'push', githubTagPush('acme/terraform-aws-vpc', 'v1.3.0', { after: sha }), secret, { form: true });
    expect(r.status).toBe(202);
    expect(await versionSettled(t, 'acme', 'vpc', 'aws', '1.3.0')).toMatchObject({ status: 'ok' });
  });

  it('refuses a mis-signed delivery with 401 and logs it; changes nothing', async () => {
    const before = await counts();
    const payload = githubTagPush('acme/terraform-aws-vpc', 'v9.0.0', { after: 'b'.repeat(40) });
    const wrong = await deliverGitHub(t, url, 'push', payload, 'not-the-secret');
    expect(wrong.status).toBe(401);
    expect(wrong.json.errors[0].detail).toBe('the X-Hub-Signature-256 signature does not match the body and the webhook secret');
    const missing = await deliverGitHub(t, url, 'push', payload, secret, { signature: '' });
    expect(missing.status).toBe(401);
    const sha1 = await deliverGitHub(t, url, 'push', payload, secret, { signature: 'sha1=' + 'c'.repeat(40) });
    expect(sha1.status).toBe(401);
    expect(await counts()).toEqual(before);
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message === 'Rejected a webhook delivery for acme/vpc/aws: X-Hub-Signature-256 does not match the body');
    expect(ev).toMatchObject({ level: 'error', 'suggested-action': 'check the webhook secret (GET .../vcs-webhook shows it to module managers)' });
  });

  it('acknowledges (2xx) what publishes nothing: ping, branch pushes, tag deletions, non-semver tags, other events', async () => {
    const before = await counts();
    const head = vpc.head();
    const cases: [string, unknown, string][] = [
      ['ping', { zen: 'Keep it logically awesome.', hook_id: 1000, hook: { type: 'Repository', id: 1000 } }, 'ok'],
      ['push', githubBranchPush('acme/terraform-aws-vpc', head), 'ignored'],
      ['push', githubTagPush('acme/terraform-aws-vpc', 'v1.0.0', { after: head, deleted: true }), 'ignored'],
      ['push', githubTagPush('acme/terraform-aws-vpc', 'nightly', { after: head }), 'ignored'],
      ['create', { ref: 'main', ref_type: 'branch', master_branch: 'main', pusher_type: 'user', repository: { full_name: 'acme/terraform-aws-vpc' } }, 'ignored'],
      ['issues', { action: 'opened' }, 'ignored'],
    ];
    for (const [event, payload, status] of cases) {
      const r = await deliverGitHub(t, url, event, payload, secret);
      expect(r.status, event).toBe(200);
      expect(r.json.status, event).toBe(status);
    }
    expect(await counts()).toEqual(before);
    // A deleted tag leaves its version.
    expect((await readModule(t, 'acme', 'vpc', 'aws')).attributes['version-statuses'].map((v: any) => v.version)).toContain('1.0.0');
    const msgs = (await eventMessages(t, 'acme')).map((e) => e.message);
    expect(msgs).toContain('Ignored push for acme/terraform-aws-vpc (acme/vpc/aws): refs/heads/main is not a tag');
    expect(msgs).toContain('Ignored push for acme/terraform-aws-vpc (ref refs/tags/nightly): the tag is not a semantic version');
  });

  it('answers 404 for an unknown webhook URL, 400 for a signed body that is not a payload, 413 for a huge one', async () => {
    const unknown = await deliverGitHub(t, `${t.url}/webhooks/vcs/8b1f9a4e-5c3d-4e2f-9a1b-0c7d6e5f4a3b`, 'push', {}, secret);
    expect(unknown.status).toBe(404);
    expect((await deliverGitHub(t, `${t.url}/webhooks/vcs/not-a-uuid`, 'push', {}, secret)).status).toBe(404);
    const raw = 'not json';
    const { createHmac } = await import('node:crypto');
    const res = await fetch(t.url + new URL(url).pathname, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}` },
      body: raw,
    });
    expect(res.status).toBe(400);
    const huge = await fetch(t.url + new URL(url).pathname, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-GitHub-Event': 'push' }, body: 'x'.repeat(1024 * 1024 + 1) });
    expect(huge.status).toBe(413);
  });

  it('a "create" event for a tag (no SHA in it) queues a scan', async () => {
    vpc.commit({ 'main.tf': 'variable "cidr" {}\nvariable "v14" {}\n' });
    vpc.tag('v1.4.0');
    vpc.push();
    const r = await deliverGitHub(t, url, 'create', { ref: 'v1.4.0', ref_type: 'tag', master_branch: 'main', pusher_type: 'user', repository: { full_name: 'acme/terraform-aws-vpc' } }, secret);
    expect(r.status).toBe(202);
    expect(r.json.detail).toBe('the repository is being scanned');
    expect(await versionSettled(t, 'acme', 'vpc', 'aws', '1.4.0')).toMatchObject({ status: 'ok' });
  });
});

describe('resync', () => {
  it('finds a tag pushed without a webhook (more than three tags at once send none)', async () => {
    vpc.commit({ 'main.tf': 'variable "cidr" {}\nvariable "v2" {}\n' });
    vpc.tag('v2.0.0');
    vpc.push();
    const r = await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/actions/resync');
    expect(r.status).toBe(200);
    expect(r.json.data.id).toBe(created.id);
    expect(await versionSettled(t, 'acme', 'vpc', 'aws', '2.0.0')).toMatchObject({ status: 'ok' });
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/versions')).json.modules[0].versions.map((x: any) => x.version)).toContain('2.0.0');
  });

  it('is 404 to who may not manage modules, 401 without a token, 422 for modules published through the API', async () => {
    const p = '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/actions/resync';
    expect((await t.api('POST', p, { token: member })).status).toBe(404);
    expect((await t.api('POST', p, { token: outsider })).status).toBe(404);
    expect((await t.api('POST', p, { token: null })).status).toBe(401);
    await t.api('POST', '/api/v2/organizations/acme/registry-modules', { body: { data: { type: 'registry-modules', attributes: { name: 'plain', provider: 'aws' } } } });
    const plain = await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/plain/aws/actions/resync');
    expect(plain.status).toBe(422);
    expect(plain.json.errors[0].detail).toBe('acme/plain/aws is published through the API, not from a VCS repository: there is nothing to resync');
    expect((await readModule(t, 'acme', 'plain', 'aws')).attributes['publishing-mechanism']).toBe('non_vcs');
  });
});

describe('a monorepo: tag prefixes and source directories', () => {
  it('publishes each module only from its own tags and directory', async () => {
    const infra = git.repo('acme/infra');
    infra.commit({
      'modules/network/main.tf': 'variable "network_cidr" {}\n',
      'modules/dns/main.tf': 'variable "zone" {}\n',
      'README.md': '# infra\n',
    });
    infra.tag('network-v1.0.0');
    infra.tag('dns-v0.1.0');
    infra.tag('v3.0.0');
    infra.push();
    const net = await createVcsModule(t, 'acme', { identifier: 'acme/infra', 'oauth-token-id': tokenId, 'tag-prefix': 'network-', 'source-directory': 'modules/network' }, { name: 'network', provider: 'aws' });
    const dns = await createVcsModule(t, 'acme', { identifier: 'acme/infra', 'oauth-token-id': tokenId, 'tag-prefix': 'dns-', 'source-directory': 'modules/dns/' }, { name: 'dns', provider: 'aws' });
    expect(net.attributes['vcs-repo']).toMatchObject({ 'tag-prefix': 'network-', 'source-directory': 'modules/network' });
    expect(dns.attributes['vcs-repo']['source-directory']).toBe('modules/dns');
    // Two modules of one repository, each with its own webhook.
    expect(net.attributes['vcs-repo']['webhook-url']).not.toBe(dns.attributes['vcs-repo']['webhook-url']);
    expect(await versionSettled(t, 'acme', 'network', 'aws', '1.0.0')).toMatchObject({ status: 'ok' });
    expect(await versionSettled(t, 'acme', 'dns', 'aws', '0.1.0')).toMatchObject({ status: 'ok' });
    expect((await readModule(t, 'acme', 'network', 'aws')).attributes['version-statuses']).toHaveLength(1);
    const netDetail = await t.api('GET', '/v1/modules/acme/network/aws/1.0.0');
    expect(netDetail.json.root.inputs.map((i: any) => i.name)).toEqual(['network_cidr']);
    const dnsDetail = await t.api('GET', '/v1/modules/acme/dns/aws/0.1.0');
    expect(dnsDetail.json.root.inputs.map((i: any) => i.name)).toEqual(['zone']);
    const msgs = (await eventMessages(t, 'acme')).map((e) => e.message);
    expect(msgs).toContain('Skipped 2 tag(s) of acme/infra for acme/network/aws: dns-v0.1.0 (outside prefix network-), v3.0.0 (outside prefix network-)');
  });

  it('a prefix that matches no tag leaves the module no_version_tags, with an error event saying what to push', async () => {
    await createVcsModule(t, 'acme', { identifier: 'acme/infra', 'oauth-token-id': tokenId, 'tag-prefix': 'storage-', 'source-directory': 'modules/storage' }, { name: 'storage', provider: 'aws' });
    const m = await eventually(async () => {
      const x = await readModule(t, 'acme', 'storage', 'aws');
      return x.attributes.status === 'pending' ? undefined : x;
    }, 'the first scan');
    expect(m.attributes.status).toBe('no_version_tags');
    expect(m.attributes['version-statuses']).toEqual([]);
    const ev = (await eventMessages(t, 'acme')).find((e) => e.message === 'acme/infra has no tag that publishes acme/storage/aws');
    expect(ev).toMatchObject({ level: 'error', 'suggested-action': 'push a semver tag (for example storage-v1.0.0), then resync' });
  });

  it('a scan whose event cannot be written leaves no trace: no status, no event, and the retry writes both once', async () => {
    const db = t.running.deps.db;
    const refusal = 'the test refuses this event';
    if (testStore === 'postgres') {
      await sql.raw(`CREATE FUNCTION refuse_no_tag_event() RETURNS trigger AS $$ BEGIN IF NEW.message LIKE '%no tag that publishes acme/queue/aws' THEN RAISE EXCEPTION '${refusal}'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`).execute(db);
      await sql.raw('CREATE TRIGGER refuse_no_tag_event BEFORE INSERT ON vcs_events FOR EACH ROW EXECUTE FUNCTION refuse_no_tag_event()').execute(db);
    } else {
      await sql.raw(`CREATE TRIGGER refuse_no_tag_event BEFORE INSERT ON vcs_events WHEN NEW.message LIKE '%no tag that publishes acme/queue/aws' BEGIN SELECT RAISE(ABORT, '${refusal}'); END`).execute(db);
    }
    const ofQueue = async () => (await eventMessages(t, 'acme')).filter((e) => /^(Loaded|Skipped) .* for acme\/queue\/aws|no tag that publishes acme\/queue\/aws$/.test(e.message));
    try {
      await createVcsModule(t, 'acme', { identifier: 'acme/infra', 'oauth-token-id': tokenId, 'tag-prefix': 'queue-', 'source-directory': 'modules/queue' }, { name: 'queue', provider: 'aws' });
      await eventually(
        async () => (await db.selectFrom('jobs').select('id').where('last_error', 'like', `%${refusal}%`).executeTakeFirst()) ?? undefined,
        'a setup attempt refused by the trigger',
      );
      // The status changed in the same transaction as the refused event, so it did not change;
      // nor is the scan's first event (written before the refused one) there.
      expect((await readModule(t, 'acme', 'queue', 'aws')).attributes.status).toBe('pending');
      expect(await ofQueue()).toEqual([]);
    } finally {
      await sql.raw('DROP TRIGGER refuse_no_tag_event' + (testStore === 'postgres' ? ' ON vcs_events' : '')).execute(db);
    }
    const m = await eventually(async () => {
      const x = await readModule(t, 'acme', 'queue', 'aws');
      return x.attributes.status === 'pending' ? undefined : x;
    }, 'the retried scan');
    expect(m.attributes.status).toBe('no_version_tags');
    expect((await ofQueue()).map((e) => e.message).sort()).toEqual([
      'Loaded 3 tag(s) of acme/infra for acme/queue/aws (setup): no new versions',
      'Skipped 3 tag(s) of acme/infra for acme/queue/aws: dns-v0.1.0 (outside prefix queue-), network-v1.0.0 (outside prefix queue-), v3.0.0 (outside prefix queue-)',
      'acme/infra has no tag that publishes acme/queue/aws',
    ]);
  });
});

describe('a hostile tag', () => {
  it('goes through the same checks as an uploaded archive: a link out of the module is refused', async () => {
    const evil = git.repo('acme/terraform-aws-evil');
    evil.commit({ 'main.tf': 'variable "x" {}\n', 'passwd': { symlink: '../../../../etc/passwd' } });
    evil.tag('v1.0.0');
    evil.push();
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-evil', 'oauth-token-id': tokenId });
    const v = await versionSettled(t, 'acme', 'evil', 'aws', '1.0.0');
    expect(v.status).toBe('reg_ingress_failed');
    expect(v.error).toMatch(/passwd/);
    expect(v.error).toMatch(/outside|escapes|link/);
    expect((await t.api('GET', '/v1/modules/acme/evil/aws/versions')).json.modules[0].versions).toEqual([]);
    const ev = await eventually(async () => (await eventMessages(t, 'acme')).find((e) => e.message.startsWith('Version ingest failed: acme/evil/aws 1.0.0')), 'the ingest failure event');
    expect(ev.level).toBe('error');
    expect(ev.message).toContain('reg_ingress_failed: ');
    // No blob of the refused version is left.
    const row = await t.running.deps.db.selectFrom('registry_module_versions').select(['blob_key', 'status']).where('version', '=', '1.0.0').where('module_id', '=', (await readModule(t, 'acme', 'evil', 'aws')).id).executeTakeFirstOrThrow();
    expect(row).toEqual({ blob_key: null, status: 'errored' });
  });
});

describe('creating: bad input changes nothing', () => {
  const post = (body: unknown, token: string | null = t.adminToken, path = '/api/v2/organizations/acme/registry-modules/vcs') => t.api('POST', path, { token, body });
  const repo = (extra: Record<string, unknown> = {}) => ({ identifier: 'acme/terraform-aws-vpc2', 'oauth-token-id': tokenId, ...extra });

  it.each([
    ['no identifier', vcsModuleBody({ 'oauth-token-id': 'x' }), /vcs-repo.identifier is required/, '/data/attributes/vcs-repo/identifier'],
    ['tags with a branch', vcsModuleBody({ identifier: 'acme/terraform-aws-vpc2', 'oauth-token-id': 'x', tags: true, branch: 'main' }), /exclude each other/, '/data/attributes/vcs-repo/tags'],
    ['no token', vcsModuleBody({ identifier: 'acme/terraform-aws-vpc2', 'oauth-token-id': '' }), /oauth-token-id is required/, '/data/attributes/vcs-repo/oauth-token-id'],
    ['unknown token', vcsModuleBody({ identifier: 'acme/terraform-aws-vpc2', 'oauth-token-id': 'ot-doesnotexist0000' }), /is not an OAuth token of this organization/, '/data/attributes/vcs-repo/oauth-token-id'],
    ['a GitHub App installation', vcsModuleBody({ identifier: 'acme/terraform-aws-vpc2', 'oauth-token-id': 'x', 'github-app-installation-id': 'ghain-abc' }), /GitHub App installations are not supported/, '/data/attributes/vcs-repo/github-app-installation-id'],
    ['source directory without name and provider', vcsModuleBody({ identifier: 'acme/infra', 'oauth-token-id': 'x', 'source-directory': 'modules/x' }), /needs an explicit name and provider/, '/data/attributes/name'],
    ['a source directory escaping the repository', vcsModuleBody({ identifier: 'acme/infra', 'oauth-token-id': 'x', 'source-directory': '../etc' }, { name: 'x', provider: 'aws' }), /relative path inside the repository/, '/data/attributes/vcs-repo/source-directory'],
    ['a tag prefix with spaces', vcsModuleBody({ identifier: 'acme/infra', 'oauth-token-id': 'x', 'tag-prefix': 'a b' }, { name: 'x', provider: 'aws' }), /printable characters without spaces/, '/data/attributes/vcs-repo/tag-prefix'],
    ['tests enabled', vcsModuleBody({ identifier: 'acme/infra', 'oauth-token-id': 'x' }, { 'test-config': { 'tests-enabled': true } }), /does not run module tests/, '/data/attributes/test-config/tests-enabled'],
    ['a bad initial version', vcsModuleBody({ identifier: 'acme/infra', 'oauth-token-id': 'x', branch: 'main' }, { name: 'x', provider: 'aws', 'initial-version': 'one' }), /not valid semantic versioning/, '/data/attributes/initial-version'],
    ['tags not a boolean', vcsModuleBody({ identifier: 'acme/infra', 'oauth-token-id': 'x', tags: 'yes' }), /./, '/data/attributes/vcs-repo/tags'],
  ])('%s → 422', async (_what, body, detail, pointer) => {
    const before = await counts();
    const r = await post(body);
    expect(r.status).toBe(422);
    expect(r.json.errors[0].detail).toMatch(detail);
    expect(r.json.errors[0].source.pointer).toBe(pointer);
    expect(await counts()).toEqual(before);
  });

  it('names that cannot be inferred, repositories that are not owner/name, and taken names → 422', async () => {
    const before = await counts();
    const bad = await post(vcsModuleBody(repo({ identifier: 'acme/my-module' })));
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0].detail).toBe('the name and provider cannot be inferred from "acme/my-module": name the repository terraform-<provider>-<name> or send "name" and "provider"');
    const shape = await post(vcsModuleBody(repo({ identifier: 'acme/x/y' })));
    expect(shape.status).toBe(422);
    expect(shape.json.errors[0].detail).toContain('owner/repository');
    const taken = await post(vcsModuleBody(repo({ identifier: 'acme/terraform-aws-vpc' })));
    expect(taken.status).toBe(422);
    expect(taken.json.errors[0].detail).toBe('module acme/vpc/aws already exists');
    // The other organization's token is not usable here.
    const foreign = await post(vcsModuleBody(repo({ 'oauth-token-id': otherTokenId })));
    expect(foreign.status).toBe(422);
    expect(await counts()).toEqual(before);
  });

  it('is 404 to who may not manage the organization\'s modules (before reading the body), 401 without a token', async () => {
    const before = await counts();
    expect((await post(vcsModuleBody(repo()), member)).status).toBe(404);
    expect((await post('garbage', outsider)).status).toBe(404);
    expect((await post(vcsModuleBody(repo()), null)).status).toBe(401);
    expect((await post(vcsModuleBody(repo()), t.adminToken, '/api/v2/organizations/nope/registry-modules/vcs')).status).toBe(404);
    expect(await counts()).toEqual(before);
  });
});

describe('the deprecated POST /registry-modules (go-tfe\'s path for OAuth tag modules)', () => {
  it('takes the organization from the OAuth token', async () => {
    git.repo('other/terraform-aws-x').commit({ 'main.tf': 'variable "x" {}\n' });
    const r = await t.api('POST', '/api/v2/registry-modules', { body: vcsModuleBody({ identifier: 'other/terraform-aws-x', 'oauth-token-id': otherTokenId, display_identifier: 'other/terraform-aws-x' }) });
    expect(r.status).toBe(201);
    expect(r.json.data.attributes).toMatchObject({ name: 'x', provider: 'aws', namespace: 'other' });
    expect(r.json.data.relationships.organization.data).toEqual({ type: 'organizations', id: 'other' });
  });

  it('answers an unknown token and a token of an organization the caller may not manage alike (422), and 401 without a token', async () => {
    const before = await counts();
    const unknown = await t.api('POST', '/api/v2/registry-modules', { body: vcsModuleBody({ identifier: 'acme/terraform-aws-q', 'oauth-token-id': 'ot-unknown000000000' }) });
    const foreign = await t.api('POST', '/api/v2/registry-modules', { token: member, body: vcsModuleBody({ identifier: 'acme/terraform-aws-q', 'oauth-token-id': tokenId }) });
    expect(unknown.status).toBe(422);
    expect(foreign.status).toBe(422);
    expect(foreign.json.errors[0].detail).toBe(unknown.json.errors[0].detail.replace('ot-unknown000000000', tokenId));
    expect((await t.api('POST', '/api/v2/registry-modules', { token: null, body: vcsModuleBody({ identifier: 'a/b', 'oauth-token-id': tokenId }) })).status).toBe(401);
    expect(await counts()).toEqual(before);
  });
});

describe('deleting a VCS-backed module', () => {
  it('removes its webhook at the provider', async () => {
    git.repo('acme/terraform-aws-gone').commit({ 'main.tf': 'variable "x" {}\n' });
    await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-gone', 'oauth-token-id': tokenId });
    await eventually(async () => github.hooks.find((h) => h.repo === 'acme/terraform-aws-gone'), 'the webhook');
    const { url, secret } = await secretOf('acme', 'gone', 'aws');
    expect((await t.api('DELETE', '/api/v2/organizations/acme/registry-modules/private/acme/gone/aws')).status).toBe(204);
    await eventually(async () => (github.hooks.some((h) => h.repo === 'acme/terraform-aws-gone') ? undefined : true), 'the webhook removal');
    expect(github.calls.some((c) => c.method === 'DELETE' && c.path.startsWith('/repos/acme/terraform-aws-gone/hooks/'))).toBe(true);
    expect(await t.running.deps.db.selectFrom('vcs_modules').selectAll().where('identifier', '=', 'acme/terraform-aws-gone').execute()).toEqual([]);
    // Its webhook URL is gone too.
    expect((await deliverGitHub(t, url, 'ping', { zen: 'x' }, secret)).status).toBe(404);
    await eventually(async () => (await eventMessages(t, 'acme')).find((e) => /^Removed webhook \d+ from acme\/terraform-aws-gone$/.test(e.message)), 'the removal event');
  });
});
