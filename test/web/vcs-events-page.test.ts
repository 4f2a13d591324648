import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { recordVcsEvent } from '../../src/vcs/service.js';
import { axeViolations, chromiumAvailable, launchChromium, watchedPage } from '../helpers/browser.js';
import { accept, createOrg, createTeam, invite } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createOAuthClient } from '../helpers/vcs.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';
import { textOf, WebClient } from '../helpers/web.js';

// TERRACE_SCREENSHOTS=1 also writes the README's screenshot of this page (as test/web/browser.test.ts does).
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCREENSHOTS = process.env.TERRACE_SCREENSHOTS === '1';

const DAY = 24 * 3600 * 1000;
const NOW = Date.parse('2026-06-15T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const HOSTILE = '<script>alert("vcs")</script><img src=x onerror=alert(1)> tag v9 & more';
const PAGE = '/app/organizations/acme/vcs-events';

let t: TestServer;
let clock: ManualClock;
let github: FakeVcsProvider;
let gitlab: FakeVcsProvider;
let owner: string;
let manager: string;
let plain: string;
let outsider: string;
let gh: { clientId: string; tokenId: string };
let gl: { clientId: string; tokenId: string };

/** The events recorded below, by age in days: what the page and the API both list (12 days is past keeping). */
const EVENTS = [
  { age: 0.5, level: 'info', message: 'Published acme/vpc/aws 1.2.0 from v1.2.0', client: 'gh' },
  { age: 1, level: 'error', message: 'Could not clone acme/infra: 401', action: 'rotate the token with PATCH /api/v2/oauth-clients/:id', client: 'gh' },
  { age: 2, level: 'info', message: 'Received ping for group/net (acme/net/aws)', client: 'gl' },
  { age: 3, level: 'info', message: HOSTILE, client: null },
  { age: 5, level: 'error', message: 'Rejected a webhook delivery for acme/net/aws: bad token', client: 'gl' },
  { age: 12, level: 'info', message: 'too old to list', client: 'gh' },
] as const;

beforeAll(async () => {
  clock = new ManualClock(new Date(NOW));
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { clock });
  github = await new FakeVcsProvider('github').addToken('ghp_page', 'octocat').start();
  gitlab = await new FakeVcsProvider('gitlab').addToken('glpat-page', 'tanuki').start();
  owner = (await createUserWithToken(t, 'owner')).token;
  await createOrg(t, 'acme', { token: owner });
  await createOrg(t, 'other', { token: owner });
  const vcsTeam = await createTeam(t, owner, 'acme', 'vcs', { 'organization-access': { 'manage-vcs-settings': true } });
  // Every other permission, but not manage-vcs-settings.
  const plainTeam = await createTeam(t, owner, 'acme', 'plain', {
    'organization-access': { 'manage-modules': true, 'manage-run-tasks': true, 'manage-workspaces': true, 'manage-projects': true, 'read-state-outputs': true },
  });
  manager = (await createUserWithToken(t, 'manager')).token;
  await accept(t, manager, await invite(t, owner, 'acme', 'manager', [vcsTeam.id]));
  plain = (await createUserWithToken(t, 'plain')).token;
  await accept(t, plain, await invite(t, owner, 'acme', 'plain', [plainTeam.id]));
  outsider = (await createUserWithToken(t, 'outsider')).token;
  gh = await createOAuthClient(t, 'acme', github, 'ghp_page', { token: owner, attributes: { name: 'github.com' } });
  gl = await createOAuthClient(t, 'acme', gitlab, 'glpat-page', { token: owner, attributes: { name: 'gitlab' } });
  const orgs = await t.running.deps.db.selectFrom('organizations').select(['id', 'name']).execute();
  const acmeId = orgs.find((o) => o.name === 'acme')!.id;
  // Only the events recorded below, at known times.
  await t.running.deps.db.deleteFrom('vcs_events').execute();
  for (const e of EVENTS) {
    clock.set(new Date(NOW - e.age * DAY));
    const c = e.client === 'gh' ? gh : e.client === 'gl' ? gl : null;
    await recordVcsEvent(t.running.deps, {
      organizationId: acmeId,
      level: e.level,
      message: e.message,
      suggestedAction: 'action' in e ? e.action : null,
      oauthClientId: c?.clientId ?? null,
      oauthTokenId: c?.tokenId ?? null,
    });
  }
  clock.set(new Date(NOW - DAY));
  await recordVcsEvent(t.running.deps, { organizationId: orgs.find((o) => o.name === 'other')!.id, level: 'info', message: 'another organization' });
  clock.set(new Date(NOW));
}, 60_000);

