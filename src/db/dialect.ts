import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * The one place where SQLite and PostgreSQL differ. Domains write portable Kysely queries (text
 * times, 0/1 integers, `on conflict`, conditional updates checked by affected rows); the few
 * things the two engines spell differently are asked of this file, by the connection in hand.
 */
export type DialectName = 'sqlite' | 'postgres';

// Any Kysely instance or transaction: migrations see Kysely<any>, stores see Queryable.
type AnyDb = Pick<Kysely<any>, 'getExecutor'>;

export function dialectOf(db: AnyDb): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

export const isPostgres = (db: AnyDb): boolean => dialectOf(db) === 'postgres';

/**
 * Locks the rows a select finds, skipping rows another transaction holds (PostgreSQL's
 * FOR UPDATE SKIP LOCKED), so runners on several instances claim different rows instead of
 * queueing on one. SQLite has one writer and no row locks: the select is left as it is.
 */
export function skipLocked<Q extends { forUpdate(): Q; skipLocked(): Q }>(db: AnyDb, qb: Q): Q {
  return isPostgres(db) ? qb.forUpdate().skipLocked() : qb;
}

/** The 1-based position of needle in haystack, 0 when absent (SQLite instr, PostgreSQL strpos). */
export function position(db: AnyDb, haystack: RawBuilder<unknown>, needle: RawBuilder<unknown> | string): RawBuilder<number> {
  return isPostgres(db) ? sql<number>`strpos(${haystack}, ${needle})` : sql<number>`instr(${haystack}, ${needle})`;
}

/**
 * Rows passed as one JSON parameter and read back as a table (SQLite json_each, PostgreSQL
 * jsonb_to_recordset), in the order given: a batch of any size is one short statement with one
 * parameter, which neither engine nor Kysely has to compile per row. Each row is an array of
 * values in the order of columns; the result has those columns (text or bigint) under alias.
 */
export function jsonRows(db: AnyDb, rows: readonly (readonly (string | number)[])[], columns: readonly { name: string; type: 'text' | 'bigint' }[], alias: string): RawBuilder<unknown> {
  const json = JSON.stringify(rows);
  if (isPostgres(db)) {
    // jsonb_to_recordset reads objects; an array of arrays is spread into named columns here.
    const fields = sql.join(columns.map((c, i) => sql`(e.value ->> ${sql.raw(String(i))})::${sql.raw(c.type)} as ${sql.ref(c.name)}`));
    return sql`(select ${fields}, e.ordinality as position from jsonb_array_elements(${json}::jsonb) with ordinality as e(value, ordinality)) as ${sql.ref(alias)}`;
  }
  const fields = sql.join(columns.map((c, i) => sql`json_extract(e.value, ${`$[${i}]`}) as ${sql.ref(c.name)}`));
  return sql`(select ${fields}, e.key as position from json_each(${json}) as e) as ${sql.ref(alias)}`;
}

// ---------------------------------------------------------------------------------------------
// Full-text search over registry modules.
//
// SQLite keeps an FTS5 table (migration 0004) whose rowid is the module row's rowid, ranked by
// bm25 with per-column weights. PostgreSQL keeps one row per module (migration 0004's PostgreSQL
// branch) with a tsvector per field, ranked by ts_rank with the same weights. Both tokenise the
// same way: words are runs of letters and digits, lower-cased, diacritics removed. On PostgreSQL
// the tokenising happens here, in JavaScript, and the 'simple' configuration only splits on the
// spaces it is given, so both stores index and match the same words.
// ---------------------------------------------------------------------------------------------

/** What one module contributes to the search index (its latest published version). */
export interface SearchDocument {
  namespace: string;
  name: string;
  provider: string;
  description: string;
  readme: string;
  /** Input and output names, space-separated. */
  interface: string;
}

// A tsvector holds at most 1 MiB; a README beyond this adds nothing to ranking anyway.
const MAX_INDEXED_CHARS = 200_000;

