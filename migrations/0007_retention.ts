import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A job that must exist at most once (a recurring sweep) carries a key; the unique index makes
  // "create it unless it exists" safe when several processes start at once. Other jobs leave it
  // null, and nulls never collide.
  await db.schema.alterTable('jobs').addColumn('unique_key', 'text').execute();
  await db.schema.createIndex('jobs_unique_key').unique().on('jobs').column('unique_key').execute();

  // Blobs whose rows are already gone, written in the transaction that deleted the rows and
  // removed once the blob store confirms each delete: a crash in between leaves a record to
  // finish from, never a row pointing at a missing blob nor a blob nobody will delete.
  await db.schema
    .createTable('blob_deletions')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
