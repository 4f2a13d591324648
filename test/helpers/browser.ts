import fs from 'node:fs';
import type { Browser } from 'playwright-core';

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
