import { Hono, type Context } from 'hono';
import { GenerationCache, perServer } from '../db/generations.js';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import { badRequest, notFound } from '../http/errors.js';
import { MODULE_PROTOCOL_BASES } from '../http/surface.js';
import { parseOffsetLimit, registryMeta } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { requestTarget, routeLabel } from '../http/route.js';
import { archiveUrlFor, signedArchiveUrl, signsArchiveUrls } from './archive-url.js';
import { findModules, moduleDownloadSummary, publishedVersion, readableModule, readableOrganizationIds, withCurrentTotals, type ModuleFilter, type ModuleSummary } from './catalog.js';
import { normalizeRequestedVersion } from './names.js';
import { protocolModule, protocolModuleDetail } from './serialize.js';
import { cachedDownloadVersion, peekDownloadVersion, versionsBody, type DownloadVersion } from './cache.js';
import type { ModuleWithOrg } from './store.js';

const JSON_HEADERS = { 'Content-Type': 'application/json' };
const encoder = new TextEncoder();

/**
 * A rendered page, the route it answers (the lean path times it under the same label) and what it
 * was rendered from, so its download totals can be read again without the search or the request.
 */
export interface Page {
  body: Uint8Array<ArrayBuffer>;
  route: string;
  /** The page's meta as rendered (offsets and links depend on the request and the page's length, not on totals). */
  meta: Record<string, unknown>;
  modules: readonly ModuleSummary[];
}

function renderPage(route: string, meta: Record<string, unknown>, modules: readonly ModuleSummary[]): Page {
  const body = encoder.encode(JSON.stringify({ meta, modules: modules.map((s) => protocolModule(s.module, s.latest, s.downloads)) }));
  return { body, route, meta, modules };
}
interface ListPages {
  pages: GenerationCache<string, Page>;
  rendering: Map<string, Promise<Page>>;
  /** Expired pages waiting to be made again, one at a time. */
  refreshing: Map<string, () => Promise<Page>>;
  refresher: Promise<void> | null;
}

/**
 * Rendered list and search pages, under the registry generation (a publish, deletion or rename
 * shows at once) and for TERRACE_LIST_CACHE_TTL_MS at most (a fifth less for some, so pages
 * cached together do not expire together), since they carry download totals.
 */
const listPages = perServer(
  (deps: Deps): ListPages => ({
    pages: new GenerationCache<string, Page>(deps.generations, 'registry', deps.config.cacheMaxEntries, deps.config.listCacheTtlMs, 0.2),
    rendering: new Map(),
    refreshing: new Map(),
    refresher: null,
  }),
);

/**
 * A list page's cache key: whom it was rendered for (the organizations they may read) and the
 * request's path and query as sent. The page holds no host: next_url and prev_url are paths.
 */
const pageKey = (organizationIds: readonly string[] | 'all', target: string) => `${organizationIds === 'all' ? '*' : organizationIds.join(',')}\n${target}`;

/**
 * The cached page for a list or search request, if one is there (under the current generation).
 * Nothing in it changed but its download totals may be old: once its lifetime has passed it is
 * served as it is while the same modules with their totals read again replace it behind it,
 * without running the search again. Both the lean path and the app answer from here.
 */
export function cachedListPage(deps: Deps, organizationIds: readonly string[] | 'all', target: string): Page | undefined {
  return cachedPage(deps, pageKey(organizationIds, target));
}

function cachedPage(deps: Deps, key: string): Page | undefined {
  const cache = listPages(deps);
  const hit = cache.pages.peek(key);
  if (!hit) return undefined;
  // Until its refresh lands, every request for an expired page comes here: one queues it.
  if (hit.expired && !cache.refreshing.has(key) && !cache.rendering.has(key)) {
    const generation = cache.pages.generation();
    const { route, meta, modules } = hit.value;
    refreshLater(deps, cache, key, async () => {
      const page = renderPage(route, meta, await withCurrentTotals(deps, modules));
      cache.pages.set(key, page, generation);
      return page;
    });
  }
  return hit.value;
}

