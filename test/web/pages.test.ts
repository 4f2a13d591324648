import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE_README, VPC_MODULE } from '../fixtures/modules.js';
import { addMember, createModule, createOrganization, createVersion, publish, upload } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, pushState, stateFixture } from '../helpers/state.js';
import { textOf, WebClient } from '../helpers/web.js';


let t: TestServer;
let alice: { id: string; username: string; token: string };
let reader: { id: string; username: string; token: string };
let outsider: { id: string; username: string; token: string };
let wsId: string;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'true' });
  alice = await createUserWithToken(t, 'alice');
  reader = await createUserWithToken(t, 'reader');
  outsider = await createUserWithToken(t, 'outsider');
  await createOrganization(t, 'acme', alice.token);
  await createOrganization(t, 'other', outsider.token);
  await addMember(t, 'acme', reader);
  await publish(t, 'acme', 'vpc', 'aws', '1.0.0', { ...VPC_MODULE, 'variables.tf': 'variable "old_only" {\n  type = string\n}\n' });
  await publish(t, 'acme', 'vpc', 'aws', '1.2.0', { ...VPC_MODULE, 'README.md': HOSTILE_README });
  await publish(t, 'acme', 'dns', 'aws', '0.1.0', { 'main.tf': 'variable "zone" {}\n', 'README.md': '# DNS zones\n\nRoute53 zones.\n' });
  await publish(t, 'other', 'secret-net', 'aws', '1.0.0');
  // A version that failed to publish: its error is for publishers only.
  const bad = await createVersion(t, 'acme', 'vpc', 'aws', '2.0.0-rc.1');
  expect((await upload(bad.links.upload, 'not a tarball')).status).toBe(422);
  for (let i = 0; i < 3; i++) expect((await t.api('GET', '/v1/modules/acme/vpc/aws/1.2.0/download')).status).toBe(204);
  wsId = (await createWorkspace(t, 'acme', 'prod', alice.token)).id;
  await lock(t, wsId, alice.token);
  expect((await pushState(t, wsId, stateFixture('outputs-serial1.json'), {}, alice.token)).status).toBe(201);
}, 60_000);
afterAll(() => t.close());

async function as(user: { token: string }): Promise<WebClient> {
  const w = new WebClient(t);
  await w.signIn(user.token);
  return w;
}

