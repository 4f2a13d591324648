import { createHash, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../db/index.js';
import type { TokenKind, TokensTable } from '../db/schema.js';
import { newId, randomBase62 } from '../ids.js';

export type TokenRow = TokensTable;

/** A new bearer token: high-entropy, so a plain SHA-256 is a sufficient at-rest hash. */
export function generateToken(): string {
  return `${randomBase62(14)}.terrace.${randomBase62(48)}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export interface NewToken {
  kind: TokenKind;
  userId?: string | null;
  teamId?: string | null;
  organizationId?: string | null;
  description?: string | null;
  createdBy?: string | null;
  expiredAt?: string | null;
  now: string;
}

/** Stores only the hash; the plaintext is returned once to the caller and never kept. */
export async function insertToken(db: Queryable, t: NewToken): Promise<{ row: TokenRow; token: string }> {
  const token = generateToken();
  const row: TokenRow = {
    id: newId('at'),
    kind: t.kind,
    user_id: t.userId ?? null,
    team_id: t.teamId ?? null,
    organization_id: t.organizationId ?? null,
    description: t.description ?? null,
    token_hash: hashToken(token),
    created_by: t.createdBy ?? null,
    created_at: t.now,
    last_used_at: null,
    expired_at: t.expiredAt ?? null,
  };
  await db.insertInto('tokens').values(row).execute();
  return { row, token };
}

/** Constant-time equality of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function tokenExpired(row: Pick<TokenRow, 'expired_at'>, now: Date): boolean {
  return row.expired_at !== null && new Date(row.expired_at).getTime() <= now.getTime();
}
