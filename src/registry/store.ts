import { sql } from 'kysely';
import { hotQuery, type Queryable } from '../db/index.js';
import { jsonRows, putSearchDocument, removeSearchDocument, searchJoinColumn, searchMatches } from '../db/dialect.js';
import { unclaimedTokenHash } from '../db/upload-claims.js';
import type { RegistryModulesTable, RegistryModuleVersionsTable } from '../db/schema.js';
import { emptyContents, type ModuleContents } from './inspect/index.js';
import type { ModuleInfo } from './inspect/model.js';
import { latestOf, sortVersionsDesc } from './names.js';

export type ModuleRow = RegistryModulesTable;
export type VersionRow = RegistryModuleVersionsTable;
export type ModuleWithOrg = ModuleRow & { namespace: string };

const moduleColumns = [
  'registry_modules.id',
  'registry_modules.organization_id',
  'registry_modules.name',
  'registry_modules.name_lower',
  'registry_modules.provider',
  'registry_modules.description',
  'registry_modules.versions_json',
  'registry_modules.latest_version',
  'registry_modules.created_at',
  'registry_modules.updated_at',
  'organizations.name as namespace',
] as const;

const listColumns = moduleColumns.filter((c) => c !== 'registry_modules.versions_json') as Exclude<
  (typeof moduleColumns)[number],
  'registry_modules.versions_json'
>[];

function modulesWithOrg(db: Queryable) {
  return db.selectFrom('registry_modules').innerJoin('organizations', 'organizations.id', 'registry_modules.organization_id');
}

const findModuleQuery = hotQuery((db) =>
  modulesWithOrg(db)
    .select(moduleColumns)
    .where('organizations.name_lower', '=', '')
    .where('registry_modules.name_lower', '=', '')
    .where('registry_modules.provider', '=', ''),
);

/** Namespace and name match case-insensitively; the provider is always lower case. */
export async function findModule(db: Queryable, namespace: string, name: string, provider: string): Promise<ModuleWithOrg | undefined> {
  return (await findModuleQuery(db, [namespace.toLowerCase(), name.toLowerCase(), provider]))[0];
}

export async function findModuleById(db: Queryable, id: string): Promise<ModuleWithOrg | undefined> {
  return modulesWithOrg(db).select(moduleColumns).where('registry_modules.id', '=', id).executeTakeFirst();
}

export async function findModulesByName(db: Queryable, namespace: string, name: string): Promise<ModuleWithOrg[]> {
  return modulesWithOrg(db)
    .select(moduleColumns)
    .where('organizations.name_lower', '=', namespace.toLowerCase())
    .where('registry_modules.name_lower', '=', name.toLowerCase())
    .orderBy('registry_modules.provider')
    .execute();
}

export interface ModuleListFilter {
  /** Organizations whose modules the caller may read; 'all' for no restriction. */
  organizationIds: string[] | 'all';
  organizationId?: string;
  namespace?: string;
  name?: string;
  provider?: string;
  /** Case-insensitive substring of the module name (the HCP API's q). */
  nameContains?: string;
  /**
   * Ranked full-text search: words (letters and digits) separated by anything else; every word
   * must match, each as a prefix, in any indexed field. Quotes, operators and punctuation are
   * separators, so no input can make the query fail. Results come best first.
   */
  q?: string;
  /** Only modules with at least one published version. */
  publishedOnly: boolean;
  offset: number;
  limit: number;
}