afterAll(async () => {
  await github?.close();
  await gitlab?.close();
  await t?.close();
});

async function as(token: string): Promise<WebClient> {
  const w = new WebClient(t);
  await w.signIn(token);
  return w;
}

/** The messages of the listed events, in order, as the page shows them. */
function messagesOf(html: string): string[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr><td>[\s\S]*?<\/td><td>[\s\S]*?<\/td><td>([\s\S]*?)(?:<p class="muted">[\s\S]*?<\/p>)?<\/td>/g)].map((m) => textOf(m[1]!).trim());
}

/** The API's list for the same query string, as messages. */
async function apiMessages(query: string, token = owner): Promise<string[]> {
  const res = await t.api('GET', `/api/v2/organizations/acme/vcs-events${query}`, { token });
  expect(res.status).toBe(200);
  return res.json.data.map((d: any) => d.attributes.message);
}

const enc = encodeURIComponent;
/** A query as the page's form sends it: every field, blank ones empty; checkboxes once per ticked box. */
function form(fields: { from?: string; to?: string; levels?: string[]; clients?: string[] } = {}): string {
  const q = [`${enc('filter[from]')}=${enc(fields.from ?? '')}`, `${enc('filter[to]')}=${enc(fields.to ?? '')}`];
  for (const l of fields.levels ?? []) q.push(`${enc('filter[levels]')}=${l}`);
  for (const c of fields.clients ?? []) q.push(`${enc('filter[oauth_client_external_ids]')}=${c}`);
  return `?${q.join('&')}`;
}
const ALL_LISTED = EVENTS.filter((e) => e.age < 10).map((e) => e.message);

