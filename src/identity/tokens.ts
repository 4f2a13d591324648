import { createHash, timingSafeEqual } from 'node:crypto';
import type { TokensTable } from '../db/schema.js';
import { randomBase62 } from '../ids.js';

/** A new bearer token: high-entropy, so a plain SHA-256 is a sufficient at-rest hash. */
export function generateToken(): string {
  return `${randomBase62(14)}.terrace.${randomBase62(48)}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time equality of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function tokenExpired(row: Pick<TokensTable, 'expired_at'>, now: Date): boolean {
  return row.expired_at !== null && new Date(row.expired_at).getTime() <= now.getTime();
}
