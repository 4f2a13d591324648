import type { Deps } from '../deps.js';
import { notFound, unauthorized } from '../http/errors.js';
import { GenerationCache, perServer } from '../db/generations.js';
import { isSiteAdmin, type Principal } from '../identity/principal.js';
import { consumableOrganizationIds } from '../organizations/access.js';
import { canManageModules } from './access.js';
import { cachedModule } from './cache.js';
import { sortVersionsDesc } from './names.js';
import {
  countedDownloads,
  dailyDownloads,
  downloadSummary,
  findModule,
  findModulesByName,
  getVersion,
  latestVersionRows,
  listModules,
  LISTING_COLUMNS,
  listVersions,
  summaryWindows,
  totalDownloads,
  type DetailVersion,
  type DownloadSummary,
  type LatestVersion,
  type ModuleWithOrg,
  type PublishedListing,
  type VersionRow,
} from './store.js';

/**
 * Reading the registry: what the protocol routes and the web UI both show, with one rule for who
 * may read what. A token is needed unless TERRACE_PUBLIC_READ is on; members read their
 * organizations' modules and those of the organizations producing for them.
 */
export async function readableOrganizationIds(deps: Deps, p: Principal | null): Promise<string[] | 'all'> {
  if (deps.config.publicRead) return 'all';
  if (!p) throw unauthorized();
  if (isSiteAdmin(p)) return 'all';
  const key = readableKey(p);
  const cache = readableCache(deps);
  const hit = cache.get(key);
  if (hit) return hit;
  const generation = cache.generation();
  const ids = await consumableOrganizationIds(deps.db, p);
  if (ids !== 'all') cache.set(key, Object.freeze(ids) as string[], generation);
  return ids;
}

/** readableOrganizationIds when it needs no store read; undefined means "ask it". */
export function cachedReadableOrganizationIds(deps: Deps, p: Principal | null): string[] | 'all' | undefined {
  if (deps.config.publicRead) return 'all';
  if (!p) return undefined;
  if (isSiteAdmin(p)) return 'all';
  return readableCache(deps).get(readableKey(p));
}

/** The readable-organizations cache key: a user's own, or the organization's for team and organization tokens. */
function readableKey(p: Principal): string {
  return p.kind === 'user' ? `user:${p.user.id}` : `organization:${p.organizationId}`;
}

/** Readable organizations by user (or by organization, for team and organization tokens): memberships move the identity generation. */
const readableCache = perServer((deps: Deps) => new GenerationCache<string, string[]>(deps.generations, 'identity', deps.config.cacheMaxEntries));

export interface ModuleFilter {
  namespace?: string;
  name?: string;
  /** Ranked full-text search, best first. */
  q?: string;
  provider?: string;
}

export interface ModuleSummary {
  module: ModuleWithOrg;
  latest: LatestVersion | undefined;
  downloads: number;
}

/** Published modules the caller may read, matching the filter; one page plus whether more exist. */
export async function findModules(
  deps: Deps,
  p: Principal | null,
  filter: ModuleFilter,
  page: { offset: number; limit: number },
): Promise<{ modules: ModuleSummary[]; hasMore: boolean }> {
  const organizationIds = await readableOrganizationIds(deps, p);
  const { rows, hasMore } = await listModules(deps.db, { ...filter, organizationIds, publishedOnly: true, ...page });
  const [latest, downloads] = await Promise.all([latestVersionRows(deps.db, rows), moduleTotals(deps, rows.map((r) => r.id))]);
  return { modules: rows.map((m) => ({ module: m, latest: latest.get(m.id), downloads: downloads.get(m.id) ?? 0 })), hasMore };
}

/**
 * The same summaries with their download totals read again: what grows old on a cached list or
 * search page while the registry generation stands (the modules, their latest versions and their
 * order move it). Only for summaries findModules returned, for the caller it authorized.
 */
export async function withCurrentTotals(deps: Deps, modules: readonly ModuleSummary[]): Promise<ModuleSummary[]> {
  const totals = await moduleTotals(deps, modules.map((s) => s.module.id));
  return modules.map((s) => ({ ...s, downloads: totals.get(s.module.id) ?? 0 }));
}

/** The module, if the caller may read it; 404 otherwise (its existence is not revealed). */
export async function readableModule(deps: Deps, p: Principal | null, namespace: string, name: string, provider: string): Promise<ModuleWithOrg> {
  const orgs = await readableOrganizationIds(deps, p);
  const module = await cachedModule(deps, namespace, name, provider);
  if (!module || (orgs !== 'all' && !orgs.includes(module.organization_id))) throw notFound();
  return module;
}

export interface VersionDetail {
  version: DetailVersion;
  /** Published versions, newest first. */
  versions: string[];
  /** The same versions' dates and descriptions, newest first. */
  published: PublishedListing[];
  /** Providers under the same namespace and name that have a published version. */
  providers: string[];
  downloads: number;
}

/** A version's detail but its download total, which is read on every request. */
type CachedDetail = Readonly<Omit<VersionDetail, 'downloads'>>;

/**
 * What the version details cached on an instance may weigh together: a version's contents (its
 * inputs, outputs, resources, submodules and examples) can run to megabytes, so this cache is
 * bounded by size as well as by TERRACE_CACHE_MAX_ENTRIES.
 */
const DETAIL_CACHE_BYTES = 64 * 1024 * 1024;

