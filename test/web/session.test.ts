import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createTeam } from '../helpers/organizations.js';
import { createOrganization } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { csrfOf, textOf, WebClient } from '../helpers/web.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

let t: TestServer;
let alice: { id: string; username: string; token: string };

const sessions = async () => t.running.deps.db.selectFrom('web_sessions').selectAll().execute();
const tokenCount = async () => Number((await t.running.deps.db.selectFrom('tokens').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_SESSION_TTL: '3600' });
  alice = await createUserWithToken(t, 'alice');
});
afterAll(() => t.close());

describe('security headers', () => {
  it('are on pages, assets, redirects and error pages alike', async () => {
    const w = new WebClient(t);
    for (const path of ['/app/signin', '/app/assets/terrace.css', '/app/assets/terrace.js', '/app/modules', '/app/oauth/authorize', '/']) {
      const res = await w.get(path);
      expect(res.headers.get('content-security-policy'), path).toBe(CSP);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
    }
  });

  it('serve the stylesheet and script from Terrace itself, cacheable by ETag', async () => {
    const w = new WebClient(t);
    const css = await w.get('/app/assets/terrace.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    const again = await w.get('/app/assets/terrace.css', { 'If-None-Match': css.headers.get('etag')! });
    expect(again.status).toBe(304);
    const page = await w.get('/app/signin');
    // Nothing in a page may come from elsewhere or be inline.
    expect(page.text).not.toMatch(/https?:\/\//);
    expect(page.text).not.toMatch(/<script>|<style|style="| on[a-z]+="/);
  });

  it('send the root and the signed-out to sign-in, and back after it', async () => {
    const w = new WebClient(t);
    expect((await w.get('/')).location).toBe('/app');
    const res = await w.get('/app/organizations?x=1');
    expect(res.status).toBe(302);
    expect(res.location).toBe('/app/signin?next=%2Fapp%2Forganizations%3Fx%3D1');
    const form = await w.get(res.location!);
    expect(form.text).toContain('name="next" value="/app/organizations?x=1"');
    const done = await w.post('/app/signin', { csrf: csrfOf(form.text), token: alice.token, next: '/app/organizations?x=1' });
    expect(done.status).toBe(303);
    expect(done.location).toBe('/app/organizations?x=1');
  });

  it('never send anyone to another host after sign-in', async () => {
    for (const next of ['https://evil.example/', '//evil.example/app', '/\\evil.example', 'javascript:alert(1)']) {
      const w = new WebClient(t);
      const form = await w.get(`/app/signin?next=${encodeURIComponent(next)}`);
      const done = await w.post('/app/signin', { csrf: csrfOf(form.text), token: alice.token, next });
      expect(done.location, next).toBe('/app');
    }
  });

  it('answers unknown pages with an HTML 404', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const res = await w.get('/app/no-such-page');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('text/html; charset=UTF-8');
    expect(textOf(res.text)).toContain('no endpoint at GET /app/no-such-page');
  });
});

describe('sign-in with a token', () => {
  it('opens a session: an HttpOnly, SameSite=Lax cookie (not Secure over plain HTTP) whose id is stored only hashed', async () => {
    const before = (await sessions()).length;
    const w = new WebClient(t);
    const form = await w.get('/app/signin');
    const res = await w.post('/app/signin', { csrf: csrfOf(form.text), token: alice.token, next: '/app' });
    expect(res.status).toBe(303);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('terrace_session='))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).not.toMatch(/; Secure/);
    expect(cookie).toMatch(/; Max-Age=3600/);
    const id = w.cookies.get('terrace_session')!;
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = await sessions();
    expect(rows.length).toBe(before + 1);
    const row = rows.find((r) => r.id_hash === createHash('sha256').update(id).digest('hex'))!;
    expect(row).toBeDefined();
    expect(rows.some((r) => r.id_hash === id)).toBe(false);
    expect(row.user_id).toBe(alice.id);
    expect(row.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const page = await w.get('/app/organizations');
    expect(page.status).toBe(200);
    expect(textOf(page.text)).toContain('Signed in as alice');
  });

  it('refuses a bad token, a team token and an empty one with the reason, and opens nothing', async () => {
    await createOrganization(t, 'signin-org', alice.token);
    const team = await createTeam(t, alice.token, 'signin-org', 'readers');
    const teamToken = await t.api('POST', `/api/v2/teams/${team.id}/authentication-token`, { token: alice.token });
    expect(teamToken.status).toBe(201);
    const before = (await sessions()).length;
    for (const [token, message] of [
      ['nx0000000000000.terrace.nx', 'that API token is invalid or has expired'],
      [teamToken.json.data.attributes.token, 'team and organization tokens cannot sign in to the web UI: paste a user token'],
      ['', 'that API token is invalid or has expired'],
    ] as const) {
      const w = new WebClient(t);
      const form = await w.get('/app/signin');
      const res = await w.post('/app/signin', { csrf: csrfOf(form.text), token });
      expect(res.status).toBe(401);
      expect(textOf(res.text)).toContain(message);
      expect(w.cookies.has('terrace_session')).toBe(false);
    }
    expect((await sessions()).length).toBe(before);
  });

  it('refuses a post without the form cookie, with a forged CSRF field, from another origin, or not as a form', async () => {
    const before = (await sessions()).length;
    const w = new WebClient(t);
    const form = await w.get('/app/signin');
    const csrf = csrfOf(form.text);
    const cases: [() => Promise<{ status: number; text: string }>, number, string][] = [
      [() => new WebClient(t).post('/app/signin', { csrf, token: alice.token }), 403, 'this form has expired or was not made for your session'],
      [() => w.post('/app/signin', { csrf: `${csrf.slice(0, -2)}xx`, token: alice.token }), 403, 'this form has expired or was not made for your session'],
      [() => w.post('/app/signin', { token: alice.token }), 403, 'this form has expired or was not made for your session'],
      [() => w.post('/app/signin', { csrf, token: alice.token }, { Origin: 'https://evil.example' }), 403, 'this form was posted from another site'],
      [() => w.post('/app/signin', { csrf, token: alice.token }, { Origin: '', 'Sec-Fetch-Site': 'cross-site' }), 403, 'this form was posted from another site'],
      [() => w.post('/app/signin', { csrf, token: alice.token }, { 'Content-Type': 'application/json' }), 415, 'send the form as application/x-www-form-urlencoded'],
      [() => w.post('/app/signin', { csrf, token: 'x'.repeat(20_000) }), 413, 'a form may be at most 16384 bytes'],
    ];
    for (const [send, status, message] of cases) {
      const res = await send();
      expect(res.status, message).toBe(status);
      expect(textOf(res.text)).toContain(message);
    }
    expect((await sessions()).length).toBe(before);
  });
});

