import type { Kysely } from 'kysely';

// Portable types only (text, integer); times are RFC 3339 UTC text, booleans 0/1 integers.
export async function up(db: Kysely<any>): Promise<void> {
  // Agent pools exist so an organization's default-execution-mode "agent" can name one.
  await db.schema
    .createTable('agent_pools')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lower', 'text', (c) => c.notNull())
    .addColumn('organization_scoped', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('agent_pools_org_name_unique', ['organization_id', 'name_lower'])
    .execute();

  // producer_id shares its private modules with organization_id (the consumer). Either side's
  // deletion removes the link.
  await db.schema
    .createTable('organization_module_producers')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('producer_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('organization_module_producers_pk', ['organization_id', 'producer_id'])
    .execute();
  await db.schema
    .createIndex('organization_module_producers_producer')
    .on('organization_module_producers')
    .column('producer_id')
    .execute();

  // At most one explicit policy per organization; without one the installation default applies.
  await db.schema
    .createTable('data_retention_policies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().unique().references('organizations.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('delete_older_than_n_days', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema.createIndex('team_members_user').on('team_members').column('user_id').execute();
  await db.schema.createIndex('organization_memberships_user').on('organization_memberships').column('user_id').execute();
}
