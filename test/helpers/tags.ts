import type { TestServer } from './server.js';

type Table = 'projects' | 'tags' | 'workspace_tags' | 'tag_bindings' | 'workspaces';

/** Rows of the tag and project tables: "nothing changed" is equality of two snapshots (values included). */
export async function tagSnapshot(t: TestServer): Promise<Record<Table, unknown[]>> {
  const db = t.running.deps.db;
  return {
    projects: await db.selectFrom('projects').selectAll().orderBy('id').execute(),
    tags: await db.selectFrom('tags').selectAll().orderBy('id').execute(),
    workspace_tags: await db.selectFrom('workspace_tags').selectAll().orderBy('workspace_id').orderBy('tag_id').execute(),
    tag_bindings: await db.selectFrom('tag_bindings').selectAll().orderBy('id').execute(),
    workspaces: await db.selectFrom('workspaces').select(['id', 'name', 'project_id', 'updated_at']).orderBy('id').execute(),
  };
}

export const tagRefs = (...names: string[]) => ({ data: names.map((name) => ({ type: 'tags', attributes: { name } })) });
export const bindingBody = (b: Record<string, string>) => ({ data: Object.entries(b).map(([key, value]) => ({ type: 'tag-bindings', attributes: { key, value } })) });
