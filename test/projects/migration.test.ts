import fs from 'node:fs';
import path from 'node:path';
import { Migrator } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { migrate, openSqlite } from '../../src/db/index.js';
import { tempDir } from '../helpers/server.js';

// Migration 0008 on a store that already has organizations and workspaces: each organization gets
// its default project holding its workspaces, and tag-names kept as inert settings become tags.
describe('migration 0008 on existing data', () => {
  const dir = tempDir('terrace-mig-');
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates default projects, assigns workspaces and moves tag-names into tags', async () => {
    const store = openSqlite(path.join(dir, 'terrace.db'));
    const db = store.db as any;
    try {
      const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
      const { error } = await migrator.migrateTo('0007_retention');
      expect(error).toBeUndefined();
      const now = '2026-01-02T03:04:05Z';
      for (const [id, name] of [['org-a', 'alpha'], ['org-b', 'beta']]) {
        await db.insertInto('organizations').values({ id, name, name_lower: name, email: `${name}@example.com`, created_at: now }).execute();
      }
      const ws = (id: string, org: string, attributes: string) => ({ id, organization_id: org, name: id, name_lower: id, attributes, created_at: now, updated_at: now });
      await db
        .insertInto('workspaces')
        .values([
          ws('ws-1', 'org-a', JSON.stringify({ 'tag-names': ['web', 'has space', 'web', 'prod'], 'queue-all-runs': true })),
          ws('ws-2', 'org-a', JSON.stringify({ 'tag-names': ['web'] })),
          ws('ws-3', 'org-b', 'not json'),
        ])
        .execute();

      expect(await migrate(store.db)).toContain('0008_workspace_tags_projects');

      const projects = await db.selectFrom('projects').selectAll().orderBy('organization_id').execute();
      expect(projects.map((p: any) => [p.organization_id, p.name, p.is_default])).toEqual([
        ['org-a', 'Default Project', 1],
        ['org-b', 'Default Project', 1],
      ]);
      const byOrg = Object.fromEntries(projects.map((p: any) => [p.organization_id, p.id]));
      const workspaces = await db.selectFrom('workspaces').select(['id', 'project_id', 'attributes']).orderBy('id').execute();
      expect(workspaces.map((w: any) => w.project_id)).toEqual([byOrg['org-a'], byOrg['org-a'], byOrg['org-b']]);
      expect(JSON.parse(workspaces[0].attributes)).toEqual({ 'queue-all-runs': true });
      const tags = await db
        .selectFrom('workspace_tags')
        .innerJoin('tags', 'tags.id', 'workspace_tags.tag_id')
        .select(['workspace_tags.workspace_id', 'tags.name', 'tags.organization_id'])
        .orderBy('workspace_tags.workspace_id')
        .orderBy('tags.name')
        .execute();
      // The name that breaks the tag rule is dropped; "web" is one tag shared by both workspaces.
      expect(tags).toEqual([
        { workspace_id: 'ws-1', name: 'prod', organization_id: 'org-a' },
        { workspace_id: 'ws-1', name: 'web', organization_id: 'org-a' },
        { workspace_id: 'ws-2', name: 'web', organization_id: 'org-a' },
      ]);
      expect(await db.selectFrom('tags').selectAll().execute()).toHaveLength(2);
    } finally {
      await store.close();
    }
  });
});
