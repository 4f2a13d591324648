import { position } from '../db/dialect.js';
import { sql } from 'kysely';
import type { DataKeyRow, DataKeyStore } from '../blobs/sealed.js';
import { rfc3339 } from '../clock.js';
import type { Clock } from '../clock.js';
import type { Db, Queryable } from '../db/index.js';
import type { ColumnRef } from './registry.js';

/** The SQL of wrapped data keys (the sealed blob store's DataKeyStore) and of the upkeep. */
export function dataKeyStore(db: Db, clock: Clock): DataKeyStore {
  return {
    async insert(row) {
      await db.insertInto('blob_data_keys').values({ ...row, created_at: rfc3339(clock.now()) }).execute();
    },
    forBlob(blobKey) {
      return db.selectFrom('blob_data_keys').select(['id', 'blob_key', 'key_id', 'wrapped']).where('blob_key', '=', blobKey).execute();
    },
    async deleteForBlob(blobKey, keepId) {
      await db
        .deleteFrom('blob_data_keys')
        .where('blob_key', '=', blobKey)
        .$if(keepId !== undefined, (q) => q.where('id', '!=', keepId!))
        .execute();
    },
    async remove(id) {
      await db.deleteFrom('blob_data_keys').where('id', '=', id).execute();
    },
  };
}

/** Data keys wrapped by any key but current, after the cursor, in id order. */
export function dataKeysNotUnder(db: Queryable, currentKeyId: string, after: string, limit: number): Promise<DataKeyRow[]> {
  return db
    .selectFrom('blob_data_keys')
    .select(['id', 'blob_key', 'key_id', 'wrapped'])
    .where('key_id', '!=', currentKeyId)
    .where('id', '>', after)
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Re-wraps one data key, unless it changed since it was read. */
export async function rewrapDataKey(db: Queryable, row: DataKeyRow, keyId: string, wrapped: string): Promise<void> {
  await db.updateTable('blob_data_keys').set({ key_id: keyId, wrapped }).where('id', '=', row.id).where('wrapped', '=', row.wrapped).execute();
}

export async function dataKeyCounts(db: Queryable): Promise<Record<string, number>> {
  const rows = await db.selectFrom('blob_data_keys').select(['key_id', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('key_id').execute();
  return Object.fromEntries(rows.map((r) => [r.key_id, Number(r.n)]));
}

const T = (ref: ColumnRef) => ({ table: sql.table(ref.table), id: sql.ref(ref.idColumn), col: sql.ref(ref.column) });

/** Values from secrets.encrypt() made under any key but current: "v1." ones and "v2.<other>.". */
export async function sealedValuesNotUnder(db: Queryable, ref: ColumnRef, currentKeyId: string, after: string, limit: number) {
  const { table, id, col } = T(ref);
  const current = `v2.${currentKeyId}.`;
  const r = await sql<{ id: string; value: string }>`
    select ${id} as id, ${col} as value from ${table}
    where ${id} > ${after} and (${col} like 'v1.%' or (${col} like 'v2.%' and substr(${col}, 1, ${current.length}) != ${current}))
    order by ${id} limit ${limit}`.execute(db);
  return r.rows;
}

/** Replaces one sealed value, unless it changed since it was read. */
export async function replaceSealedValue(db: Queryable, ref: ColumnRef, rowId: string, old: string, value: string): Promise<void> {
  const { table, id, col } = T(ref);
  await sql`update ${table} set ${col} = ${value} where ${id} = ${rowId} and ${col} = ${old}`.execute(db);
}

export async function sealedValueCounts(db: Queryable, ref: ColumnRef): Promise<Record<string, number>> {
  const { table, col } = T(ref);
  const r = await sql<{ key_id: string; n: number }>`
    select case when ${col} like 'v1.%' then 'default' else substr(${col}, 4, ${position(db, sql`substr(${col}, 4)`, '.')} - 1) end as key_id, count(*) as n
    from ${table} where ${col} like 'v1.%' or ${col} like 'v2.%' group by 1`.execute(db);
  return Object.fromEntries(r.rows.map((x) => [x.key_id, Number(x.n)]));
}

/** Rows pointing at a blob with no data key on record (stored before encryption), after the cursor. */
export async function plaintextBlobRows(db: Queryable, ref: ColumnRef, after: string, limit: number) {
  const { table, id, col } = T(ref);
  const r = await sql<{ id: string; key: string }>`
    select ${id} as id, ${col} as key from ${table} t
    where ${id} > ${after} and ${col} is not null
      and not exists (select 1 from blob_data_keys k where k.blob_key = t.${col})
    order by ${id} limit ${limit}`.execute(db);
  return r.rows;
}

export async function plaintextBlobCount(db: Queryable, ref: ColumnRef): Promise<number> {
  const { table, col } = T(ref);
  const r = await sql<{ n: number }>`
    select count(*) as n from ${table} t
    where ${col} is not null and not exists (select 1 from blob_data_keys k where k.blob_key = t.${col})`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

/** Points the row at the sealed copy, unless the row moved on meanwhile; true if it did. */
export async function moveBlobColumn(db: Queryable, ref: ColumnRef, rowId: string, from: string, to: string): Promise<boolean> {
  const { table, id, col } = T(ref);
  const r = await sql`update ${table} set ${col} = ${to} where ${id} = ${rowId} and ${col} = ${from}`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/** The upkeep's one recurring job row (its schedule, lease and saved progress). */
export function recurringJobRow(db: Queryable, kind: string) {
  return db.selectFrom('jobs').select(['run_at', 'locked_until', 'payload', 'last_error', 'attempts']).where('unique_key', '=', kind).executeTakeFirst();
}
