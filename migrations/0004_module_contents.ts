import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // What inspection read from a version's archive (root, submodules, examples) and its warnings.
  await db.schema.alterTable('registry_module_versions').addColumn('contents', 'text').execute();
  await db.schema.alterTable('registry_module_versions').addColumn('warnings', 'text', (c) => c.notNull().defaultTo('[]')).execute();

  // Ranked search over each module's latest published version. FTS5 is SQLite's; a PostgreSQL
  // store will keep the same columns in a tsvector. The rowid is the module row's rowid.
  await sql`create virtual table registry_search using fts5(namespace, name, provider, description, readme, interface, tokenize = 'unicode61 remove_diacritics 2')`.execute(db);
  // Kept in step by the database itself, so cascades (an organization destroyed) and renames
  // cannot leave stale entries.
  await sql`create trigger registry_search_module_deleted after delete on registry_modules begin
    delete from registry_search where rowid = old.rowid;
  end`.execute(db);
  await sql`create trigger registry_search_org_renamed after update of name on organizations begin
    update registry_search set namespace = new.name
      where rowid in (select rowid from registry_modules where organization_id = new.id);
  end`.execute(db);
}
