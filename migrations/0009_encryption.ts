import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One row per sealed blob: its random data key, wrapped by a server key (key_id). Kept here,
  // never in the blob store, so the store (or a copy of the bucket) alone opens nothing. A table
  // of its own rather than columns on the owning rows: every sensitive blob kind, present and to
  // come, is covered by the one blob-store seam without its domain adding columns. The blob's
  // header names its data key id, so a blob overwritten in place never meets the wrong key.
  await db.schema
    .createTable('blob_data_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('wrapped', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blob_data_keys_blob_key').on('blob_data_keys').column('blob_key').execute();
  await db.schema.createIndex('blob_data_keys_key_id').on('blob_data_keys').column('key_id').execute();
}
