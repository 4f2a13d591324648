import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';

// The rule migrated tag names must meet (the API's rule; see workspaces/tag-rules.ts).
const TAG_NAME_RE = /^[A-Za-z0-9:_-]{1,255}$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

// A migration must not change when src/ does, so it carries its own id generator.
function id(prefix: string): string {
  let out = '';
  while (out.length < 16) for (const b of randomBytes(32)) if (b < 248 && out.length < 16) out += ALPHABET[b % 62];
  return `${prefix}-${out}`;
}

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lower', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    // 1 for the organization's "Default Project": it holds workspaces created without a project and cannot be deleted.
    .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('projects_org_name_unique', ['organization_id', 'name_lower'])
    .execute();

  // Single-string workspace tags ("tag-names"): one row per organization and name, shared by workspaces.
  await db.schema
    .createTable('tags')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('tags_org_name_unique', ['organization_id', 'name'])
    .execute();
  await db.schema
    .createTable('workspace_tags')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('tag_id', 'text', (c) => c.notNull().references('tags.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('workspace_tags_pk', ['workspace_id', 'tag_id'])
    .execute();
  await db.schema.createIndex('workspace_tags_tag').on('workspace_tags').column('tag_id').execute();

  // Key/value tags: bound to a workspace or to a project (whose workspaces inherit them), one value per key.
  await db.schema
    .createTable('tag_bindings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tag_bindings_workspace_key').unique().on('tag_bindings').columns(['workspace_id', 'key']).execute();
  await db.schema.createIndex('tag_bindings_project_key').unique().on('tag_bindings').columns(['project_id', 'key']).execute();
  await db.schema.createIndex('tag_bindings_key_value').on('tag_bindings').columns(['key', 'value']).execute();

  // Every workspace belongs to exactly one project (null only between this column and the backfill below).
  await db.schema.alterTable('workspaces').addColumn('project_id', 'text', (c) => c.references('projects.id')).execute();
  await db.schema.createIndex('workspaces_project').on('workspaces').column('project_id').execute();

  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const orgs = await db.selectFrom('organizations').select('id').execute();
  for (const org of orgs) {
    const projectId = id('prj');
    await db
      .insertInto('projects')
      .values({ id: projectId, organization_id: org.id, name: 'Default Project', name_lower: 'default project', description: '', is_default: 1, created_at: now, updated_at: now })
      .execute();
    await db.updateTable('workspaces').set({ project_id: projectId }).where('organization_id', '=', org.id).execute();
  }

  // tag-names used to be stored inert in the attributes JSON: move them to the tag tables.
  const workspaces = await db.selectFrom('workspaces').select(['id', 'organization_id', 'attributes']).execute();
  const tagIds = new Map<string, string>();
  for (const ws of workspaces) {
    let attrs: Record<string, unknown>;
    try {
      attrs = JSON.parse(ws.attributes) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof attrs !== 'object' || attrs === null || !('tag-names' in attrs)) continue;
    const names = Array.isArray(attrs['tag-names']) ? attrs['tag-names'] : [];
    for (const name of new Set(names.filter((n): n is string => typeof n === 'string' && TAG_NAME_RE.test(n)))) {
      const k = `${ws.organization_id}\n${name}`;
      let tagId = tagIds.get(k);
      if (!tagId) {
        tagId = id('tag');
        tagIds.set(k, tagId);
        await db.insertInto('tags').values({ id: tagId, organization_id: ws.organization_id, name, created_at: now }).execute();
      }
      await db.insertInto('workspace_tags').values({ workspace_id: ws.id, tag_id: tagId, created_at: now }).execute();
    }
    delete attrs['tag-names'];
    await db.updateTable('workspaces').set({ attributes: JSON.stringify(attrs) }).where('id', '=', ws.id).execute();
  }
}