/**
 * The search tokeniser as FTS5's unicode61 (remove_diacritics 2) applies it: runs of letters and
 * digits, lower-cased, with the combining diacritical marks removed; any other mark separates.
 */
export function searchWords(text: string): string[] {
  return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

const words = (text: string) => searchWords(text.slice(0, MAX_INDEXED_CHARS)).join(' ');

/** Removes a module from the index (before re-adding it, or when it has no published version). */
export async function removeSearchDocument(db: Kysely<any>, moduleId: string): Promise<void> {
  if (isPostgres(db)) {
    await sql`delete from registry_search where module_id = ${moduleId}`.execute(db);
  } else {
    await sql`delete from registry_search where rowid = (select rowid from registry_modules where id = ${moduleId})`.execute(db);
  }
}

/** Adds a module to the index; the namespace is read from its organization in the same statement. */
export async function putSearchDocument(db: Kysely<any>, moduleId: string, doc: Omit<SearchDocument, 'namespace'>): Promise<void> {
  if (isPostgres(db)) {
    await sql`insert into registry_search (module_id, namespace, name, provider, description, readme, interface)
      select m.id, terrace_search_words(o.name), ${words(doc.name)}, ${words(doc.provider)}, ${words(doc.description)}, ${words(doc.readme)}, ${words(doc.interface)}
      from registry_modules m join organizations o on o.id = m.organization_id where m.id = ${moduleId}`.execute(db);
    return;
  }
  await sql`insert into registry_search (rowid, namespace, name, provider, description, readme, interface)
    select m.rowid, o.name, ${doc.name}, ${doc.provider}, ${doc.description}, ${doc.readme}, ${doc.interface}
    from registry_modules m join organizations o on o.id = m.organization_id where m.id = ${moduleId}`.execute(db);
}

/**
 * A derived table (module_id, score) of the modules matching every word of q as a prefix, in any
 * indexed field; a higher score ranks first. Weights, best first: name, provider, namespace,
 * description, input and output names, README. undefined when q has no words.
 */
export function searchMatches(db: AnyDb, q: string): RawBuilder<{ module_key: string | number; score: number }> | undefined {
  if (isPostgres(db)) {
    const terms = searchWords(q).slice(0, 16);
    if (terms.length === 0) return undefined;
    // Cast, not to_tsquery: the words are lexemes already, and a cast takes them verbatim.
    const tsquery = terms.map((w) => `'${w}':*`).join(' & ');
    // The weights and the length normalisation (1: divided by 1 + log of the field's length)
    // follow bm25's on SQLite: namespace 3, name 10, provider 4, description 2, README 0.5,
    // input and output names 1.
    return sql`(select module_id as module_key,
        3.0 * ts_rank(namespace_v, query, 1) + 10.0 * ts_rank(name_v, query, 1) + 4.0 * ts_rank(provider_v, query, 1)
        + 2.0 * ts_rank(description_v, query, 1) + 0.5 * ts_rank(readme_v, query, 1) + 1.0 * ts_rank(interface_v, query, 1) as score
      from registry_search, cast(${tsquery} as tsquery) query where document @@ query)`;
  }
  // FTS5 tokenises the quoted words itself; quotes and operators in q are only separators here.
  const terms = q.toLowerCase().match(/[\p{L}\p{N}]+/gu)?.slice(0, 16);
  if (!terms) return undefined;
  const match = terms.map((w) => `"${w}"*`).join(' ');
  // Column weights: namespace, name, provider, description, readme, input/output names.
  // The index's rowid is the module row's rowid: the caller joins on it (searchJoinColumn), which
  // costs a third less than mapping rowids to ids here and joining the modules again on id.
  return sql`(select rowid as module_key, -bm25(registry_search, 3.0, 10.0, 4.0, 2.0, 0.5, 1.0) as score
    from registry_search where registry_search match ${match})`;
}

/** The registry_modules column searchMatches' module_key matches. */
export function searchJoinColumn(db: AnyDb): 'registry_modules.id' | 'registry_modules.rowid' {
  return isPostgres(db) ? 'registry_modules.id' : 'registry_modules.rowid';
}