/** A page of modules plus whether more exist (fetches limit + 1). */
export async function listModules(db: Queryable, f: ModuleListFilter): Promise<{ rows: ModuleWithOrg[]; hasMore: boolean; total?: number }> {
  if (f.organizationIds !== 'all' && f.organizationIds.length === 0) return { rows: [], hasMore: false };
  // Lists never render versions_json: leaving it out keeps kilobytes per matching row out of the sort.
  let qb = modulesWithOrg(db).select([...listColumns, sql<string>`'[]'`.as('versions_json')]);
  if (f.organizationIds !== 'all') qb = qb.where('registry_modules.organization_id', 'in', f.organizationIds);
  if (f.organizationId) qb = qb.where('registry_modules.organization_id', '=', f.organizationId);
  if (f.namespace) qb = qb.where('organizations.name_lower', '=', f.namespace.toLowerCase());
  if (f.name) qb = qb.where('registry_modules.name_lower', '=', f.name.toLowerCase());
  if (f.provider) qb = qb.where('registry_modules.provider', '=', f.provider.toLowerCase());
  if (f.nameContains) {
    const like = `%${f.nameContains.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
    qb = qb.where(sql<boolean>`registry_modules.name_lower like ${like} escape '\\'`);
  }
  if (f.publishedOnly) qb = qb.where('registry_modules.latest_version', 'is not', null);
  if (f.q !== undefined) {
    const matches = searchMatches(db, f.q);
    if (!matches) return { rows: [], hasMore: false };
    qb = qb
      .innerJoin(matches.as('s'), (join) => join.onRef(sql.ref('s.module_key') as never, '=', sql.ref(searchJoinColumn(db)) as never))
      .orderBy(sql`registry_modules.name_lower = ${f.q.trim().toLowerCase()}`, 'desc')
      .orderBy(sql`s.score`, 'desc') as unknown as typeof qb;
  }
  const rows = await qb
    .orderBy('organizations.name_lower')
    .orderBy('registry_modules.name_lower')
    .orderBy('registry_modules.provider')
    .limit(f.limit + 1)
    .offset(f.offset)
    .execute();
  return { rows: rows.slice(0, f.limit), hasMore: rows.length > f.limit };
}

export async function countModules(db: Queryable, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('registry_modules')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The columns a download needs: the inspected contents can weigh kilobytes. */
export async function getVersionForDownload(db: Queryable, moduleId: string, version: string) {
  return db
    .selectFrom('registry_module_versions')
    .select(['id', 'module_id', 'version', 'status', 'blob_key', 'sha256'])
    .where('module_id', '=', moduleId)
    .where('version', '=', version)
    .executeTakeFirst();
}

/** What a signed archive URL serves: the version's blob, if it is published. */
export async function archiveBlob(db: Queryable, versionId: string) {
  return db.selectFrom('registry_module_versions').select(['blob_key', 'status']).where('id', '=', versionId).executeTakeFirst();
}

export async function getVersion(db: Queryable, moduleId: string, version: string): Promise<VersionRow | undefined> {
  return db.selectFrom('registry_module_versions').selectAll().where('module_id', '=', moduleId).where('version', '=', version).executeTakeFirst();
}

/** A module's versions (of one status, when given): every column, or only the columns given. */
export function listVersions(db: Queryable, moduleId: string, status?: VersionRow['status']): Promise<VersionRow[]>;
export function listVersions<C extends keyof VersionRow & string>(db: Queryable, moduleId: string, status: VersionRow['status'] | undefined, columns: readonly C[]): Promise<Pick<VersionRow, C>[]>;
export async function listVersions(db: Queryable, moduleId: string, status?: VersionRow['status'], columns?: readonly (keyof VersionRow & string)[]): Promise<Partial<VersionRow>[]> {
  const base = db.selectFrom('registry_module_versions');
  let qb = (columns ? base.select(columns) : base.selectAll()).where('module_id', '=', moduleId);
  if (status) qb = qb.where('status', '=', status);
  return qb.execute();
}

/** What a version listing shows of each version: the inspected contents weigh kilobytes per row. */
export const LISTING_COLUMNS = ['version', 'description', 'published_at'] as const;
export type PublishedListing = Pick<VersionRow, (typeof LISTING_COLUMNS)[number]>;

/** The columns of a version its detail shows; each one's change moves the registry generation (migrations/0017). */
export type DetailVersion = Pick<VersionRow, 'version' | 'description' | 'published_at' | 'contents'>;

/** Versions of many modules at once, keyed by module id (for detail and list rendering). */
export type LatestVersion = Pick<VersionRow, 'module_id' | 'version' | 'description' | 'published_at'>;

export async function latestVersionRows(db: Queryable, modules: ModuleRow[]): Promise<Map<string, LatestVersion>> {
  const wanted = modules.filter((m) => m.latest_version !== null);
  if (wanted.length === 0) return new Map();
  // Only what a list entry shows: the inspected contents weigh kilobytes per row.
  const rows = await db
    .selectFrom('registry_module_versions')
    .select(['module_id', 'version', 'description', 'published_at'])
    .where((eb) => eb.or(wanted.map((m) => eb.and([eb('module_id', '=', m.id), eb('version', '=', m.latest_version!)]))))
    .execute();
  return new Map(rows.map((r) => [r.module_id, r]));
}

export function parseContents(v: Pick<VersionRow, 'contents'>): ModuleContents {
  if (!v.contents) return emptyContents();
  try {
    return JSON.parse(v.contents) as ModuleContents;
  } catch {
    return emptyContents();
  }
}

const providerRefs = (m: ModuleInfo) => m.provider_dependencies.map((p) => ({ name: p.name, namespace: p.namespace, source: p.source, version: p.version }));
const moduleRefs = (m: ModuleInfo) => m.dependencies.map((d) => ({ name: d.name, source: d.source, version: d.version }));

/** One element of the protocol's /versions array. */
function versionEntry(v: VersionRow) {
  const c = parseContents(v);
  return {
    version: v.version,
    root: { providers: providerRefs(c.root), dependencies: moduleRefs(c.root) },
    submodules: c.submodules.map((s) => ({ path: s.path, providers: providerRefs(s), dependencies: moduleRefs(s) })),
  };
}

/**
 * Re-renders the module's cached /versions array, latest version, description and search entry
 * from its published versions. Call inside the transaction that changes a version's status.
 */
export async function refreshModuleCache(db: Queryable, moduleId: string, now: string): Promise<void> {
  const ok = await listVersions(db, moduleId, 'ok');
  const byVersion = new Map(ok.map((v) => [v.version, v]));
  const ordered = sortVersionsDesc(ok.map((v) => v.version)).map((v) => byVersion.get(v)!);
  const latest = latestOf(ordered.map((v) => v.version));
  const latestRow = latest ? byVersion.get(latest) : undefined;
  const module = await db
    .updateTable('registry_modules')
    .set({
      versions_json: JSON.stringify(ordered.map(versionEntry)),
      latest_version: latest,
      ...(latestRow?.description ? { description: latestRow.description } : {}),
      updated_at: now,
    })
    .where('id', '=', moduleId)
    .returning(['name', 'provider', 'description', 'organization_id'])
    .executeTakeFirst();
  await removeSearchDocument(db, moduleId);
  if (!module || !latestRow) return;
  const c = parseContents(latestRow);
  const names = [c.root, ...c.submodules].flatMap((m) => [...m.inputs.map((i) => i.name), ...m.outputs.map((o) => o.name)]);
  await putSearchDocument(db, moduleId, { name: module.name, provider: module.provider, description: module.description, readme: c.root.readme, interface: names.join(' ') });
}

export interface DownloadCount {
  module_id: string;
  day: string;
  count: number;
}

/**
 * Adds each row's count to its module's bucket for the day (count = count + n), so instances that
 * write their own batches never overwrite each other. Rows of modules that no longer exist are
 * skipped (their counts went with them); returns how many. Call inside one transaction.
 *
 * One statement for the whole batch, its rows one JSON parameter: a flush every 250 ms under load
 * carries thousands of rows, and building a statement with three parameters a row (and a select
 * of the modules that still exist) cost more than SQLite's own work. Rows are written in the
 * order given, so flushes of several instances lock rows in one order.
 */
export async function addDownloadCounts(db: Queryable, rows: DownloadCount[]): Promise<number> {
  if (rows.length === 0) return 0;
  const batch = jsonRows(
    db,
    rows.map((r) => [r.module_id, r.day, r.count]),
    [
      { name: 'module_id', type: 'text' },
      { name: 'day', type: 'text' },
      { name: 'count', type: 'bigint' },
    ],
    'b',
  );
  // "where true": SQLite's parser needs it between a select and its upsert clause.
  const r = await sql`
    insert into registry_module_downloads (module_id, day, count)
    select b.module_id, b.day, b.count from ${batch} join registry_modules m on m.id = b.module_id
    where true order by b.position
    on conflict (module_id, day) do update set count = registry_module_downloads.count + excluded.count`.execute(db);
  return rows.length - Number(r.numAffectedRows ?? 0);
}

export interface DownloadSummary {
  week: number;
  month: number;
  year: number;
  total: number;
}

/** The summary's windows: a day counts in one when it is after the window's day (UTC). */
export function summaryWindows(today: Date): { week: string; month: string; year: string } {
  const dayAgo = (n: number) => new Date(today.getTime() - n * 86_400_000).toISOString().slice(0, 10);
  return { week: dayAgo(7), month: dayAgo(30), year: dayAgo(365) };
}

/** Sums over the last 7, 30 and 365 UTC days, today included. */
export async function downloadSummary(db: Queryable, moduleId: string, today: Date): Promise<DownloadSummary> {
  const w = summaryWindows(today);
  const r = await db
    .selectFrom('registry_module_downloads')
    .select([
      sql<number>`coalesce(sum(case when day > ${w.week} then count else 0 end), 0)`.as('week'),
      sql<number>`coalesce(sum(case when day > ${w.month} then count else 0 end), 0)`.as('month'),
      sql<number>`coalesce(sum(case when day > ${w.year} then count else 0 end), 0)`.as('year'),
      sql<number>`coalesce(sum(count), 0)`.as('total'),
    ])
    .where('module_id', '=', moduleId)
    .executeTakeFirstOrThrow();
  return { week: Number(r.week), month: Number(r.month), year: Number(r.year), total: Number(r.total) };
}

export async function totalDownloads(db: Queryable, moduleIds: string[]): Promise<Map<string, number>> {
  if (moduleIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('registry_module_downloads')
    .select(['module_id', sql<number>`sum(count)`.as('n')])
    .where('module_id', 'in', moduleIds)
    .groupBy('module_id')
    .execute();
  return new Map(rows.map((r) => [r.module_id, Number(r.n)]));
}

// ---- writes of the publishing API (the upload itself claims and finalizes in service.ts) ----

export async function insertModule(db: Queryable, row: ModuleRow): Promise<void> {
  await db.insertInto('registry_modules').values(row).execute();
}

/** A new pending version, replacing an errored one of the same number if given. */
export async function insertVersion(db: Queryable, row: VersionRow, replacingId?: string): Promise<void> {
  if (replacingId) await db.deleteFrom('registry_module_versions').where('id', '=', replacingId).execute();
  await db.insertInto('registry_module_versions').values(row).execute();
}

export async function deleteVersionRow(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('registry_module_versions').where('id', '=', id).execute();
}

/** Deletes the modules (their versions cascade); returns the blob keys their versions held. */
export async function deleteModuleRows(db: Queryable, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const keys = await db.selectFrom('registry_module_versions').select('blob_key').where('module_id', 'in', ids).execute();
  await db.deleteFrom('registry_modules').where('id', 'in', ids).execute();
  return keys.map((k) => k.blob_key).filter((k): k is string => k !== null);
}

/** The version an upload token was issued for (claimed or not), with what its blob key needs. */
export async function versionByUploadToken(db: Queryable, tokenHash: string) {
  return db
    .selectFrom('registry_module_versions')
    .innerJoin('registry_modules', 'registry_modules.id', 'registry_module_versions.module_id')
    .select(['registry_module_versions.id', 'registry_module_versions.module_id', 'registry_modules.organization_id'])
    .where('registry_module_versions.upload_token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/** Every download in the table, all modules and days. */
export async function countedDownloads(db: Queryable): Promise<number> {
  const r = await db.selectFrom('registry_module_downloads').select(sql<number>`coalesce(sum(count), 0)`.as('n')).executeTakeFirst();
  return Number(r?.n ?? 0);
}

/** Downloads per UTC day since a day (inclusive), oldest first; days without downloads are absent. */
export async function dailyDownloads(db: Queryable, moduleId: string, sinceDay: string): Promise<{ day: string; count: number }[]> {
  const rows = await db
    .selectFrom('registry_module_downloads')
    .select(['day', 'count'])
    .where('module_id', '=', moduleId)
    .where('day', '>=', sinceDay)
    .orderBy('day')
    .execute();
  return rows.map((r) => ({ day: r.day, count: Number(r.count) }));
}

// ---- ingestion (src/registry/ingest.ts): every write is conditional on the status it expects ----

export type VersionWithOrg = VersionRow & { organization_id: string };

/** A version by id with its module's organization (for its blob key). */
export async function getVersionWithOrg(db: Queryable, id: string): Promise<VersionWithOrg | undefined> {
  return db
    .selectFrom('registry_module_versions')
    .innerJoin('registry_modules', 'registry_modules.id', 'registry_module_versions.module_id')
    .selectAll('registry_module_versions')
    .select('registry_modules.organization_id')
    .where('registry_module_versions.id', '=', id)
    .executeTakeFirst();
}

/** A version's status only (what a wait polls). */
export async function getVersionById(db: Queryable, id: string): Promise<VersionRow | undefined> {
  return db.selectFrom('registry_module_versions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Moves a version from one of fromStatuses (and no blob) to set; false if it is not there any more. */
export async function transitionVersion(
  db: Queryable,
  id: string,
  fromStatuses: VersionRow['status'][],
  set: Partial<VersionRow>,
  opts: { blobKey?: string | null } = {},
): Promise<boolean> {
  let qb = db.updateTable('registry_module_versions').set(set).where('id', '=', id).where('status', 'in', fromStatuses);
  if (opts.blobKey === null) qb = qb.where('blob_key', 'is', null);
  else if (opts.blobKey !== undefined) qb = qb.where('blob_key', '=', opts.blobKey);
  const res = await qb.executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Renews the lease of an upload being received (only while it is still uploading). */
export async function renewUploadLease(db: Queryable, id: string, until: string): Promise<void> {
  await db.updateTable('registry_module_versions').set({ upload_lease_until: until }).where('id', '=', id).where('status', '=', 'uploading').execute();
}

/**
 * The partial index registry_module_versions_unfinished's condition (migration 0013), word for
 * word and with literal values: SQLite uses a partial index only for a query whose WHERE repeats
 * its condition with the same constants. Bound parameters in its place (`status in (?, ?, ?, ?)`)
 * made it scan every version instead, 180 ms at 100,000 versions on the one thread that serves
 * requests, every registry upkeep.
 */
const UNFINISHED_VERSION = sql<boolean>`status in ('pending', 'uploading', 'cloning', 'ingesting')`;

/** The query behind staleUploads (apart so its plan can be checked). */
export function staleUploadsQuery(db: Queryable, now: string) {
  return db
    .selectFrom('registry_module_versions')
    .select(['id', 'blob_key', 'upload_lease_until'])
    .where(UNFINISHED_VERSION)
    .where('status', '=', 'uploading')
    .where((eb) => eb.or([eb('upload_lease_until', 'is', null), eb('upload_lease_until', '<', now)]))
    .limit(1000);
}

/** Uploads whose receiving request is gone: lease lapsed (or none, from before leases). */
export async function staleUploads(db: Queryable, now: string) {
  return staleUploadsQuery(db, now).execute();
}

/**
 * Gives a dead upload's URL back (pending, token unclaimed, no blob) if it is still the same
 * stale upload; false when its request came back to life or it was deleted meanwhile.
 */
export async function resetStaleUpload(db: Queryable, id: string, leaseUntil: string | null, now: string): Promise<boolean> {
  const res = await db
    .updateTable('registry_module_versions')
    .set({ status: 'pending', blob_key: null, upload_lease_until: null, upload_token_hash: unclaimedTokenHash('module'), updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'uploading')
    .where((eb) => (leaseUntil === null ? eb('upload_lease_until', 'is', null) : eb('upload_lease_until', '=', leaseUntil)))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Every blob key a version references (one scan: blob_key has no index). */
export async function referencedBlobKeys(db: Queryable): Promise<Set<string>> {
  const rows = await db.selectFrom('registry_module_versions').select('blob_key').where('blob_key', 'is not', null).execute();
  return new Set(rows.map((r) => r.blob_key!));
}
