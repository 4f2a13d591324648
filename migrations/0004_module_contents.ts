import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../src/db/dialect.js';

export async function up(db: Kysely<any>): Promise<void> {
  // What inspection read from a version's archive (root, submodules, examples) and its warnings.
  await db.schema.alterTable('registry_module_versions').addColumn('contents', 'text').execute();
  await db.schema.alterTable('registry_module_versions').addColumn('warnings', 'text', (c) => c.notNull().defaultTo('[]')).execute();

  if (isPostgres(db)) return postgresSearch(db);
  // Ranked search over each module's latest published version. FTS5 is SQLite's; PostgreSQL keeps
  // the same columns in a weighted tsvector (below). The rowid is the module row's rowid.
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

/**
 * The same index on PostgreSQL (added after 0004 shipped on SQLite, whose branch is unchanged):
 * one row per module, its columns already tokenised by src/db/dialect.ts (space-separated words),
 * one tsvector for matching and one per field for ranking with the same weights as bm25's.
 */
async function postgresSearch(db: Kysely<any>): Promise<void> {
  // The organization-rename trigger tokenises a namespace in SQL; organization names are ASCII
  // letters, digits, "-" and "_", where this agrees with the JavaScript tokeniser.
  await sql`create function terrace_search_words(t text) returns text language sql immutable
    as $$ select btrim(regexp_replace(lower(t), '[^a-z0-9]+', ' ', 'g')) $$`.execute(db);
  await sql`create table registry_search (
    module_id text primary key references registry_modules (id) on delete cascade,
    namespace text not null,
    name text not null,
    provider text not null,
    description text not null,
    readme text not null,
    interface text not null,
    -- Matching uses document; ranking weighs each field's own vector, as bm25 weighs columns.
    document tsvector generated always as (to_tsvector('simple',
      namespace || ' ' || name || ' ' || provider || ' ' || description || ' ' || readme || ' ' || interface)) stored,
    namespace_v tsvector generated always as (to_tsvector('simple', namespace)) stored,
    name_v tsvector generated always as (to_tsvector('simple', name)) stored,
    provider_v tsvector generated always as (to_tsvector('simple', provider)) stored,
    description_v tsvector generated always as (to_tsvector('simple', description)) stored,
    readme_v tsvector generated always as (to_tsvector('simple', readme)) stored,
    interface_v tsvector generated always as (to_tsvector('simple', interface)) stored
  )`.execute(db);
  await sql`create index registry_search_document on registry_search using gin (document)`.execute(db);
  await sql`create function terrace_registry_search_org_renamed() returns trigger language plpgsql as $$
    begin
      update registry_search set namespace = terrace_search_words(new.name)
        where module_id in (select id from registry_modules where organization_id = new.id);
      return new;
    end $$`.execute(db);
  await sql`create trigger registry_search_org_renamed after update of name on organizations
    for each row execute function terrace_registry_search_org_renamed()`.execute(db);
}
