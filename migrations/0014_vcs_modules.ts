import type { Kysely } from 'kysely';

// Registry modules published from a VCS repository, and the webhook deliveries already taken.
// Portable types only (text, integer); times are RFC 3339 UTC text, booleans 0/1.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('vcs_modules')
    // One VCS connection per registry module; it goes with the module.
    .addColumn('module_id', 'text', (c) => c.primaryKey().references('registry_modules.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    // Null once the OAuth token (or its client) is deleted: the module is then setup_failed.
    .addColumn('oauth_token_id', 'text')
    .addColumn('oauth_client_id', 'text')
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('display_identifier', 'text', (c) => c.notNull())
    // '' is tag-based publishing; a branch name is branch-based.
    .addColumn('branch', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('tag_prefix', 'text')
    .addColumn('source_directory', 'text')
    .addColumn('ingress_submodules', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('service_provider', 'text', (c) => c.notNull())
    .addColumn('repository_http_url', 'text', (c) => c.notNull())
    // The webhook: its own uuid (the URL) and secret (sealed with the server key).
    .addColumn('webhook_uuid', 'text', (c) => c.notNull().unique())
    .addColumn('webhook_secret_sealed', 'text', (c) => c.notNull())
    // The provider's id for the hook it registered; null until (or unless) registration worked.
    .addColumn('webhook_hook_id', 'text')
    .addColumn('webhook_error', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('vcs_modules_oauth_token').on('vcs_modules').column('oauth_token_id').execute();

  // A delivery id seen once is not processed again (providers redeliver with the same id).
  await db.schema
    .createTable('vcs_webhook_deliveries')
    .addColumn('module_id', 'text', (c) => c.notNull().references('registry_modules.id').onDelete('cascade'))
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('vcs_webhook_deliveries_pk', ['module_id', 'delivery_id'])
    .execute();
  await db.schema.createIndex('vcs_webhook_deliveries_received').on('vcs_webhook_deliveries').column('received_at').execute();
}