describe('sessions', () => {
  it('expire on the server: after the TTL the cookie signs in nothing and forms are refused', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const csrf = await w.csrf();
    (t.clock as ManualClock).advance(3600_000 - 1000);
    expect((await w.get('/app/settings/tokens')).status).toBe(200);
    (t.clock as ManualClock).advance(1000);
    const page = await w.get('/app/settings/tokens');
    expect(page.status).toBe(302);
    expect(page.location).toBe('/app/signin?next=%2Fapp%2Fsettings%2Ftokens');
    const before = await tokenCount();
    const post = await w.post('/app/settings/tokens', { csrf, description: 'late' });
    expect(post.status).toBe(401);
    expect(textOf(post.text)).toContain('you are not signed in, or your session has expired: sign in again at /app/signin');
    expect(await tokenCount()).toBe(before);
  });

  it('end at sign-out, which needs the CSRF token', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const id = w.cookies.get('terrace_session')!;
    const hash = createHash('sha256').update(id).digest('hex');
    const refused = await w.post('/app/signout', { csrf: 'forged' });
    expect(refused.status).toBe(403);
    expect((await sessions()).some((s) => s.id_hash === hash)).toBe(true);
    const other = new WebClient(t);
    await other.signIn(alice.token);
    // Another session's CSRF token is not this one's.
    expect((await w.post('/app/signout', { csrf: await other.csrf() })).status).toBe(403);
    const res = await w.post('/app/signout', { csrf: await w.csrf() });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/app/signin');
    expect(w.cookies.has('terrace_session')).toBe(false);
    expect((await sessions()).some((s) => s.id_hash === hash)).toBe(false);
    // The old cookie, replayed, is nobody.
    const replay = await fetch(`${t.url}/app/organizations`, { headers: { Cookie: `terrace_session=${id}` }, redirect: 'manual' });
    expect(replay.status).toBe(302);
    // The pasted token itself still works: signing out of the UI does not revoke it.
    expect((await t.api('GET', '/api/v2/account/details', { token: alice.token })).status).toBe(200);
  });

  it('end when the token they act as is revoked', async () => {
    const bob = await createUserWithToken(t, 'bob-revoked');
    const w = new WebClient(t);
    await w.signIn(bob.token);
    expect((await w.get('/app/organizations')).status).toBe(200);
    const me = await t.api('GET', `/api/v2/users/${bob.id}/authentication-tokens`, { token: bob.token });
    const del = await t.api('DELETE', `/api/v2/authentication-tokens/${me.json.data[0].id}`, { token: bob.token });
    expect(del.status).toBe(204);
    expect((await w.get('/app/organizations')).status).toBe(302);
  });

  it('are Secure cookies when Terrace is served over HTTPS', async () => {
    const s = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_PUBLIC_URL: 'https://registry.example.com' });
    try {
      const w = new WebClient(s);
      const form = await w.get('/app/signin');
      expect(form.headers.getSetCookie()[0]).toMatch(/; Secure/);
      // The browser's origin is the public URL's behind a TLS proxy.
      const res = await w.post('/app/signin', { csrf: csrfOf(form.text), token: s.adminToken }, { Origin: 'https://registry.example.com' });
      expect(res.status).toBe(303);
      expect(res.headers.getSetCookie().find((c) => c.startsWith('terrace_session='))).toMatch(/; Secure/);
    } finally {
      await s.close();
    }
  });
});
