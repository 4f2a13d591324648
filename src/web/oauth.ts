import { createHash } from 'node:crypto';
import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError, badRequest } from '../http/errors.js';
import { principalForTokenId, principalLabel } from '../identity/principal.js';
import { createUserToken } from '../identity/service.js';
import { hashToken } from '../identity/tokens.js';
import { LOGIN_CLIENT_ID, LOGIN_PORTS } from '../registry/discovery.js';
import { newSecret, type WebSession } from './sessions.js';
import { deleteExpiredOauthCodes, insertOauthCode, takeOauthCode } from './store.js';

/**
 * Terrace as the OAuth 2.0 authorization server `terraform login` expects (login.v1): the
 * authorization code grant with PKCE (S256), for one public client, redirecting only to the
 * loopback ports Terraform listens on.
 */
/** Terraform exchanges its code at once; a code that waits longer than this is refused. */
const CODE_TTL_MS = 120_000;

export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  state: string;
  codeChallenge: string;
}

/** Checks an authorization request; a bad redirect URI is never redirected to (the page says why). */
export function parseAuthorizationRequest(get: (name: string) => string | null | undefined): AuthorizationRequest {
  const clientId = get('client_id') ?? '';
  if (clientId !== LOGIN_CLIENT_ID) throw badRequest(`unknown client_id: this server's only OAuth client is "${LOGIN_CLIENT_ID}" (terraform login)`);
  const redirectUri = get('redirect_uri') ?? '';
  if (!loopbackRedirect(redirectUri)) {
    throw badRequest(`redirect_uri must be http://localhost:<port>/… with a port from ${LOGIN_PORTS[0]} to ${LOGIN_PORTS[1]}, as terraform login sends it`);
  }
  if (get('response_type') !== 'code') throw badRequest('response_type must be "code"');
  if (get('code_challenge_method') !== 'S256') throw badRequest('code_challenge_method must be "S256" (PKCE is required)');
  const codeChallenge = get('code_challenge') ?? '';
  if (!/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) throw badRequest('code_challenge must be the base64url SHA-256 of the code verifier (43 characters)');
  const state = get('state') ?? '';
  if (state.length > 512) throw badRequest('state must be at most 512 characters');
  return { clientId, redirectUri, state, codeChallenge };
}

function loopbackRedirect(raw: string): boolean {
  if (raw.length > 512) return false;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return false;
  }
  const port = Number(u.port);
  return (
    u.protocol === 'http:' &&
    ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname) &&
    u.username === '' &&
    u.password === '' &&
    port >= LOGIN_PORTS[0] &&
    port <= LOGIN_PORTS[1]
  );
}

/** Where the browser goes back to Terraform with the outcome. */
export function redirectWith(req: AuthorizationRequest, params: Record<string, string>): string {
  const u = new URL(req.redirectUri);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  if (req.state) u.searchParams.set('state', req.state);
  return u.toString();
}

/** The user approved: a one-time code bound to their session's token, the redirect URI and the challenge. */
export async function grantCode(deps: Deps, session: WebSession, req: AuthorizationRequest): Promise<string> {
  const code = newSecret();
  const now = deps.clock.now();
  await inTransaction(deps.db, async (tx) => {
    await deleteExpiredOauthCodes(tx, rfc3339(now));
    await insertOauthCode(tx, {
      code_hash: hashToken(code),
      token_id: session.principal.tokenId,
      client_id: req.clientId,
      redirect_uri: req.redirectUri,
      code_challenge: req.codeChallenge,
      created_at: rfc3339(now),
      expires_at: rfc3339(now.getTime() + CODE_TTL_MS),
    });
  });
  deps.logger.info({ actor: principalLabel(session.principal), client: req.clientId }, 'login authorization granted');
  return code;
}

const oauth = (error: string, description: string, status = 400) => new ApiError(status, error, description);

/** The token endpoint: exchanges a code, once, for a new user token labelled with the client and date. */
export async function exchangeCode(deps: Deps, form: URLSearchParams): Promise<{ access_token: string; token_type: 'bearer' }> {
  if (form.get('grant_type') !== 'authorization_code') throw oauth('unsupported_grant_type', 'grant_type must be "authorization_code"');
  const code = form.get('code') ?? '';
  const verifier = form.get('code_verifier') ?? '';
  if (!code || code.length > 200) throw oauth('invalid_request', 'code is required');
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) throw oauth('invalid_request', 'code_verifier is required: 43 to 128 unreserved characters (PKCE)');
  // Taken (deleted) before it is checked: a code is spent by its first use, right or wrong.
  const row = await takeOauthCode(deps.db, hashToken(code));
  const now = deps.clock.now();
  const invalid = () => oauth('invalid_grant', 'the authorization code is unknown, used, expired, or was issued for another redirect_uri, client or verifier: run terraform login again');
  if (!row || new Date(row.expires_at).getTime() <= now.getTime()) throw invalid();
  if (form.get('client_id') !== row.client_id || form.get('redirect_uri') !== row.redirect_uri) throw invalid();
  if (createHash('sha256').update(verifier).digest('base64url') !== row.code_challenge) throw invalid();
  const principal = await principalForTokenId(deps, row.token_id);
  if (!principal || principal.kind !== 'user') throw invalid();
  const { token } = await createUserToken(deps, principal, principal.user.id, {
    description: `${row.client_id} (terraform login) ${rfc3339(now).slice(0, 10)}`,
    expiredAt: null,
  });
  return { access_token: token, token_type: 'bearer' };
}