describe('the VCS events page', () => {
  it('is linked in the navigation of the organization page for VCS managers only', async () => {
    const link = '<a href="/app/organizations/acme/vcs-events">VCS events</a>';
    for (const token of [owner, manager]) {
      const res = await (await as(token)).get('/app/organizations/acme');
      expect(res.status).toBe(200);
      expect(res.text).toMatch(/<nav class="tabs" aria-label="Organization"><ul><li><a href="\/app\/organizations\/acme" aria-current="page">Modules<\/a><\/li>[\s\S]*?<\/ul><\/nav>/);
      expect(res.text).toContain(link);
    }
    const plainPage = await (await as(plain)).get('/app/organizations/acme');
    expect(plainPage.status).toBe(200);
    expect(plainPage.text).toContain('<a href="/app/organizations/acme/workspaces">Workspaces and their outputs</a>');
    expect(plainPage.text).not.toContain('vcs-events');
  });

  it("lists the organization's events of the last 10 days, newest first, with time, level, message, suggested action and connection", async () => {
    const res = await (await as(owner)).get(PAGE);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=UTF-8');
    expect(messagesOf(res.text)).toEqual(ALL_LISTED);
    expect(messagesOf(res.text)).toEqual(await apiMessages(''));
    expect(textOf(res.text)).toContain('5 events; page 1 of 1.');
    expect(res.text).toContain(
      `<tr><td><time datetime="${iso(NOW - DAY)}">2026-06-14 12:00:00 UTC</time></td><td><span class="badge errored">error</span></td>` +
        '<td>Could not clone acme/infra: 401<p class="muted">Suggested action: rotate the token with PATCH /api/v2/oauth-clients/:id</p></td>' +
        `<td><a href="${github.httpUrl}/" rel="nofollow noopener noreferrer">github.com</a> <span class="muted">GitHub</span></td></tr>`,
    );
    expect(res.text).toContain(
      `<tr><td><time datetime="${iso(NOW - 2 * DAY)}">2026-06-13 12:00:00 UTC</time></td><td><span class="badge">info</span></td>` +
        `<td>Received ping for group/net (acme/net/aws)</td><td><a href="${gitlab.httpUrl}/" rel="nofollow noopener noreferrer">gitlab</a> <span class="muted">GitLab</span></td></tr>`,
    );
    // An event without a connection says so.
    expect(res.text).toMatch(/<td>&lt;script&gt;[^<]*<\/td><td><span class="muted">none<\/span><\/td><\/tr>/);
    expect(res.text).not.toContain('too old to list');
    expect(res.text).not.toContain('another organization');
    // The filter form: a plain GET form whose fields are the API's parameters, with a box per connection.
    expect(res.text).toContain('<form method="get" action="/app/organizations/acme/vcs-events" class="filters" aria-label="Filter events">');
    expect(res.text).toContain('<input id="filter-from" name="filter[from]" type="datetime-local" step="1" aria-describedby="filter-times"/>');
    expect(res.text).toContain('<label class="check"><input type="checkbox" name="filter[levels]" value="error"/> error</label>');
    expect(res.text).toContain(`<label class="check"><input type="checkbox" name="filter[oauth_client_external_ids]" value="${gl.clientId}"/> gitlab</label>`);
  });

  it('narrows by level, as the API does', async () => {
    const w = await as(owner);
    const errors = await w.get(PAGE + form({ levels: ['error'] }));
    expect(errors.status).toBe(200);
    expect(messagesOf(errors.text)).toEqual(['Could not clone acme/infra: 401', 'Rejected a webhook delivery for acme/net/aws: bad token']);
    expect(messagesOf(errors.text)).toEqual(await apiMessages('?filter%5Blevels%5D=error'));
    // The ticked box stays ticked.
    expect(errors.text).toContain('<input type="checkbox" name="filter[levels]" value="error" checked=""/>');
    expect(errors.text).toContain('<input type="checkbox" name="filter[levels]" value="info"/>');
    const info = await w.get(PAGE + form({ levels: ['info'] }));
    expect(messagesOf(info.text)).toEqual([EVENTS[0].message, EVENTS[2].message, EVENTS[3].message]);
    // Both boxes, or the API's comma-separated form, are both levels.
    expect(messagesOf((await w.get(PAGE + form({ levels: ['info', 'error'] }))).text)).toEqual(ALL_LISTED);
    expect(messagesOf((await w.get(`${PAGE}?filter[levels]=info,error`)).text)).toEqual(ALL_LISTED);
  });

  it('narrows by time: the form sends UTC times without a zone; RFC 3339 in the address works too', async () => {
    const w = await as(owner);
    // datetime-local values: minutes only, or with seconds.
    const between = await w.get(PAGE + form({ from: iso(NOW - 3 * DAY).slice(0, 16), to: iso(NOW - DAY).slice(0, 19) }));
    expect(between.status).toBe(200);
    expect(messagesOf(between.text)).toEqual([EVENTS[1].message, EVENTS[2].message, EVENTS[3].message]);
    expect(messagesOf(between.text)).toEqual(await apiMessages(`?filter%5Bfrom%5D=${iso(NOW - 3 * DAY)}&filter%5Bto%5D=${iso(NOW - DAY)}`));
    // The inputs show what was asked, in the form a datetime-local input takes.
    expect(between.text).toContain(`name="filter[from]" type="datetime-local" step="1" value="${iso(NOW - 3 * DAY).slice(0, 16)}"`);
    const to = await w.get(`${PAGE}?filter%5Bto%5D=${enc(iso(NOW - 2.5 * DAY))}`);
    expect(messagesOf(to.text)).toEqual([EVENTS[3].message, EVENTS[4].message]);
    expect(to.text).toContain(`name="filter[to]" type="datetime-local" step="1" value="${iso(NOW - 2.5 * DAY).slice(0, 19)}"`);
    // Reaching back further than 10 days still stops at 10 days, as in the API.
    const far = await w.get(PAGE + form({ from: '2026-01-01T00:00' }));
    expect(messagesOf(far.text)).toEqual(ALL_LISTED);
    const none = await w.get(PAGE + form({ from: iso(NOW - 0.4 * DAY).slice(0, 16) }));
    expect(none.status).toBe(200);
    expect(messagesOf(none.text)).toEqual([]);
    expect(textOf(none.text)).toContain('No VCS events match these filters.');
  });

  it('narrows by connection, one box or several', async () => {
    const w = await as(owner);
    const one = await w.get(PAGE + form({ clients: [gl.clientId] }));
    expect(messagesOf(one.text)).toEqual([EVENTS[2].message, EVENTS[4].message]);
    expect(messagesOf(one.text)).toEqual(await apiMessages(`?filter%5Boauth_client_external_ids%5D=${gl.clientId}`));
    expect(one.text).toContain(`value="${gl.clientId}" checked=""/> gitlab</label>`);
    const both = await w.get(PAGE + form({ clients: [gh.clientId, gl.clientId], levels: ['error'] }));
    expect(messagesOf(both.text)).toEqual([EVENTS[1].message, EVENTS[4].message]);
  });

  it('refuses a filter the API refuses with its reason, keeping the form', async () => {
    const w = await as(owner);
    for (const [query, detail] of [
      [form({ from: 'yesterday' }), 'filter[from] must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got "yesterday"'],
      [form({ from: iso(NOW - DAY).slice(0, 16), to: iso(NOW - 2 * DAY).slice(0, 16) }), `filter[from] (${iso(NOW - DAY).slice(0, 16)}:00Z) must not be later than filter[to] (${iso(NOW - 2 * DAY).slice(0, 16)}:00Z)`],
      [form({ levels: ['debug'] }), 'filter[levels] accepts only info and error (comma-separated), got "debug"'],
      [form({ clients: ['github'] }), 'filter[oauth_client_external_ids] must list OAuth client ids (oc-…), comma-separated, got "github"'],
    ] as const) {
      const res = await w.get(PAGE + query);
      expect(res.status, query).toBe(422);
      expect(res.text).toContain(`<p class="notice error" role="alert">${detail.replace(/"/g, '&quot;')}</p>`);
      expect(res.text).toContain('<form method="get" action="/app/organizations/acme/vcs-events"');
      expect(res.text).not.toContain('<tbody>');
    }
  });

  it('pages, keeping the filters in the links', async () => {
    const w = await as(owner);
    const first = await w.get(`${PAGE}?page%5Bsize%5D=2`);
    expect(messagesOf(first.text)).toEqual(ALL_LISTED.slice(0, 2));
    expect(textOf(first.text)).toContain('5 events; page 1 of 3.');
    expect(first.text).toContain('<nav aria-label="Pages"><ul class="pager"><li><a href="/app/organizations/acme/vcs-events?page%5Bsize%5D=2&amp;page%5Bnumber%5D=2" rel="next">Older events</a></li></ul></nav>');
    // The page size rides along in the form too.
    expect(first.text).toContain('<input type="hidden" name="page[size]" value="2"/>');
    const second = await w.get(`${PAGE}?page%5Bsize%5D=2&page%5Bnumber%5D=2`);
    expect(messagesOf(second.text)).toEqual(ALL_LISTED.slice(2, 4));
    expect(second.text).toContain('rel="prev">Newer events</a>');
    expect(second.text).toContain('rel="next">Older events</a>');
    const last = await w.get(`${PAGE}?page%5Bsize%5D=2&page%5Bnumber%5D=3`);
    expect(messagesOf(last.text)).toEqual(ALL_LISTED.slice(4));
    expect(last.text).not.toContain('Older events');
    // With a filter: the next page keeps it.
    const info = await w.get(`${PAGE}${form({ levels: ['info'] })}&page%5Bsize%5D=1`);
    expect(messagesOf(info.text)).toEqual([EVENTS[0].message]);
    const next = /href="([^"]+)" rel="next"/.exec(info.text)![1]!.replace(/&amp;/g, '&');
    expect(next).toBe(`${PAGE}?filter%5Bfrom%5D=&filter%5Bto%5D=&filter%5Blevels%5D=info&page%5Bsize%5D=1&page%5Bnumber%5D=2`);
    expect(messagesOf((await w.get(next)).text)).toEqual([EVENTS[2].message]);
    // The API's own page rules apply: a page past the end is empty, a bad number is refused.
    expect(messagesOf((await w.get(`${PAGE}?page%5Bnumber%5D=9`)).text)).toEqual([]);
    const bad = await w.get(`${PAGE}?page%5Bnumber%5D=0`);
    expect(bad.status).toBe((await t.api('GET', '/api/v2/organizations/acme/vcs-events?page%5Bnumber%5D=0', { token: owner })).status);
    expect(bad.text).toContain('<p class="notice error" role="alert">page[number]');
  });

  it('renders messages and connection names from outside as text', async () => {
    await t.running.deps.db.updateTable('oauth_clients').set({ name: 'GitHub <b>main</b>' }).where('id', '=', gh.clientId).execute();
    try {
      const res = await (await as(owner)).get(PAGE);
      expect(res.text).toContain('&lt;script&gt;alert(&quot;vcs&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; tag v9 &amp; more');
      expect(res.text).not.toContain('<script>alert');
      expect(res.text).not.toContain('<img');
      expect(messagesOf(res.text)).toContain(HOSTILE);
      // In the list and in the filter form.
      expect(res.text).toContain('rel="nofollow noopener noreferrer">GitHub &lt;b&gt;main&lt;/b&gt;</a>');
      expect(res.text).toContain(`value="${gh.clientId}"/> GitHub &lt;b&gt;main&lt;/b&gt;</label>`);
      expect(res.text).not.toContain('<b>main</b>');
    } finally {
      await t.running.deps.db.updateTable('oauth_clients').set({ name: 'github.com' }).where('id', '=', gh.clientId).execute();
    }
  });

  it('links a connection only when its web address is http(s)', async () => {
    // Connections are checked when made; a row that holds another scheme anyway (older data, a bug) is not linked.
    await t.running.deps.db.updateTable('oauth_clients').set({ http_url: 'javascript:alert(1)' }).where('id', '=', gl.clientId).execute();
    try {
      const res = await (await as(owner)).get(PAGE);
      expect(res.text).not.toContain('javascript:');
      expect(res.text).toContain('<td>Received ping for group/net (acme/net/aws)</td><td>gitlab <span class="muted">GitLab</span></td></tr>');
    } finally {
      await t.running.deps.db.updateTable('oauth_clients').set({ http_url: gitlab.httpUrl }).where('id', '=', gl.clientId).execute();
    }
  });

  it('shows a manage-vcs-settings team member the same list as an owner', async () => {
    const res = await (await as(manager)).get(PAGE + form({ levels: ['error'] }));
    expect(res.status).toBe(200);
    expect(messagesOf(res.text)).toEqual(await apiMessages('?filter%5Blevels%5D=error', manager));
  });
});