describe('module pages', () => {
  it('show the latest version: description, inputs with type/default/required/sensitive, outputs, resources, providers, submodules, examples', async () => {
    const res = await (await as(reader)).get('/app/modules/acme/vpc/aws');
    expect(res.status).toBe(200);
    const text = textOf(res.text);
    expect(text).toContain('acme/vpc/aws');
    expect(text).toContain('Version 1.2.0, published');
    expect(res.text).toMatch(/<td><code>cidr<\/code><\/td><td><code>string<\/code><\/td><td><code>&quot;10.0.0.0\/16&quot;<\/code><\/td><td>no<\/td><td>no<\/td><td>The VPC CIDR block.<\/td>/);
    expect(res.text).toMatch(/<td><code>db_password<\/code><\/td><td><code>string<\/code><\/td><td><span class="muted">none<\/span><\/td><td>yes<\/td><td>yes<\/td>/);
    expect(text).toContain('vpc_id no The VPC id.');
    expect(text).toContain('aws_vpc.this');
    expect(text).toContain('hashicorp/aws >= 5.0, < 6.0');
    expect(text).toContain('modules/subnets');
    expect(text).toContain('modules/flow-logs');
    expect(text).toContain('examples/complete');
    expect(text).not.toContain('old_only');
  });

  it('switch versions with ?version= and list every published version with its date', async () => {
    const w = await as(reader);
    const res = await w.get('/app/modules/acme/vpc/aws?version=1.0.0');
    expect(res.status).toBe(200);
    expect(textOf(res.text)).toContain('old_only');
    expect(res.text).toContain('<option value="1.2.0">1.2.0 (latest)</option><option value="1.0.0" selected="">1.0.0</option>');
    expect(res.text).toMatch(/<a href="\/app\/modules\/acme\/vpc\/aws\?version=1.2.0">1.2.0<\/a><\/td><td><time datetime="\d{4}-\d\d-\d\dT[^"]+Z">\d{4}-\d\d-\d\d<\/time>/);
    const missing = await w.get('/app/modules/acme/vpc/aws?version=9.9.9');
    expect(missing.status).toBe(404);
    expect(textOf(missing.text)).toContain('version 9.9.9 of acme/vpc/aws not found');
    // The failed release candidate is no published version.
    expect((await w.get('/app/modules/acme/vpc/aws?version=2.0.0-rc.1')).status).toBe(404);
  });

  it('give a usage snippet with this host and a version constraint, and required inputs', async () => {
    const res = await (await as(reader)).get('/app/modules/acme/vpc/aws');
    const host = new URL(t.url).host;
    expect(textOf(res.text)).toContain(`module "vpc" { source = "${host}/acme/vpc/aws" version = "~> 1.2.0" db_password = null # required name = null # required subnets = null # required }`);
  });

  it('render a hostile README inert: raw HTML escaped, script URLs and data URLs dropped, no image loads from anywhere', async () => {
    const res = await (await as(reader)).get('/app/modules/acme/vpc/aws');
    const readme = /<div class="readme">([\s\S]*?)<\/div><\/section>/.exec(res.text)![1]!;
    expect(readme).not.toMatch(/<(script|svg|img|iframe)\b/i);
    expect(readme).not.toMatch(/<[^>]+\son[a-z]+=/i);
    expect(readme).not.toMatch(/href="(javascript|vbscript|data):/i);
    expect(readme).toContain('&lt;script&gt;alert(&quot;readme script&quot;)&lt;/script&gt;');
    // The tracking pixel is a link to it now; the local image its alt text; the data image gone.
    expect(readme).toContain('<a href="https://tracker.example/pixel.png" rel="nofollow noopener noreferrer">tracker</a>');
    expect(readme).toContain('<span class="muted">local</span>');
    expect(readme).not.toContain('base64');
    // Links: external ones kept, the submodule's pointing at its section, the way out dropped.
    expect(readme).toContain('<a href="https://docs.example.com/vpc" rel="nofollow noopener noreferrer">docs</a>');
    expect(readme).toContain('<a href="#dir-modules-subnets">the subnets submodule</a>');
    expect(readme).not.toContain('etc/passwd"');
    expect(readme).toContain('outside');
    expect(readme).toContain('<a href="#usage">anchor</a>');
    expect(res.text).toContain('id="dir-modules-subnets"');
  });

  it('show download counts over time as an inline SVG chart', async () => {
    const res = await (await as(reader)).get('/app/modules/acme/vpc/aws');
    const text = textOf(res.text);
    expect(text).toContain('Last 7 days: 3; last 30 days: 3; last year: 3; in all: 3.');
    expect(res.text).toMatch(/<svg class="chart"[^>]*role="img" aria-label="3 downloads from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d">/);
    expect(res.text.match(/<rect /g)!.length).toBe(30);
  });

  it('show publishers every version with its status and error, and readers none of it', async () => {
    const owner = await (await as(alice)).get('/app/modules/acme/vpc/aws');
    const text = textOf(owner.text);
    expect(text).toContain('Publishing status');
    expect(text).toMatch(/2\.0\.0-rc\.1 errored \d{4}-\d\d-\d\d \S+/);
    const readerPage = await (await as(reader)).get('/app/modules/acme/vpc/aws');
    expect(textOf(readerPage.text)).not.toContain('Publishing status');
    expect(readerPage.text).not.toContain('2.0.0-rc.1');
  });
});

describe('browsing and search', () => {
  it('lists the organizations the user can see', async () => {
    const res = await (await as(reader)).get('/app/organizations');
    const text = textOf(res.text);
    expect(text).toContain('acme');
    expect(text).not.toContain('other');
    const org = await (await as(reader)).get('/app/organizations/acme');
    expect(textOf(org.text)).toContain('acme/vpc aws');
    expect(textOf(org.text)).toContain('acme/dns aws');
  });

  it("searches with the registry's ranking, as a page and as the fragment search-as-you-type swaps in", async () => {
    const w = await as(reader);
    const page = await w.get('/app/modules?q=route53');
    expect(page.status).toBe(200);
    expect(textOf(page.text)).toContain('1 modules match "route53".');
    expect(textOf(page.text)).toContain('acme/dns');
    expect(textOf(page.text)).not.toContain('acme/vpc');
    expect(page.text).toContain('<form method="get" action="/app/modules" role="search" data-live-search="/app/modules/results">');
    const fragment = await w.get('/app/modules/results?q=vpc');
    expect(fragment.text.startsWith('<p class="muted" role="status">')).toBe(true);
    expect(fragment.text).not.toContain('<html');
    expect(textOf(fragment.text)).toContain('acme/vpc');
    const all = await w.get('/app/modules');
    expect(textOf(all.text)).toContain('2 modules.');
    expect(textOf((await w.get('/app/modules?q=%22%27%3B--')).text)).toContain('No module matches');
  });

  it('shows a workspace its current outputs, sensitive values hidden', async () => {
    const res = await (await as(alice)).get('/app/organizations/acme/workspaces/prod');
    expect(res.status).toBe(200);
    const state = JSON.parse(stateFixture('outputs-serial1.json').toString('utf8')) as { outputs: Record<string, { value: unknown; sensitive?: boolean }> };
    const text = textOf(res.text);
    for (const [name, o] of Object.entries(state.outputs)) {
      expect(text).toContain(name);
      if (o.sensitive) expect(text).not.toContain(JSON.stringify(o.value));
    }
    expect(Object.values(state.outputs).some((o) => o.sensitive)).toBe(true);
    expect(text).toContain('sensitive');
    expect(textOf((await (await as(alice)).get('/app/organizations/acme/workspaces')).text)).toContain('prod serial 1');
  });
});

describe('the same 404s as the API', () => {
  const cases: [string, string][] = [
    ['/app/modules/other/secret-net/aws', '/v1/modules/other/secret-net/aws'],
    ['/app/modules/acme/nope/aws', '/v1/modules/acme/nope/aws'],
    ['/app/organizations/other', '/api/v2/organizations/other'],
    ['/app/organizations/nope', '/api/v2/organizations/nope'],
    ['/app/organizations/other/workspaces', '/api/v2/organizations/other/workspaces'],
    ['/app/organizations/acme/workspaces/prod', '/api/v2/organizations/acme/workspaces/prod'],
  ];
  it.each(cases)('%s is 404 exactly when %s is', async (pagePath, apiPath) => {
    const page = await (await as(reader)).get(pagePath);
    const api = await t.api('GET', apiPath, { token: reader.token });
    expect(api.status).toBe(404);
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toBe('text/html; charset=UTF-8');
  });

  it('shows the owner what the API shows the owner', async () => {
    const w = await as(outsider);
    expect((await w.get('/app/modules/other/secret-net/aws')).status).toBe(200);
    expect((await t.api('GET', '/v1/modules/other/secret-net/aws', { token: outsider.token })).status).toBe(200);
  });
});
