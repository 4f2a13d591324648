import net from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { createOrganization, publish, addMember } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { textOf, WebClient } from '../helpers/web.js';

// Single sign-on through a real OpenID Connect provider (the oidc-provider package) on loopback,
// its login and consent pages driven by Chromium.
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

const ACCOUNTS: Record<string, { email: string; preferred_username: string }> = {
  carol: { email: 'carol@example.com', preferred_username: 'carol' },
  // Her address is an existing user's: she signs in as that user.
  dave: { email: 'alice@example.com', preferred_username: 'dave' },
};

describe.runIf(chromiumAvailable)('single sign-on with OpenID Connect', () => {
  let t: TestServer;
  let idp: Server;
  let issuer: string;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    const [idpPort, terracePort] = [await freePort(), await freePort()];
    issuer = `http://127.0.0.1:${idpPort}`;
    const { default: Provider } = await import('oidc-provider');
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: 'terrace',
          client_secret: 'terrace-secret-0123456789',
          redirect_uris: [`http://127.0.0.1:${terracePort}/app/signin/oidc/callback`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      pkce: { required: () => true },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'] },
      findAccount: (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: () => ({ sub: id, ...(ACCOUNTS[id] ?? { email: `${id}@example.com`, preferred_username: id }), email_verified: true }),
      }),
    });
    idp = provider.listen(idpPort, '127.0.0.1');
    t = await startTestServer({
      PORT: String(terracePort),
      TERRACE_JOBS: 'false',
      TERRACE_OIDC_ISSUER: issuer,
      TERRACE_OIDC_CLIENT_ID: 'terrace',
      TERRACE_OIDC_CLIENT_SECRET: 'terrace-secret-0123456789',
    });
    const alice = await t.api('POST', '/api/v2/admin/users', { body: { data: { type: 'users', attributes: { username: 'alice', email: 'alice@example.com' } } } });
    expect(alice.status).toBe(201);
    await createOrganization(t, 'acme');
    await publish(t, 'acme', 'vpc', 'aws', '1.0.0');
    chromium = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await chromium?.close();
    await t?.close();
    await new Promise((r) => idp?.close(r));
  });

  /** Signs in through the provider's own (development) login and consent pages; returns the page. */
  async function signInAs(login: string) {
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${t.url}/app/organizations`);
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    await page.waitForURL(`${issuer}/**`);
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').click();
    await page.locator('button[type="submit"]').click();
    await page.waitForURL(`${t.url}/app/organizations`).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${page.url()}: ${await page.locator('body').textContent()}`);
    });
    return { page, context };
  }

  it('provisions a new user from the email and preferred_username claims, and signs them in', async () => {
    const { page, context } = await signInAs('carol');
    expect(await page.getByRole('banner').textContent()).toContain('Signed in as carol');
    const users = await t.running.deps.db.selectFrom('users').selectAll().where('username', '=', 'carol').execute();
    expect(users).toHaveLength(1);
    expect(users[0]!.email).toBe('carol@example.com');
    expect(users[0]!.is_site_admin).toBe(0);
    // The session acts as a token issued for it alone, expiring with it; sign-out deletes it.
    const tokens = await t.running.deps.db.selectFrom('tokens').selectAll().where('user_id', '=', users[0]!.id).execute();
    expect(tokens.map((x) => x.description)).toEqual(['web session (single sign-on)']);
    expect(tokens[0]!.expired_at).toMatch(/Z$/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.url}/app/signin`);
    expect(await t.running.deps.db.selectFrom('tokens').selectAll().where('user_id', '=', users[0]!.id).execute()).toEqual([]);
    await context.close();
  });

  it('signs an existing user in by e-mail, with what the API lets that user see', async () => {
    const before = (await t.running.deps.db.selectFrom('users').selectAll().execute()).length;
    const { page, context } = await signInAs('dave');
    expect(await page.getByRole('banner').textContent()).toContain('Signed in as alice');
    expect((await t.running.deps.db.selectFrom('users').selectAll().execute()).length).toBe(before);
    // alice belongs to no organization: acme's module is as hidden here as in the API.
    await page.goto(`${t.url}/app/modules/acme/vpc/aws`);
    expect(await page.locator('h1').textContent()).toBe('404 not found');
    await context.close();
  });

  it('refuses a callback without the flow it started, and changes nothing', async () => {
    const w = new WebClient(t);
    const before = (await t.running.deps.db.selectFrom('web_sessions').selectAll().execute()).length;
    const res = await w.get('/app/signin/oidc/callback?code=forged&state=forged');
    expect(res.status).toBe(400);
    expect(textOf(res.text)).toContain('this sign-in has expired or was started in another browser');
    expect((await t.running.deps.db.selectFrom('web_sessions').selectAll().execute()).length).toBe(before);
  });
});