describe('the VCS events page: who may not see it', () => {
  it.each([
    ['a member of every team but one with manage-vcs-settings', () => plain],
    ['someone outside the organization', () => outsider],
  ])('answers %s with the API\'s 404, whatever the filters', async (_, who) => {
    const api = await t.api('GET', '/api/v2/organizations/acme/vcs-events', { token: who() });
    expect(api.status).toBe(404);
    const w = await as(who());
    for (const query of ['', form({ from: 'not a time' })]) {
      const res = await w.get(PAGE + query);
      expect(res.status, query).toBe(404);
      expect(res.headers.get('content-type')).toBe('text/html; charset=UTF-8');
      expect(textOf(res.text)).toContain(api.json.errors[0].detail);
      expect(res.text).not.toContain('Published acme/vpc');
    }
  });

  it('sends someone signed out to sign in, and back', async () => {
    const res = await new WebClient(t).get(`${PAGE}?filter%5Blevels%5D=error`);
    expect(res.status).toBe(302);
    expect(res.location).toBe(`/app/signin?next=${enc(`${PAGE}?filter%5Blevels%5D=error`)}`);
  });

  it('answers 404 for an organization that does not exist', async () => {
    const res = await (await as(owner)).get('/app/organizations/nope/vcs-events');
    expect(res.status).toBe(404);
  });
});

