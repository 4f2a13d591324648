import { sql, type Kysely, type Selectable } from 'kysely';
import type { Queryable } from './index.js';
import type { ConfigurationVersionsTable, RegistryModuleVersionsTable, StateVersionsTable } from './schema.js';

/**
 * One-time upload URLs, of every kind, claimed and given back the same way.
 *
 * An upload URL is a token; its row keeps only the token's hash, in a column of its own. A PUT
 * claims the URL by rewriting that column from <hash> to "claimed:<hash>" in one conditional
 * UPDATE: of two PUTs racing for it exactly one wins, and while the body streams every other
 * request finds no URL. What happens next is the same for every kind:
 *   - the upload lands and is accepted: consumeUpload clears the column (the URL is used up);
 *   - the transfer breaks off, or the body is refused: releaseUpload writes <hash> back, so the
 *     URL is exactly as it was and a retry with a good body works until it expires;
 *   - the process dies mid-upload: the claimed marker still holds the hash, so recovery (or a
 *     later release) can restore it instead of losing the URL.
 * A kind whose refusal removes the row (state uploads drop the pending version) simply deletes it.
 */
const KINDS = {
  module: { table: 'registry_module_versions', column: 'upload_token_hash', pendingStatus: true },
  state: { table: 'state_versions', column: 'upload_token_hash', pendingStatus: true },
  // JSON state may follow the state itself, so its row need not be pending.
  'state-json': { table: 'state_versions', column: 'json_upload_token_hash', pendingStatus: false },
  'configuration-version': { table: 'configuration_versions', column: 'upload_token_hash', pendingStatus: true },
} as const;

export type UploadKind = keyof typeof KINDS;

type RowOf<K extends UploadKind> = K extends 'module'
  ? Selectable<RegistryModuleVersionsTable>
  : K extends 'configuration-version'
    ? Selectable<ConfigurationVersionsTable>
    : Selectable<StateVersionsTable>;

const CLAIMED = 'claimed:';

// The kinds live in tables of the same shape for what this file touches; Kysely's
// types cannot follow a table chosen at run time, so the queries are built untyped here, once.
const untyped = (db: Queryable) => db as unknown as Kysely<Record<string, Record<string, unknown>>>;

/**
 * Claims the upload URL whose token hashes to tokenHash if it is unexpired at now (and its row
 * still pending, for kinds that need that). set is written in the same statement (a status, a
 * blob key). Returns the row as it was before the claim, or undefined: unknown, expired, used,
 * or being uploaded right now.
 */
export async function claimUpload<K extends UploadKind>(
  db: Queryable,
  kind: K,
  tokenHash: string,
  now: string,
  set: Record<string, unknown> = {},
): Promise<RowOf<K> | undefined> {
  const { table, column, pendingStatus } = KINDS[kind];
  const before = await untyped(db)
    .selectFrom(table)
    .selectAll()
    .where(column, '=', tokenHash)
    .where('upload_expires_at', '>', now)
    .$if(pendingStatus, (q) => q.where('status', '=', 'pending'))
    .executeTakeFirst();
  if (!before) return undefined;
  const res = await untyped(db)
    .updateTable(table)
    .set({ ...set, [column]: CLAIMED + tokenHash })
    .where('id', '=', before.id as string)
    .where(column, '=', tokenHash)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1 ? (before as RowOf<K>) : undefined;
}

/**
 * Gives a claimed URL back as it was: the broken-off or refused upload changed nothing about
 * it. set restores what the claim changed (a status, a blob key).
 */
export async function releaseUpload(db: Queryable, kind: UploadKind, id: string, tokenHash: string, set: Record<string, unknown> = {}): Promise<boolean> {
  const { table, column } = KINDS[kind];
  const res = await untyped(db)
    .updateTable(table)
    .set({ ...set, [column]: tokenHash })
    .where('id', '=', id)
    .where(column, '=', CLAIMED + tokenHash)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Uses the URL up, with set (the accepted upload's columns) in the same statement; false when the
 * claim was lost meanwhile (the row was deleted or expired away).
 */
export async function consumeUpload(db: Queryable, kind: UploadKind, id: string, tokenHash: string, set: Record<string, unknown> = {}): Promise<boolean> {
  const { table, column } = KINDS[kind];
  const res = await untyped(db)
    .updateTable(table)
    .set({ ...set, [column]: null })
    .where('id', '=', id)
    .where(column, '=', CLAIMED + tokenHash)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** For start-up recovery: the column's value with any claim marker removed (restores the URL). */
export function unclaimedTokenHash(kind: UploadKind) {
  const { column } = KINDS[kind];
  return sql<string | null>`case when ${sql.ref(column)} like ${CLAIMED + '%'} then substr(${sql.ref(column)}, ${CLAIMED.length + 1}) else ${sql.ref(column)} end`;
}
