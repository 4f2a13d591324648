import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE_README, VPC_MODULE } from '../fixtures/modules.js';
import { axeViolations, chromiumAvailable, launchChromium, watchedPage } from '../helpers/browser.js';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { runWithTaskResults } from '../helpers/run-results.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';

// A real browser (Debian's chromium, driven by playwright-core). One launch for the file.
// TERRACE_SCREENSHOTS=1 also writes the README's screenshots under docs/screenshots/.
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCREENSHOTS = process.env.TERRACE_SCREENSHOTS === '1';

describe.runIf(chromiumAvailable)('the web UI in Chromium', () => {
  let t: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let context: BrowserContext;
  let page: Page;
  let reader: { token: string };
  let foreign: string[];
  let dialogs: string[];
  let runId: string;
  let closeHook: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    t = await startTestServer({ TERRACE_JOBS: 'false' });
    const alice = await createUserWithToken(t, 'alice');
    reader = await createUserWithToken(t, 'reader');
    await createOrganization(t, 'acme', alice.token);
    await addMember(t, 'acme', { username: 'reader', token: reader.token });
    await publish(t, 'acme', 'vpc', 'aws', '1.0.0', { ...VPC_MODULE, 'variables.tf': 'variable "old_only" {\n  type = string\n}\n' });
    await publish(t, 'acme', 'vpc', 'aws', '1.2.0', { ...VPC_MODULE, 'README.md': `${HOSTILE_README}\n\n${VPC_MODULE['README.md']}` });
    await publish(t, 'acme', 'dns', 'aws', '0.1.0', { 'main.tf': 'variable "zone" {}\n', 'README.md': '# DNS zones\n\nRoute53 zones.\n' });
    // reader may read acme's workspaces and runs; one run has task results with a hostile outcome body.
    const readers = await t.api('POST', '/api/v2/organizations/acme/teams', {
      token: alice.token,
      body: { data: { type: 'teams', attributes: { name: 'readers', 'organization-access': { 'read-state-outputs': true } } } },
    });
    await t.api('POST', `/api/v2/teams/${readers.json.data.id}/relationships/users`, { token: alice.token, body: { data: [{ type: 'users', id: 'reader' }] } });
    const ws = await createWorkspace(t, 'acme', 'prod', alice.token);
    ({ runId, close: closeHook } = await runWithTaskResults(t, 'acme', ws.id));
    chromium = await launchChromium();
    const origin = new URL(t.url).origin;
    // Every request is seen: anything for another origin is recorded and refused.
    ({ context, page, foreign, dialogs } = await watchedPage(chromium.browser, origin));
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  }, 120_000);

  afterAll(async () => {
    await closeHook?.();
    await chromium?.close();
    await t?.close();
  });

  const axe = () => axeViolations(page);

  async function shot(name: string): Promise<void> {
    if (SCREENSHOTS) await page.screenshot({ path: path.join(ROOT, 'docs', 'screenshots', `${name}.png`), fullPage: false });
  }

  it('signs in with a token using the keyboard alone, skip link first', async () => {
    await page.goto(`${t.url}/app/modules`);
    expect(new URL(page.url()).pathname).toBe('/app/signin');
    expect(await axe()).toEqual([]);
    await shot('signin');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement?.id')).toBe('main');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.id')).toBe('token');
    await page.keyboard.type(reader.token);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${t.url}/app/modules`);
    await page.getByRole('heading', { name: 'Modules', level: 1 }).waitFor();
    expect(await page.getByRole('banner').textContent()).toContain('Signed in as reader');
    for (const role of ['banner', 'navigation', 'main', 'contentinfo', 'search'] as const) expect(await page.getByRole(role).first().count(), role).toBe(1);
    expect(await axe()).toEqual([]);
  });

  it('searches as the user types, and the address follows', async () => {
    await page.goto(`${t.url}/app/modules`);
    await shot('modules');
    const results = page.locator('#results');
    expect(await results.textContent()).toContain('acme/vpc');
    await page.getByRole('searchbox', { name: 'Search modules' }).pressSequentially('route');
    await page.waitForURL(/\/app\/modules\?q=route$/);
    await results.getByText('1 modules match "route".').waitFor();
    expect(await results.textContent()).toContain('acme/dns');
    expect(await results.textContent()).not.toContain('acme/vpc');
  });

  it('opens a module, renders its hostile README inert, and passes the accessibility checks', async () => {
    await page.goto(`${t.url}/app/modules?q=vpc`);
    await page.getByRole('link', { name: /acme\/vpc/ }).click();
    await page.getByRole('heading', { name: 'acme/vpc/aws', level: 1 }).waitFor();
    expect(await page.locator('.readme script, .readme img, .readme svg, .readme iframe').count()).toBe(0);
    expect(await page.locator('#readme .readme').textContent()).toContain('<script>alert("readme script")</script>');
    // Click every link the README kept that stays on this page; the others only leave when followed.
    await page.locator('.readme a[href^="#"]').first().click();
    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
    expect(await axe()).toEqual([]);
  });

  it('switches versions with the selector', async () => {
    await page.getByLabel('Version', { exact: true }).selectOption('1.0.0');
    await page.waitForURL(/version=1\.0\.0/);
    await page.getByText('Version 1.0.0, published').waitFor();
    expect(await page.locator('#inputs').textContent()).toContain('old_only');
    await shot('module');
  });

  it('copies the usage snippet to the clipboard', async () => {
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    const copied = (await page.evaluate('navigator.clipboard.readText()')) as string;
    expect(copied).toBe(await page.locator('#snippet').textContent());
    expect(copied).toContain(`source  = "${new URL(t.url).host}/acme/vpc/aws"`);
    expect(copied).toContain('version = "~> 1.0.0"');
  });

  it('creates a token on the settings page, shows it once, and revokes it', async () => {
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByLabel('Description').fill('laptop');
    await page.getByRole('button', { name: 'Create token' }).click();
    const secret = (await page.locator('#new-token').textContent())!;
    expect(secret).toMatch(/\.terrace\./);
    expect((await t.api('GET', '/api/v2/account/details', { token: secret })).status).toBe(200);
    await shot('tokens');
    expect(await axe()).toEqual([]);
    await page.getByRole('button', { name: 'Revoke laptop' }).click();
    await page.waitForURL(`${t.url}/app/settings/tokens`);
    expect(await page.locator('#new-token').count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain('laptop');
    expect((await t.api('GET', '/api/v2/account/details', { token: secret })).status).toBe(401);
    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
  });

  it("reaches a run's task results from the workspace, with a hostile outcome body inert", async () => {
    await page.goto(`${t.url}/app/organizations/acme/workspaces/prod`);
    await page.getByRole('link', { name: 'Runs and run task results' }).click();
    await page.getByRole('heading', { name: 'acme/prod: runs', level: 1 }).waitFor();
    await page.getByRole('link', { name: runId }).click();
    await page.getByRole('heading', { name: `Run ${runId}`, level: 1 }).waitFor();
    await shot('run');
    expect(await page.getByRole('row', { name: /scanner passed/ }).textContent()).toContain('mandatory');
    const body = page.locator('.outcome .readme');
    expect(await body.count()).toBe(1);
    expect(await body.textContent()).toContain('<script>alert("outcome script")</script>');
    expect(await page.locator('.outcome script, .outcome img, .outcome svg, .outcome iframe').count()).toBe(0);
    // The links the body kept stay on this page or leave only when followed.
    await body.locator('a[href^="#"]').first().click();
    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
    expect(await axe()).toEqual([]);
  });
});
