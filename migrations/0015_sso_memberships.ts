import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Organization memberships that single sign-on's group mapping created (TERRACE_OIDC_GROUP_TEAMS):
  // such a membership ends at the sign-in that leaves its user in no team of the organization.
  // Memberships made by invitation are never in here and never end that way.
  await db.schema
    .createTable('sso_memberships')
    .addColumn('membership_id', 'text', (c) => c.primaryKey().references('organization_memberships.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
