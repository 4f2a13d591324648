import type { Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import * as oidc from 'openid-client';
import { rfc3339 } from '../clock.js';
import type { Deps } from '../deps.js';
import { ApiError, badRequest, notFound } from '../http/errors.js';
import { sessionToken, userForSingleSignOn } from '../identity/service.js';
import { syncMappedTeams } from '../teams/group-sync.js';
import { safeNext, secureCookies } from './security.js';
import { openSession } from './sessions.js';

/**
 * OpenID Connect single sign-on: authorization code with PKCE, state and nonce, through
 * openid-client (certified, and it checks the ID token's signature, issuer, audience, expiry and
 * nonce: hand-written, each of those is a way to get signed in as someone else). The state,
 * nonce and verifier travel in a signed, short-lived cookie, so starting a sign-in writes nothing.
 */
const FLOW_COOKIE = 'terrace_oidc';
const FLOW_TTL_MS = 10 * 60_000;
const DISCOVERY_TIMEOUT_SECONDS = 10;
export const CALLBACK_PATH = '/app/signin/oidc/callback';

let discovered: { key: string; config: Promise<oidc.Configuration> } | undefined;

/** The provider's metadata, fetched once (with a timeout) and kept while the settings stay the same; a failure is retried next time. */
function providerConfig(deps: Deps): Promise<oidc.Configuration> {
  const o = deps.config.oidc;
  if (!o) throw notFound('single sign-on is not configured on this server');
  const key = `${o.issuer} ${o.clientId}`;
  if (discovered?.key !== key) {
    const issuer = new URL(o.issuer);
    // Plain HTTP only to a provider on this machine (development, tests); anything else must be HTTPS.
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
    const config = oidc
      .discovery(issuer, o.clientId, o.clientSecret, undefined, { timeout: DISCOVERY_TIMEOUT_SECONDS, ...(loopback ? { execute: [oidc.allowInsecureRequests] } : {}) })
      .catch((err: unknown) => {
        discovered = undefined;
        throw new ApiError(502, 'bad gateway', `the identity provider at ${o.issuer} could not be reached for discovery: ${(err as Error).message}`);
      });
    discovered = { key, config };
  }
  return discovered.config;
}

function callbackUrl(deps: Deps, c: Context): string {
  const base = deps.config.publicUrlConfigured ? deps.config.publicUrl : new URL(c.req.url).origin;
  return `${base}${CALLBACK_PATH}`;
}

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  exp: number;
}

/** Starts a sign-in: remembers the flow in a signed cookie and sends the browser to the provider. */
export async function startSignIn(deps: Deps, c: Context, next: string | undefined): Promise<string> {
  const config = await providerConfig(deps);
  const flow: Flow = {
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    verifier: oidc.randomPKCECodeVerifier(),
    next: safeNext(next),
    exp: deps.clock.now().getTime() + FLOW_TTL_MS,
  };
  const payload = Buffer.from(JSON.stringify(flow)).toString('base64url');
  setCookie(c, FLOW_COOKIE, `${payload}.${deps.secrets.sign('web-oidc-flow', payload)}`, {
    path: '/app/signin/oidc',
    httpOnly: true,
    sameSite: 'Lax',
    secure: secureCookies(deps),
    maxAge: FLOW_TTL_MS / 1000,
  });
  return oidc
    .buildAuthorizationUrl(config, {
      redirect_uri: callbackUrl(deps, c),
      scope: deps.config.oidc!.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    })
    .toString();
}

function readFlow(deps: Deps, c: Context): Flow {
  const raw = getCookie(c, FLOW_COOKIE) ?? '';
  const [payload, signature] = raw.split('.');
  const stale = () => badRequest('this sign-in has expired or was started in another browser: sign in again at /app/signin');
  if (!payload || !signature || raw.length > 2000 || !deps.secrets.verify('web-oidc-flow', payload, signature)) throw stale();
  const flow = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Flow;
  if (flow.exp <= deps.clock.now().getTime()) throw stale();
  return flow;
}

/**
 * The user's groups from the claim TERRACE_OIDC_GROUPS_CLAIM names, or undefined when no mapping
 * is configured. A claim that is absent means no groups (the mapped teams are left); one that is
 * neither a list of strings nor a string is a provider set-up error, refused before anything changes.
 */
function groupsOf(deps: Deps, claims: Record<string, unknown>): string[] | undefined {
  const name = deps.config.oidc!.groupsClaim;
  if (!name || !deps.config.oidc!.groupTeams) return undefined;
  const v = claims[name];
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((g) => typeof g === 'string')) return v as string[];
  throw new ApiError(401, 'unauthorized', `the identity provider's "${name}" claim must be a list of group names (TERRACE_OIDC_GROUPS_CLAIM): ask its administrator to send it as an array of strings`);
}

/** The provider sent the browser back: checks everything, provisions the user, opens a session. */
export async function finishSignIn(deps: Deps, c: Context): Promise<{ sessionId: string; next: string }> {
  const flow = readFlow(deps, c);
  const config = await providerConfig(deps);
  const here = new URL(callbackUrl(deps, c));
  here.search = new URL(c.req.url).search;
  let claims: Record<string, unknown>;
  try {
    const tokens = await oidc.authorizationCodeGrant(config, here, { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true });
    const id = tokens.claims()!;
    // Many providers put only the subject in the ID token; the rest (often the groups) is at the userinfo endpoint.
    const groupsClaim = deps.config.oidc!.groupsClaim;
    const complete = typeof id.email === 'string' && (!groupsClaim || id[groupsClaim] !== undefined);
    claims = complete ? id : { ...(await oidc.fetchUserInfo(config, tokens.access_token, id.sub)), ...id };
  } catch (err) {
    throw new ApiError(401, 'unauthorized', `single sign-on failed: ${(err as Error).message}; sign in again at /app/signin`);
  }
  const email = typeof claims.email === 'string' ? claims.email : '';
  if (!email) throw new ApiError(401, 'unauthorized', 'the identity provider did not say who you are by e-mail: ask for the "email" scope and claim');
  // Users are matched by e-mail: an address the provider says it has not verified names nobody.
  if (claims.email_verified === false) throw new ApiError(401, 'unauthorized', `the identity provider has not verified ${email}: verify it there, then sign in again`);
  const username = typeof claims.preferred_username === 'string' ? claims.preferred_username : email.split('@')[0]!;
  const groups = groupsOf(deps, claims);
  const user = await userForSingleSignOn(deps, { email, username });
  if (groups) await syncMappedTeams(deps, user.id, groups, deps.config.oidc!.groupTeams!);
  const expires = rfc3339(deps.clock.now().getTime() + deps.config.sessionTtlSeconds * 1000);
  const principal = await sessionToken(deps, user, expires);
  setCookie(c, FLOW_COOKIE, '', { path: '/app/signin/oidc', maxAge: 0 });
  return { sessionId: await openSession(deps, principal, { ownsToken: true }), next: flow.next };
}
