import type { Kysely } from 'kysely';

// VCS connections (HCP's OAuth clients and their one OAuth token each) and the VCS event log.
// Portable types only; times are RFC 3339 UTC text, booleans 0/1. Secrets are sealed with the
// server key (secrets.encrypt) and registered for key rotation in src/domains.ts.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('service_provider', 'text', (c) => c.notNull())
    .addColumn('http_url', 'text', (c) => c.notNull())
    .addColumn('api_url', 'text', (c) => c.notNull())
    // OAuth-app key (returned) and secret (write-only, sealed); unused by PAT clients.
    .addColumn('key', 'text')
    .addColumn('secret_sealed', 'text')
    .addColumn('rsa_public_key', 'text')
    .addColumn('organization_scoped', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_clients_organization').on('oauth_clients').columns(['organization_id', 'created_at']).execute();

  await db.schema
    .createTable('oauth_client_projects')
    .addColumn('oauth_client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('oauth_client_projects_pk', ['oauth_client_id', 'project_id'])
    .execute();

  // One token per client (the tfe provider errors on more): the unique client id enforces it.
  await db.schema
    .createTable('oauth_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('oauth_client_id', 'text', (c) => c.notNull().unique().references('oauth_clients.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    // The personal access token, sealed; rotated in place so the ot- id stays.
    .addColumn('token_sealed', 'text', (c) => c.notNull())
    .addColumn('ssh_key_sealed', 'text')
    .addColumn('service_provider_user', 'text')
    .addColumn('uid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_tokens_organization').on('oauth_tokens').columns(['organization_id', 'created_at']).execute();

  // The log outlives the connection it names: no foreign key on the client and token ids.
  await db.schema
    .createTable('vcs_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('suggested_action', 'text')
    .addColumn('oauth_client_id', 'text')
    .addColumn('oauth_token_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('vcs_events_organization_created').on('vcs_events').columns(['organization_id', 'created_at']).execute();
  await db.schema.createIndex('vcs_events_created').on('vcs_events').column('created_at').execute();
}
