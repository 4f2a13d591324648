import type { Context, MiddlewareHandler } from 'hono';
import type { Deps } from '../deps.js';
import { resolvePrincipal, type Principal } from '../identity/principal.js';
import { isTaskAccessToken } from '../identity/tokens.js';
import { unauthorized } from './errors.js';

export type AppEnv = {
  Variables: {
    principal: Principal | null;
    /** A run task access token presented as the bearer (only run task routes accept it). */
    taskToken: string | null;
    requestId: string;
  };
};

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token an Authorization header presents: null when it presents none, undefined when it is not "Bearer <token>". */
export function presentedToken(header: string | undefined): string | null | undefined {
  if (header === undefined || header.trim() === '') return null;
  return BEARER.exec(header)?.[1];
}

/**
 * Resolves the bearer token, if any, into c.var.principal. A token that is presented but
 * malformed, unknown or expired is 401 everywhere, even on endpoints that allow anonymous reads.
 */
export function authenticate(deps: Deps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = presentedToken(c.req.header('authorization'));
    c.set('taskToken', null);
    if (token === null) {
      c.set('principal', null);
      return next();
    }
    if (token === undefined) throw unauthorized('the Authorization header must be "Bearer <token>"');
    // Checked by the run task routes against the one task result it was issued for; every other
    // route sees no principal and answers 401.
    if (isTaskAccessToken(token)) {
      c.set('principal', null);
      c.set('taskToken', token);
      return next();
    }
    const principal = await resolvePrincipal(deps, token);
    if (!principal) throw unauthorized('the API token is invalid or has expired');
    c.set('principal', principal);
    return next();
  };
}

/** The caller, or 401 when no token was presented. */
export function requirePrincipal(c: Context<AppEnv>): Principal {
  const p = c.get('principal');
  if (!p) throw unauthorized();
  return p;
}
