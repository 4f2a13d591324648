import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/** Debian's chromium: CI installs it (.ci/run); where it is absent, browser tests skip. */
export const CHROMIUM = '/usr/bin/chromium';
export const chromiumAvailable = fs.existsSync(CHROMIUM);

/**
 * One headless Chromium per test file. The networking flags keep it from calling home (there is
 * no network beyond loopback). Playwright gives every launch a fresh temporary profile.
 */
export async function launchChromium(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/**
 * The browser step of a CLI login (terraform login, terrace login): opens the authorization URL
 * the CLI printed, signs in with token, approves, and waits until the browser has brought the code
 * to the CLI's localhost callback. Returns the text of the page the callback answered with, or
 * null when it answered none: Terraform closes its callback listener as soon as it has the code,
 * at times before its answer is written (Chromium shows ERR_EMPTY_RESPONSE, and its retry is
 * refused). The login goes on all the same; the CLI's exit and stored token tell whether it worked.
 */
export async function approveCliLogin(url: string, token: string): Promise<string | null> {
  const chromium = await launchChromium();
  try {
    const page = await (await chromium.browser.newContext({ ignoreHTTPSErrors: true })).newPage();
    await page.goto(url);
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Authorize Terraform' }).waitFor();
    const callback = /^http:\/\/localhost:100\d\d\/login\?/;
    const reached = page.waitForRequest(callback);
    await page.getByRole('button', { name: 'Approve' }).click();
    await reached;
    try {
      await page.waitForURL(callback);
    } catch (e) {
      if (/ERR_EMPTY_RESPONSE|ERR_CONNECTION_REFUSED/.test(String(e))) return null;
      throw e;
    }
    return (await page.textContent('body')) ?? '';
  } finally {
    await chromium.close();
  }
}

const AXE = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** The WCAG 2 A and AA violations axe finds on the page, one line each; [] when it passes. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated by the driver, not loaded by the page: the page's CSP stays as strict as it is.
  await page.evaluate(AXE);
  const result = (await page.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } })`)) as {
    violations: { id: string; nodes: { target: string[] }[] }[];
  };
  return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/**
 * A page in a new 1200×900 context that lets only this origin be reached: every other request is
 * recorded in foreign and refused, and every dialog (alert, confirm) is recorded and dismissed.
 */
export async function watchedPage(browser: Browser, origin: string): Promise<{ context: BrowserContext; page: Page; foreign: string[]; dialogs: string[] }> {
  const foreign: string[] = [];
  const dialogs: string[] = [];
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page, foreign, dialogs };
}
