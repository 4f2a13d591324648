import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, rfc3339 } from '../../src/clock.js';
import { sessionToken } from '../../src/identity/service.js';
import { openSession } from '../../src/web/sessions.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { WebClient } from '../helpers/web.js';

// The recurring web sweep: expired sessions (and the tokens single sign-on issued for them alone)
// and expired authorization codes go, driven by the injected clock and the real job runner.
const T0 = '2026-06-01T08:00:00.000Z';
const clock = new ManualClock(T0);
let t: TestServer;
let alice: { id: string; username: string; token: string };

beforeAll(async () => {
  // The registry's upkeep and the VCS tag rescan are other recurring jobs: kept out of the window this test counts runs in.
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_SESSION_TTL: '300', TERRACE_WEB_SWEEP_INTERVAL: '60', TERRACE_REGISTRY_UPKEEP_INTERVAL: '86400', TERRACE_VCS_RESCAN_SECONDS: '86400' }, { clock });
  alice = await createUserWithToken(t, 'alice');
});
afterAll(() => t.close());

const at = (seconds: number) => clock.set(new Date(Date.parse(T0) + seconds * 1000));
const db = () => t.running.deps.db;
const sessions = async () => (await db().selectFrom('web_sessions').select(['id_hash', 'token_id', 'expires_at']).execute()).map((r) => r.expires_at).sort();
const codes = async () => (await db().selectFrom('oauth_codes').select('expires_at').execute()).map((r) => r.expires_at).sort();
const iso = (seconds: number) => rfc3339(Date.parse(T0) + seconds * 1000);

/** Approves a terraform login request on the consent page: one oauth_codes row. */
async function grant(w: WebClient): Promise<void> {
  const verifier = randomBytes(32).toString('base64url');
  const q = new URLSearchParams({
    client_id: 'terraform-cli',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    redirect_uri: 'http://localhost:10001/login',
    response_type: 'code',
    state: 's',
  });
  const consent = await w.get(`/app/oauth/authorize?${q}`);
  const fields = Object.fromEntries([...consent.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, '&')]));
  expect((await w.post('/app/oauth/authorize', { ...fields, decision: 'approve' })).status).toBe(303);
}

describe('the web sweep', () => {
  it('removes expired sessions, their single sign-on tokens and expired codes; leaves live ones and pasted tokens', async () => {
    const deps = t.running.deps;
    const user = (await db().selectFrom('users').selectAll().where('id', '=', alice.id).executeTakeFirstOrThrow());
    at(0);
    const pasted = new WebClient(t);
    await pasted.signIn(alice.token);
    const ssoPrincipal = await sessionToken(deps, user, iso(300));
    await openSession(deps, ssoPrincipal, { ownsToken: true });
    at(200);
    await grant(pasted);
    at(250);
    const fresh = new WebClient(t);
    await fresh.signIn(alice.token);
    await grant(fresh);
    // Nothing expired yet, so sign-ins and grants removed nothing.
    expect(await sessions()).toEqual([iso(300), iso(300), iso(550)]);
    expect(await codes()).toEqual([iso(320), iso(370)]);

    at(330);
    expect(await t.running.jobs.runDue()).toBe(1);
    expect(await sessions()).toEqual([iso(550)]);
    expect(await codes()).toEqual([iso(370)]);
    // The token issued for the single sign-on session went with it; the pasted one did not.
    expect(await db().selectFrom('tokens').select('id').where('id', '=', ssoPrincipal.tokenId).executeTakeFirst()).toBeUndefined();
    expect((await t.api('GET', '/api/v2/account/details', { token: alice.token })).status).toBe(200);
    // The live session still works; the expired one is sent to sign in.
    expect((await fresh.get('/app/settings/tokens')).status).toBe(200);
    expect((await pasted.get('/app/settings/tokens')).status).toBe(302);

    // One standing row, put back to run one interval later; nothing else is due.
    const rows = await db().selectFrom('jobs').selectAll().where('kind', '=', 'web.sweep').execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.run_at).toBe(iso(390));
    expect(rows[0]!.last_error).toBeNull();
    expect(await t.running.jobs.runDue()).toBe(0);
  });

  it('runs again an interval later and removes what has expired since', async () => {
    at(600);
    expect(await t.running.jobs.runDue()).toBe(1);
    expect(await sessions()).toEqual([]);
    expect(await codes()).toEqual([]);
    expect((await t.api('GET', '/api/v2/account/details', { token: alice.token })).status).toBe(200);
  });
});
