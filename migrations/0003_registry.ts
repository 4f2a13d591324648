import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A module is one (namespace, name, provider); its namespace is its organization's name, so
  // renaming an organization moves its modules with it.
  await db.schema
    .createTable('registry_modules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lower', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    // The versions array of the protocol's /versions answer, rendered once per publish or delete.
    .addColumn('versions_json', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('latest_version', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('registry_modules_unique', ['organization_id', 'name_lower', 'provider'])
    .execute();

  await db.schema
    .createTable('registry_module_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('module_id', 'text', (c) => c.notNull().references('registry_modules.id').onDelete('cascade'))
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('description', 'text')
    .addColumn('commit_sha', 'text')
    .addColumn('blob_key', 'text')
    .addColumn('size', 'integer')
    .addColumn('sha256', 'text')
    .addColumn('upload_token_hash', 'text', (c) => c.unique())
    .addColumn('upload_expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('published_at', 'text')
    .addUniqueConstraint('registry_module_versions_unique', ['module_id', 'version'])
    .execute();
  // Only unfinished uploads are ever looked up by status (start-up recovery). A plain status index
  // tempts SQLite's planner into scanning every published version of the registry instead of
  // using the module's own rows.
  await db.schema
    .createIndex('registry_module_versions_unfinished')
    .on('registry_module_versions')
    .column('status')
    .where(sql.ref('status'), 'in', ['pending', 'uploading'])
    .execute();

  // One row per module and UTC day, so week/month/year sums are exact and increments are atomic.
  await db.schema
    .createTable('registry_module_downloads')
    .addColumn('module_id', 'text', (c) => c.notNull().references('registry_modules.id').onDelete('cascade'))
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('registry_module_downloads_pk', ['module_id', 'day'])
    .execute();
}
