import type { Context } from 'hono';
import { rfc3339 } from '../clock.js';
import type { Deps } from '../deps.js';
import { readJson, readText } from '../http/body.js';
import { quoteValue, unprocessable } from '../http/errors.js';
import type { Principal } from '../identity/principal.js';
import { replaceOwnedToken, type TokenOwner, type TokenRow } from '../identity/store.js';

export interface TokenOptions {
  expiredAt: string | null;
  description: string | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The optional body of POST …/authentication-token. go-tfe sends no body (older versions) or
 * {"data":{"type":"","attributes":{"expired-at":…}}} (its options struct has no JSON:API type),
 * so an absent body and an empty or singular type are accepted.
 */
export async function readTokenOptions(c: Context, now: Date): Promise<TokenOptions> {
  const raw = await readText(c);
  if (raw.trim() === '') return { expiredAt: null, description: null };
  const body = await readJson(c);
  if (!isObject(body)) throw unprocessable('the request body must be a JSON object', '');
  if (body.data === undefined) return { expiredAt: null, description: null };
  const data = body.data;
  if (!isObject(data)) throw unprocessable('"data" must be an object', '/data');
  if (data.type !== undefined && !['', 'authentication-tokens', 'authentication-token'].includes(data.type as string)) {
    throw unprocessable(`data.type must be "authentication-tokens", got ${quoteValue(data.type)}`, '/data/type');
  }
  const attrs = data.attributes ?? {};
  if (!isObject(attrs)) throw unprocessable('"data.attributes" must be an object', '/data/attributes');
  let expiredAt: string | null = null;
  const e = attrs['expired-at'];
  if (e !== undefined && e !== null) {
    const t = typeof e === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(e) ? new Date(e) : null;
    if (!t || Number.isNaN(t.getTime())) throw unprocessable('expired-at must be an RFC 3339 time', '/data/attributes/expired-at');
    if (t.getTime() <= now.getTime()) throw unprocessable('expired-at must be in the future', '/data/attributes/expired-at');
    expiredAt = rfc3339(t);
  }
  const d = attrs.description;
  if (d !== undefined && d !== null && (typeof d !== 'string' || d.length > 256)) {
    throw unprocessable('description must be a string of at most 256 characters', '/data/attributes/description');
  }
  return { expiredAt, description: (d as string | null | undefined) ?? null };
}

/**
 * One token per team or organization (the legacy endpoints): a new one replaces the old. Callers
 * authorize first (organizationForTokens, teamForTokens); the owner is what they authorized.
 */
export async function replaceToken(deps: Deps, p: Principal, owner: TokenOwner, opts: TokenOptions): Promise<{ row: TokenRow; token: string }> {
  return replaceOwnedToken(deps.db, owner, {
    description: opts.description,
    createdBy: p.kind === 'user' ? p.user.id : null,
    expiredAt: opts.expiredAt,
    now: rfc3339(deps.clock.now()),
  });
}
