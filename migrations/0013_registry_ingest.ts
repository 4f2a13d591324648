import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An upload being received holds a lease that its request renews while bytes arrive; one whose
  // lease lapsed belongs to a process that died, and the registry upkeep gives its URL back.
  await db.schema.alterTable('registry_module_versions').addColumn('upload_lease_until', 'text').execute();
  // Unfinished versions now include those whose bytes are stored and being ingested (and, for
  // VCS publishing, cloned): the upkeep looks them up by status.
  await db.schema.dropIndex('registry_module_versions_unfinished').execute();
  await db.schema
    .createIndex('registry_module_versions_unfinished')
    .on('registry_module_versions')
    .column('status')
    .where(sql.ref('status'), 'in', ['pending', 'uploading', 'cloning', 'ingesting'])
    .execute();
}
