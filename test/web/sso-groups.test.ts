import net from 'node:net';
import type { Server } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium } from '../helpers/browser.js';
import { capturingLogger } from '../helpers/logs.js';
import { createOrganization, publish, addMember } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { testStore } from '../helpers/store.js';

// Single sign-on's groups claim mapped to teams, through a real OpenID Connect provider
// (oidc-provider on loopback) whose login and consent pages Chromium drives. The test changes an
// account's groups between sign-ins, as an identity provider's administrator would.
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

const GROUPS: Record<string, unknown> = {};
const logs = capturingLogger('info');

describe.runIf(chromiumAvailable)('single sign-on: the groups claim decides the mapped teams', () => {
  let t: TestServer;
  let idp: Server;
  let issuer: string;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let alice: { id: string; username: string; token: string };
  let frank: { id: string; username: string; token: string };
  const teams: Record<string, string> = {};

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
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'], groups: ['groups'] },
      findAccount: (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: () => ({ sub: id, email: `${id}@example.com`, preferred_username: id, email_verified: true, ...(id in GROUPS ? { groups: GROUPS[id] } : {}) }),
      }),
    });
    idp = provider.listen(idpPort, '127.0.0.1');
    t = await startTestServer({
      PORT: String(terracePort),
      TERRACE_JOBS: 'false',
      TERRACE_OIDC_ISSUER: issuer,
      TERRACE_OIDC_CLIENT_ID: 'terrace',
      TERRACE_OIDC_CLIENT_SECRET: 'terrace-secret-0123456789',
      TERRACE_OIDC_SCOPES: 'openid email profile groups',
      TERRACE_OIDC_GROUPS_CLAIM: 'groups',
      TERRACE_OIDC_GROUP_TEAMS: 'platform-eng=acme/platform; acme-admins=acme/owners; platform-eng=nowhere/none',
    }, { logger: logs.logger });
    alice = await createUserWithToken(t, 'alice');
    await createOrganization(t, 'acme', alice.token);
    await publish(t, 'acme', 'vpc', 'aws', '1.0.0');
    for (const name of ['platform', 'manual']) {
      const r = await t.api('POST', '/api/v2/organizations/acme/teams', { token: alice.token, body: { data: { type: 'teams', attributes: { name } } } });
      expect(r.status).toBe(201);
      teams[name] = r.json.data.id;
    }
    // frank was invited the usual way and seated by an owner in a mapped and an unmapped team.
    frank = await createUserWithToken(t, 'frank');
    await addMember(t, 'acme', frank);
    for (const name of ['platform', 'manual']) {
      const r = await t.api('POST', `/api/v2/teams/${teams[name]}/relationships/users`, { token: alice.token, body: { data: [{ type: 'users', id: 'frank' }] } });
      expect(r.status).toBe(204);
    }
    chromium = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await chromium?.close();
    await t?.close();
    await new Promise((r) => idp?.close(r));
  });

  /** Signs in through the provider's login and consent pages; returns the page Terrace ended on. */
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
    await page.waitForURL(`${t.url}/app/**`);
    return { page, context };
  }

  const db = () => t.running.deps.db;
  async function seats(username: string): Promise<string[]> {
    const rows = await db()
      .selectFrom('team_members')
      .innerJoin('teams', 'teams.id', 'team_members.team_id')
      .innerJoin('users', 'users.id', 'team_members.user_id')
      .select('teams.name')
      .where('users.username', '=', username)
      .execute();
    return rows.map((r) => r.name).sort();
  }
  async function membership(username: string) {
    const m = await db()
      .selectFrom('organization_memberships')
      .innerJoin('users', 'users.id', 'organization_memberships.user_id')
      .select(['organization_memberships.id', 'organization_memberships.status'])
      .where('users.username', '=', username)
      .executeTakeFirst();
    if (!m) return undefined;
    const sso = await db().selectFrom('sso_memberships').select('membership_id').where('membership_id', '=', m.id).executeTakeFirst();
    return { status: m.status, sso: sso !== undefined };
  }

  it('puts a new user whose group maps to a team in it, and they see its organization', async () => {
    GROUPS.erin = ['platform-eng', 'unrelated'];
    const { page, context } = await signInAs('erin');
    expect(new URL(page.url()).pathname).toBe('/app/organizations');
    expect(await page.getByRole('banner').textContent()).toContain('Signed in as erin');
    expect(await page.locator('main').textContent()).toContain('acme');
    expect(await seats('erin')).toEqual(['platform']);
    expect(await membership('erin')).toEqual({ status: 'active', sso: true });
    await page.goto(`${t.url}/app/modules/acme/vpc/aws`);
    expect(await page.locator('h1').textContent()).toBe('acme/vpc/aws');
    // The team's members list shows her to its owner through the API.
    const team = await t.api('GET', `/api/v2/teams/${teams.platform}?include=users`, { token: alice.token });
    expect(team.json.included.map((u: any) => u.attributes.username)).toContain('erin');
    await context.close();
  });

  it('signing in again with the same groups changes nothing', async () => {
    const before = await db().selectFrom('team_members').selectAll().orderBy('team_id').orderBy('user_id').execute();
    const { context } = await signInAs('erin');
    expect(await db().selectFrom('team_members').selectAll().orderBy('team_id').orderBy('user_id').execute()).toEqual(before);
    await context.close();
  });

  it('takes the user out of the team at the next sign-in without the group, and the organization out of sight', async () => {
    GROUPS.erin = ['unrelated'];
    const { page, context } = await signInAs('erin');
    expect(await seats('erin')).toEqual([]);
    expect(await membership('erin')).toBeUndefined();
    expect(await page.locator('main').textContent()).toContain('You are not a member of any organization yet.');
    await page.goto(`${t.url}/app/modules/acme/vpc/aws`);
    expect(await page.locator('h1').textContent()).toBe('404 not found');
    await context.close();
  });

  it('removes a mapped seat an owner gave by hand, leaves unmapped teams and a membership by invitation alone', async () => {
    expect(await seats('frank')).toEqual(['manual', 'platform']);
    // No groups claim at all: frank is in no group.
    const { page, context } = await signInAs('frank');
    expect(await seats('frank')).toEqual(['manual']);
    expect(await membership('frank')).toEqual({ status: 'active', sso: false });
    expect(await page.locator('main').textContent()).toContain('acme');
    await context.close();
  });

  it('never removes the last owner from the owners team', async () => {
    GROUPS.alice = ['acme-admins'];
    let s = await signInAs('alice');
    expect(await seats('alice')).toEqual(['owners']);
    await s.context.close();
    GROUPS.alice = [];
    s = await signInAs('alice');
    expect(await seats('alice')).toEqual(['owners']);
    expect(await membership('alice')).toEqual({ status: 'active', sso: false });
    await s.context.close();
  });

  // PostgreSQL runs the sign-in's transaction again after a serialization failure. A trigger
  // forces one, once (a sequence is not rolled back), after the membership is made and before
  // the seat is: what the first attempt did is gone, and its log lines must be too.
  it.runIf(testStore === 'postgres')('logs a sign-in whose transaction was run again once, as it committed', async () => {
    await sql`create sequence test_fail_once`.execute(db());
    await sql`create function test_fail_once() returns trigger language plpgsql as $$
      begin
        if nextval('test_fail_once') = 1 then
          raise exception 'forced serialization failure' using errcode = '40001';
        end if;
        return new;
      end $$`.execute(db());
    await sql`create trigger test_fail_once after insert on team_members for each row execute function test_fail_once()`.execute(db());
    try {
      GROUPS.gina = ['platform-eng'];
      const { context } = await signInAs('gina');
      await context.close();
      // The first attempt did fail: the retry is what committed.
      expect((await sql<{ last_value: string }>`select last_value::text as last_value from test_fail_once`.execute(db())).rows[0]!.last_value).toBe('2');
    } finally {
      await sql`drop trigger test_fail_once on team_members`.execute(db());
      await sql`drop function test_fail_once()`.execute(db());
      await sql`drop sequence test_fail_once`.execute(db());
    }
    expect(await seats('gina')).toEqual(['platform']);
    expect(await membership('gina')).toEqual({ status: 'active', sso: true });
    const gina = (await db().selectFrom('users').select('id').where('username', '=', 'gina').executeTakeFirstOrThrow()).id;
    const m = (await db().selectFrom('organization_memberships').select('id').where('user_id', '=', gina).executeTakeFirstOrThrow()).id;
    const of = (msg: string) => logs.lines.filter((l) => l.msg === msg && l.user === gina);
    expect(of('organization membership created through single sign-on')).toEqual([expect.objectContaining({ actor: 'single sign-on', membership: m })]);
    expect(of('team memberships follow the groups claim')).toEqual([expect.objectContaining({ added: ['acme/platform'], removed: [] })]);
  });

  it('refuses a groups claim that is not a list of names, and changes nothing', async () => {
    GROUPS.frank = { platform: true };
    const before = { seats: await seats('frank'), sessions: (await db().selectFrom('web_sessions').selectAll().execute()).length };
    const { page, context } = await signInAs('frank');
    expect(new URL(page.url()).pathname).toBe('/app/signin/oidc/callback');
    expect(await page.locator('main').textContent()).toContain(`the identity provider's "groups" claim must be a list of group names (TERRACE_OIDC_GROUPS_CLAIM)`);
    expect(await seats('frank')).toEqual(before.seats);
    expect((await db().selectFrom('web_sessions').selectAll().execute()).length).toBe(before.sessions);
    await context.close();
  });
});
