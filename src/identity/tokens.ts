import crypto, { createHash, timingSafeEqual } from 'node:crypto';
import type { TokensTable } from '../db/schema.js';
import { randomBase62 } from '../ids.js';

/** A new bearer token: high-entropy, so a plain SHA-256 is a sufficient at-rest hash. */
export function generateToken(): string {
  return `${randomBase62(14)}.terrace.${randomBase62(48)}`;
}

/**
 * A run task access token: handed to an integrator in one task request, valid only for that task
 * result's callback and its run's reads. Its own shape, so authentication can tell it from an API
 * token without a lookup (see http/auth.ts).
 */
export function generateTaskAccessToken(): string {
  return `${randomBase62(14)}.runtask.${randomBase62(48)}`;
}

export function isTaskAccessToken(token: string): boolean {
  return /^[A-Za-z0-9]{14}\.runtask\.[A-Za-z0-9]{48}$/.test(token);
}

export function hashToken(token: string): string {
  // One native call where node has it (20.12+): half the cost of a Hash object on every request.
  return oneShotHash ? oneShotHash('sha256', token, 'hex') : createHash('sha256').update(token, 'utf8').digest('hex');
}

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** Constant-time equality of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function tokenExpired(row: Pick<TokensTable, 'expired_at'>, now: Date): boolean {
  return row.expired_at !== null && new Date(row.expired_at).getTime() <= now.getTime();
}