/** About what a cached detail holds, in bytes (string lengths and a little for each object). */
function detailSize(d: CachedDetail | null): number {
  if (!d) return 64;
  let n = 256 + (d.version.contents?.length ?? 0) + (d.version.description?.length ?? 0);
  for (const v of d.published) n += 96 + v.version.length + (v.description?.length ?? 0);
  for (const p of d.providers) n += 32 + p.length;
  return n;
}

/**
 * Version details (null: no such published version) by module id and version, under the
 * registry generation: a publish, a deletion or a rename shows at once, and on other instances
 * within TERRACE_CACHE_SYNC_MS.
 */
const detailCache = perServer(
  (deps: Deps) => new GenerationCache<string, CachedDetail | null>(deps.generations, 'registry', deps.config.cacheMaxEntries, 0, 0, { maxBytes: DETAIL_CACHE_BYTES, sizeOf: detailSize }),
);

async function readDetail(deps: Deps, m: ModuleWithOrg, version: string): Promise<CachedDetail | null> {
  const row = await getVersion(deps.db, m.id, version);
  if (!row || row.status !== 'ok') return null;
  const [siblings, ok] = await Promise.all([findModulesByName(deps.db, m.namespace, m.name), listVersions(deps.db, m.id, 'ok', LISTING_COLUMNS)]);
  const versions = sortVersionsDesc(ok.map((v) => v.version));
  const byVersion = new Map(ok.map((v) => [v.version, v]));
  return Object.freeze({
    version: Object.freeze({ version: row.version, description: row.description, published_at: row.published_at, contents: row.contents }),
    versions: Object.freeze(versions) as string[],
    published: Object.freeze(versions.map((v) => Object.freeze(byVersion.get(v)!))) as PublishedListing[],
    providers: Object.freeze(siblings.filter((s) => s.latest_version !== null).map((s) => s.provider)) as string[],
  });
}

/**
 * One published version of a readable module, with what the protocol's ModuleDetail carries:
 * from the cache but its download total. What it returns is shared: read it, do not change it.
 */
export async function publishedVersion(deps: Deps, m: ModuleWithOrg, version: string): Promise<VersionDetail> {
  const cache = detailCache(deps);
  const key = `${m.id}\u0000${version}`;
  let detail = cache.get(key);
  if (detail === undefined) {
    const generation = cache.generation();
    detail = await readDetail(deps, m, version);
    cache.set(key, detail, generation);
  }
  if (!detail) throw notFound(`version ${version} of ${m.namespace}/${m.name}/${m.provider} not found`);
  const downloads = await moduleTotals(deps, [m.id]);
  return { ...detail, downloads: downloads.get(m.id) ?? 0 };
}

/**
 * Download counts are read as the table holds them plus this process's counts not yet written
 * (src/registry/downloads.ts): an instance shows its own downloads at once, another instance
 * once they are flushed (TERRACE_DOWNLOAD_FLUSH_MS).
 */
async function moduleTotals(deps: Deps, moduleIds: string[]): Promise<Map<string, number>> {
  const { rows, pending } = await deps.downloads.read(() => totalDownloads(deps.db, moduleIds), moduleIds);
  for (const id of moduleIds) {
    const days = pending.of(id);
    if (days.size) rows.set(id, (rows.get(id) ?? 0) + [...days.values()].reduce((a, b) => a + b, 0));
  }
  return rows;
}

/** Downloads counted since the registry began (the metrics' total). */
export async function downloadsCounted(deps: Deps): Promise<number> {
  const { rows, pending } = await deps.downloads.read(() => countedDownloads(deps.db));
  return rows + pending.total;
}

export async function moduleDownloadSummary(deps: Deps, m: ModuleWithOrg): Promise<DownloadSummary> {
  const today = deps.clock.now();
  const { rows: s, pending } = await deps.downloads.read(() => downloadSummary(deps.db, m.id, today), [m.id]);
  const { week, month, year } = summaryWindows(today);
  for (const [day, n] of pending.of(m.id)) {
    if (day > week) s.week += n;
    if (day > month) s.month += n;
    if (day > year) s.year += n;
    s.total += n;
  }
  return s;
}

/** Downloads per UTC day over the last `days` days, today included, zeros filled in. */
export async function moduleDownloadsByDay(deps: Deps, m: ModuleWithOrg, days: number): Promise<{ day: string; count: number }[]> {
  const today = deps.clock.now();
  const dayAt = (n: number) => new Date(today.getTime() - n * 86_400_000).toISOString().slice(0, 10);
  const since = dayAt(days - 1);
  const { rows, pending } = await deps.downloads.read(() => dailyDownloads(deps.db, m.id, since), [m.id]);
  const counts = new Map(rows.map((r) => [r.day, r.count]));
  for (const [day, n] of pending.of(m.id)) if (day >= since) counts.set(day, (counts.get(day) ?? 0) + n);
  return Array.from({ length: days }, (_, i) => {
    const day = dayAt(days - 1 - i);
    return { day, count: counts.get(day) ?? 0 };
  });
}

/**
 * Every version with its status and error, for those who may publish the module (they see what
 * failed and why); undefined for readers, who see published versions only.
 */
export async function versionsForPublishers(deps: Deps, p: Principal | null, m: ModuleWithOrg): Promise<VersionRow[] | undefined> {
  if (!p || !(await canManageModules(deps, p, m.organization_id))) return undefined;
  return listVersions(deps.db, m.id);
}
