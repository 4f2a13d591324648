import { createHash, timingSafeEqual } from 'node:crypto';
import { hotQuery, type Queryable } from '../db/index.js';
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

const findTokenQuery = hotQuery((db) => db.selectFrom('tokens').selectAll().where('token_hash', '=', ''));

/** Looks a presented token up by its hash and confirms the match in constant time. */
export async function findToken(db: Queryable, presented: string): Promise<TokenRow | undefined> {
  const hash = hashToken(presented);
  const [row] = await findTokenQuery(db, [hash]);
  if (!row) return undefined;
  const a = Buffer.from(row.token_hash, 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b) ? row : undefined;
}

export function tokenExpired(row: TokenRow, now: Date): boolean {
  return row.expired_at !== null && new Date(row.expired_at).getTime() <= now.getTime();
}