/**
 * Requests for a page being rendered wait for that rendering rather than each running the same
 * search (the store's calls are synchronous on SQLite: fifty at once would queue).
 */
function renderOnce(cache: ListPages, key: string, render: () => Promise<Page>): Promise<Page> {
  let pending = cache.rendering.get(key);
  if (!pending) {
    pending = render().finally(() => cache.rendering.delete(key));
    cache.rendering.set(key, pending);
  }
  return pending;
}

/**
 * Makes expired pages again in the background, one at a time with a turn of the event loop
 * between them, so many pages expiring together never hold up the requests being served.
 */
function refreshLater(deps: Deps, cache: ListPages, key: string, render: () => Promise<Page>): void {
  if (cache.refreshing.has(key) || cache.rendering.has(key)) return;
  cache.refreshing.set(key, render);
  cache.refresher ??= (async () => {
    for (const [k, r] of cache.refreshing) {
      await new Promise((resolve) => setImmediate(resolve));
      await renderOnce(cache, k, r).catch((err) => deps.logger.warn({ err }, 'could not refresh a cached registry list page'));
      cache.refreshing.delete(k);
    }
    cache.refresher = null;
  })();
}

/** The base of the request's mount, e.g. "/v1/modules/": redirects and hints stay under it. */
function baseOf(c: Context<AppEnv>): string {
  return MODULE_PROTOCOL_BASES.find((b) => c.req.path.startsWith(b) || `${c.req.path}/` === b) ?? MODULE_PROTOCOL_BASES[0];
}

/** Where a version of a readable module downloads from (X-Terraform-Get), counting the download if asked. */
export async function downloadLocation(deps: Deps, m: ModuleWithOrg, raw: string, count: boolean): Promise<string> {
  const version = normalizeRequestedVersion(raw);
  const row = version ? await cachedDownloadVersion(deps, m.id, version) : undefined;
  if (!row || row.status !== 'ok') throw notFound(`version ${raw} of ${m.namespace}/${m.name}/${m.provider} not found`);
  const url = await archiveUrlFor(deps, m, row);
  if (count) deps.downloads.countAt(m.id, deps.clock.now());
  return url;
}

/**
 * The published version a download request names, when it is cached and its archive URL is
 * Terrace's own to sign (countedDownload can then answer without an await). Undefined when not.
 */
export function peekDownloadable(deps: Deps, m: ModuleWithOrg, raw: string): DownloadVersion | undefined {
  if (!signsArchiveUrls(deps)) return undefined;
  const version = normalizeRequestedVersion(raw);
  const row = version && peekDownloadVersion(deps, m.id, version);
  return row && row.status === 'ok' ? row : undefined;
}

/** downloadLocation, counted, for a version peekDownloadable gave: synchronous. */
export function countedDownload(deps: Deps, m: ModuleWithOrg, row: DownloadVersion): string {
  const url = signedArchiveUrl(deps, m, row);
  deps.downloads.countAt(m.id, deps.clock.now());
  return url;
}

