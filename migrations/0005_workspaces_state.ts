import type { Kysely } from 'kysely';

// Portable types only (text, integer); times are RFC 3339 UTC text, booleans 0/1 integers.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lower', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('working_directory', 'text', (c) => c.notNull().defaultTo(''))
    // null: follow the organization's default-execution-mode (and default agent pool).
    .addColumn('execution_mode', 'text')
    .addColumn('agent_pool_id', 'text')
    .addColumn('auto_apply', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('terraform_version', 'text', (c) => c.notNull().defaultTo('latest'))
    // JSON vcs-repo object, or null without a VCS connection.
    .addColumn('vcs_repo', 'text')
    // JSON of the plain HCP settings Terrace stores but does not act on (see workspaces/settings.ts).
    .addColumn('attributes', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_by_kind', 'text')
    .addColumn('locked_by_id', 'text')
    .addColumn('lock_reason', 'text')
    // The last finalized state version; set in the transaction that finalizes it.
    .addColumn('current_state_version_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('workspaces_org_name_unique', ['organization_id', 'name_lower'])
    .execute();

  await db.schema
    .createTable('state_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('serial', 'integer', (c) => c.notNull())
    .addColumn('lineage', 'text')
    .addColumn('md5', 'text', (c) => c.notNull())
    .addColumn('force', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('size', 'integer')
    .addColumn('state_format_version', 'integer')
    .addColumn('terraform_version', 'text')
    .addColumn('resources_processed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('resource_count', 'integer')
    .addColumn('blob_key', 'text')
    .addColumn('json_state_blob_key', 'text')
    .addColumn('json_outputs_blob_key', 'text')
    // One-time upload URLs (upload-URL variant): hashes only; cleared when used.
    .addColumn('upload_token_hash', 'text')
    .addColumn('json_upload_token_hash', 'text')
    .addColumn('upload_expires_at', 'text')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('finalized_at', 'text')
    .execute();
  await db.schema.createIndex('state_versions_workspace').on('state_versions').columns(['workspace_id', 'created_at']).execute();
  await db.schema.createIndex('state_versions_upload_token').on('state_versions').column('upload_token_hash').execute();
  await db.schema.createIndex('state_versions_json_upload_token').on('state_versions').column('json_upload_token_hash').execute();

  await db.schema
    .createTable('state_version_outputs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('state_version_id', 'text', (c) => c.notNull().references('state_versions.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('sensitive', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    // cty type JSON, verbatim from the state (or json-state-outputs).
    .addColumn('detailed_type', 'text', (c) => c.notNull())
    // JSON text; for sensitive outputs, that JSON encrypted with the server key.
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('state_version_outputs_sv')
    .on('state_version_outputs')
    .columns(['state_version_id', 'position'])
    .execute();

  await db.schema.createIndex('jobs_kind').on('jobs').columns(['kind', 'run_at']).execute();
}