describe.runIf(chromiumAvailable)('the VCS events page in Chromium', () => {
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let foreign: string[];
  let dialogs: string[];

  beforeAll(async () => {
    chromium = await launchChromium();
    ({ page, foreign, dialogs } = await watchedPage(chromium.browser, new URL(t.url).origin));
  }, 60_000);

  afterAll(async () => {
    await chromium?.close();
  });

  const axe = axeViolations;

  it('opens the page from the organization, filters by level and connection, and passes the accessibility checks', async () => {
    await page.goto(`${t.url}/app/organizations/acme`);
    expect(new URL(page.url()).pathname).toBe('/app/signin');
    await page.getByLabel('API token').fill(manager);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${t.url}/app/organizations/acme`);
    await page.getByRole('navigation', { name: 'Organization' }).getByRole('link', { name: 'VCS events' }).click();
    await page.getByRole('heading', { name: 'acme: VCS events', level: 1 }).waitFor();
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(ALL_LISTED.length);
    // The hostile message is text on the page, and nothing ran.
    expect(await rows.nth(3).locator('td').nth(2).textContent()).toBe(HOSTILE);
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await axe(page)).toEqual([]);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(ROOT, 'docs', 'screenshots', 'vcs-events.png'), fullPage: false });

    await page.getByRole('checkbox', { name: 'error' }).check();
    await page.getByRole('checkbox', { name: 'gitlab' }).check();
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/filter%5Blevels%5D=error/);
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('Rejected a webhook delivery for acme/net/aws: bad token');
    expect(await page.getByRole('checkbox', { name: 'error' }).isChecked()).toBe(true);
    await page.getByLabel('From (UTC)').fill(iso(NOW - 4 * DAY).slice(0, 16));
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No VCS events match these filters.').waitFor();
    expect(await axe(page)).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
  });
});

// Last: it adds events the tests above do not expect.
describe('the VCS events page after a connection is deleted', () => {
  it('names a deleted connection by its id', async () => {
    // Made a minute ago and deleted now (the page's defaults end at now): two events in a known order.
    clock.set(new Date(NOW - 60_000));
    const extra = await createOAuthClient(t, 'acme', github, 'ghp_page', { token: owner, attributes: { name: 'short-lived' } });
    clock.set(new Date(NOW));
    expect((await t.api('DELETE', `/api/v2/oauth-clients/${extra.clientId}`, { token: owner })).status).toBe(204);
    const res = await (await as(owner)).get(PAGE + form({ clients: [extra.clientId] }));
    expect(messagesOf(res.text)).toEqual([`OAuth client ${extra.clientId} deleted`, `Connected to GitHub at ${github.apiUrl} as octocat`]);
    expect(res.text).toContain(`<td><code>${extra.clientId}</code> <span class="muted">(deleted)</span></td>`);
    // It is no longer offered as a filter.
    expect(res.text).not.toContain(`value="${extra.clientId}"`);
  });
});