/** The module registry protocol (modules.v1) and the v2 download summary. */
export function protocolRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function renderList(c: Context<AppEnv>, filter: ModuleFilter) {
    const page = parseOffsetLimit(c);
    const q = queryParams(c);
    const provider = filter.provider ?? q.get('provider') ?? undefined;
    const organizationIds = await readableOrganizationIds(deps, c.get('principal'));
    // Terrace has no partner verification: verified=true matches nothing, anything else all.
    if (q.get('verified') === 'true') return c.json({ meta: registryMeta(c, page, 0, false), modules: [] });
    // The same URL read by callers who may read the same organizations gets the same page.
    const key = pageKey(organizationIds, requestTarget(c.req.url));
    const cached = cachedPage(deps, key);
    if (cached) return c.body(cached.body, 200, JSON_HEADERS);
    const route = routeLabel(c);
    const cache = listPages(deps);
    const principal = c.get('principal');
    const render = async () => {
      const generation = cache.pages.generation();
      const { modules, hasMore } = await findModules(deps, principal, { ...filter, provider }, page);
      const rendered = renderPage(route, registryMeta(c, page, modules.length, hasMore), modules);
      cache.pages.set(key, rendered, generation);
      return rendered;
    };
    return c.body((await renderOnce(cache, key, render)).body, 200, JSON_HEADERS);
  }

  function readable(c: Context<AppEnv>): Promise<ModuleWithOrg> {
    const { namespace, name, provider } = c.req.param() as Record<string, string>;
    return readableModule(deps, c.get('principal'), namespace!, name!, provider!);
  }

  async function detail(c: Context<AppEnv>, m: ModuleWithOrg, version: string) {
    const d = await publishedVersion(deps, m, version);
    return c.json(protocolModuleDetail(m, d.version, d.downloads, d.providers, d.versions));
  }

  const listAll = (c: Context<AppEnv>) => renderList(c, {});

  const search = (c: Context<AppEnv>) => {
    const q = queryParams(c);
    const term = q.get('q')?.trim();
    if (!term) throw badRequest(`the query parameter q is required, for example ${baseOf(c)}search?q=network`);
    return renderList(c, { q: term, namespace: q.get('namespace') || undefined });
  };

  const listNamespace = (c: Context<AppEnv>) => renderList(c, { namespace: c.req.param('namespace') });

  const listNamed = (c: Context<AppEnv>) => renderList(c, { namespace: c.req.param('namespace'), name: c.req.param('name') });

  const versions = async (c: Context<AppEnv>) => {
    const m = await readable(c);
    // The versions array is rendered once per publish, the whole document once per cached row.
    return c.body(versionsBody(m), 200, JSON_HEADERS);
  };

  const downloadLatest = async (c: Context<AppEnv>) => {
    const m = await readable(c);
    if (!m.latest_version) throw notFound(`${m.namespace}/${m.name}/${m.provider} has no published versions`);
    const { namespace, name, provider } = c.req.param() as Record<string, string>;
    return c.redirect(`${baseOf(c)}${namespace}/${name}/${provider}/${m.latest_version}/download`, 302);
  };

  const latest = async (c: Context<AppEnv>) => {
    const m = await readable(c);
    if (!m.latest_version) throw notFound(`${m.namespace}/${m.name}/${m.provider} has no published versions`);
    return detail(c, m, m.latest_version);
  };

  const download = async (c: Context<AppEnv>) => {
    const m = await readable(c);
    // HEAD (Hono answers it with the GET handler) asks about the download without making one.
    const url = await downloadLocation(deps, m, c.req.param('version')!, c.req.method === 'GET');
    return c.body(null, 204, { 'X-Terraform-Get': url });
  };

  const version = async (c: Context<AppEnv>) => {
    const m = await readable(c);
    const raw = c.req.param('version')!;
    const v = normalizeRequestedVersion(raw);
    if (!v) throw notFound(`version ${raw} of ${m.namespace}/${m.name}/${m.provider} not found`);
    return detail(c, m, v);
  };

  // One set of handlers, served at the protocol's base and at HCP's /api/registry/v1/modules/
  // (where go-tfe's ReadTerraformRegistryModule reads). Literals before captures (search,
  // versions, download).
  for (const base of MODULE_PROTOCOL_BASES) {
    app.get(base.slice(0, -1), listAll);
    app.get(base, listAll);
    app.get(`${base}search`, search);
    app.get(`${base}:namespace`, listNamespace);
    app.get(`${base}:namespace/`, listNamespace);
    app.get(`${base}:namespace/:name`, listNamed);
    app.get(`${base}:namespace/:name/:provider/versions`, versions);
    app.get(`${base}:namespace/:name/:provider/download`, downloadLatest);
    app.get(`${base}:namespace/:name/:provider`, latest);
    app.get(`${base}:namespace/:name/:provider/:version/download`, download);
    app.get(`${base}:namespace/:name/:provider/:version`, version);
  }

  app.get('/v2/modules/:namespace/:name/:provider/downloads/summary', async (c) => {
    const m = await readable(c);
    const s = await moduleDownloadSummary(deps, m);
    return c.json({ data: { type: 'module-downloads-summary', id: m.id, attributes: s } });
  });

  return app;
}
