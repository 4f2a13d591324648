import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { csrfOf, textOf, WebClient } from '../helpers/web.js';

let t: TestServer;
let alice: { id: string; username: string; token: string };

const REDIRECT = 'http://localhost:10003/login';

/** What terraform login sends to the authorization endpoint (internal/command/login.go, via x/oauth2). */
function authorizeQuery(verifier: string, overrides: Record<string, string> = {}): string {
  return new URLSearchParams({
    client_id: 'terraform-cli',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    redirect_uri: REDIRECT,
    response_type: 'code',
    state: 'st-123',
    ...overrides,
  }).toString();
}

async function token(fields: Record<string, string>) {
  const res = await fetch(`${t.url}/app/oauth/token`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
}

/** Signs in, approves on the consent page, and returns the code Terraform's listener would receive. */
async function approve(w: WebClient, verifier: string): Promise<string> {
  const consent = await w.get(`/app/oauth/authorize?${authorizeQuery(verifier)}`);
  expect(consent.status).toBe(200);
  const fields = Object.fromEntries([...consent.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, '&')]));
  const res = await w.post('/app/oauth/authorize', { ...fields, decision: 'approve' });
  expect(res.status).toBe(303);
  const back = new URL(res.location!);
  expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
  expect(back.searchParams.get('state')).toBe('st-123');
  return back.searchParams.get('code')!;
}

const codes = async () => t.running.deps.db.selectFrom('oauth_codes').selectAll().execute();

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  alice = await createUserWithToken(t, 'alice');
});
afterAll(() => t.close());

describe('terraform login (login.v1)', () => {
  it('sends a signed-out user through sign-in and back to the consent page', async () => {
    const w = new WebClient(t);
    const verifier = randomBytes(32).toString('base64url');
    const res = await w.get(`/app/oauth/authorize?${authorizeQuery(verifier)}`);
    expect(res.status).toBe(302);
    const signin = new URL(res.location!, t.url);
    expect(signin.pathname).toBe('/app/signin');
    const next = signin.searchParams.get('next')!;
    expect(next).toBe(`/app/oauth/authorize?${authorizeQuery(verifier)}`);
    const form = await w.get(`${signin.pathname}${signin.search}`);
    const done = await w.post('/app/signin', { csrf: csrfOf(form.text), token: alice.token, next });
    expect(done.location).toBe(next);
    const consent = await w.get(next);
    expect(consent.status).toBe(200);
    expect(textOf(consent.text)).toContain('asks for a new API token that acts as alice');
    // The approval redirects to Terraform's listener: this page's policy lets the form go there, and only there.
    expect(consent.headers.get('content-security-policy')).toContain("form-action 'self' http://localhost:10003;");
  });

  it('issues a working token for an approved code and its verifier, labelled with the client and date', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const verifier = randomBytes(32).toString('base64url');
    const code = await approve(w, verifier);
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await codes()).some((r) => r.code_hash === code)).toBe(false);
    const res = await token({ grant_type: 'authorization_code', code, client_id: 'terraform-cli', redirect_uri: REDIRECT, code_verifier: verifier });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json.token_type).toBe('bearer');
    expect(typeof res.json.access_token).toBe('string');
    const me = await t.api('GET', '/api/v2/account/details', { token: res.json.access_token as string });
    expect(me.status).toBe(200);
    expect(me.json.data.id).toBe(alice.id);
    const list = await t.api('GET', `/api/v2/users/${alice.id}/authentication-tokens`, { token: alice.token });
    const today = t.clock.now().toISOString().slice(0, 10);
    expect(list.json.data.map((d: any) => d.attributes.description)).toContain(`terraform-cli (terraform login) ${today}`);
    // A code is good once.
    const again = await token({ grant_type: 'authorization_code', code, client_id: 'terraform-cli', redirect_uri: REDIRECT, code_verifier: verifier });
    expect(again.status).toBe(400);
    expect(again.json.error).toBe('invalid_grant');
  });

  it('refuses a wrong verifier, redirect URI or client, and spends the code doing so', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    for (const wrong of [{ code_verifier: randomBytes(32).toString('base64url') }, { redirect_uri: 'http://localhost:10004/login' }, { client_id: 'other' }]) {
      const verifier = randomBytes(32).toString('base64url');
      const code = await approve(w, verifier);
      const right = { grant_type: 'authorization_code', code, client_id: 'terraform-cli', redirect_uri: REDIRECT, code_verifier: verifier };
      const res = await token({ ...right, ...wrong });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('run terraform login again') });
      expect((await token(right)).json.error).toBe('invalid_grant');
    }
  });

  it('refuses an expired code', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const verifier = randomBytes(32).toString('base64url');
    const code = await approve(w, verifier);
    (t.clock as ManualClock).advance(121_000);
    const res = await token({ grant_type: 'authorization_code', code, client_id: 'terraform-cli', redirect_uri: REDIRECT, code_verifier: verifier });
    expect(res.json.error).toBe('invalid_grant');
  });

  it('answers malformed token requests with OAuth errors', async () => {
    const cases: [Record<string, string>, string, string][] = [
      [{ grant_type: 'password' }, 'unsupported_grant_type', 'grant_type must be "authorization_code"'],
      [{ grant_type: 'authorization_code', code_verifier: 'x'.repeat(43) }, 'invalid_request', 'code is required'],
      [{ grant_type: 'authorization_code', code: 'abc', code_verifier: 'short' }, 'invalid_request', 'code_verifier is required'],
    ];
    for (const [fields, error, description] of cases) {
      const res = await token(fields);
      expect(res.status).toBe(400);
      expect(res.json.error).toBe(error);
      expect(res.json.error_description).toContain(description);
    }
  });

  it('never redirects to anything but a loopback port Terraform listens on, and says why', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const verifier = randomBytes(32).toString('base64url');
    for (const [overrides, message] of [
      [{ redirect_uri: 'https://evil.example/login' }, 'redirect_uri must be http://localhost:<port>/…'],
      [{ redirect_uri: 'http://localhost:9999/login' }, 'redirect_uri must be http://localhost:<port>/…'],
      [{ redirect_uri: 'http://evil@localhost:10000/login' }, 'redirect_uri must be http://localhost:<port>/…'],
      [{ client_id: 'someone' }, 'unknown client_id'],
      [{ code_challenge_method: 'plain' }, 'code_challenge_method must be "S256"'],
      [{ response_type: 'token' }, 'response_type must be "code"'],
    ] as [Record<string, string>, string][]) {
      const res = await w.get(`/app/oauth/authorize?${authorizeQuery(verifier, overrides)}`);
      expect(res.status).toBe(400);
      expect(res.location).toBeNull();
      expect(textOf(res.text)).toContain(message);
    }
  });

  it('redirects a denial as access_denied and grants nothing; the approval needs the CSRF token', async () => {
    const w = new WebClient(t);
    await w.signIn(alice.token);
    const verifier = randomBytes(32).toString('base64url');
    const before = (await codes()).length;
    const q = Object.fromEntries(new URLSearchParams(authorizeQuery(verifier)));
    const forged = await w.post('/app/oauth/authorize', { ...q, decision: 'approve' });
    expect(forged.status).toBe(403);
    const denied = await w.post('/app/oauth/authorize', { ...q, csrf: await w.csrf(), decision: 'deny' });
    expect(denied.status).toBe(303);
    expect(denied.location).toBe(`${REDIRECT}?error=access_denied&state=st-123`);
    expect((await codes()).length).toBe(before);
  });
});
