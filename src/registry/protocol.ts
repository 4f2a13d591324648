import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import { badRequest, notFound } from '../http/errors.js';
import { parseOffsetLimit, registryMeta } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { assertCanRead, readableOrganizations } from './access.js';
import { archiveUrlFor } from './archive-url.js';
import { normalizeRequestedVersion, sortVersionsDesc } from './names.js';
import { protocolModule, protocolModuleDetail } from './serialize.js';
import {
  downloadSummary,
  findModule,
  findModulesByName,
  getVersion,
  getVersionForDownload,
  latestVersionRows,
  listModules,
  listVersions,
  recordDownload,
  totalDownloads,
  type ModuleWithOrg,
} from './store.js';

const JSON_HEADERS = { 'Content-Type': 'application/json' };

/** The module registry protocol (modules.v1) and the v2 download summary. */
export function protocolRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function renderList(c: Context<AppEnv>, filter: { namespace?: string; name?: string; q?: string; provider?: string }) {
    const page = parseOffsetLimit(c);
    const q = queryParams(c);
    const organizationIds = await readableOrganizations(deps, c);
    const provider = filter.provider ?? q.get('provider') ?? undefined;
    // Terrace has no partner verification: verified=true matches nothing, anything else all.
    if (q.get('verified') === 'true') return c.json({ meta: registryMeta(c, page, 0, false), modules: [] });
    const { rows, hasMore } = await listModules(deps.db, { ...filter, provider, organizationIds, publishedOnly: true, ...page });
    const [latest, downloads] = await Promise.all([latestVersionRows(deps.db, rows), totalDownloads(deps.db, rows.map((r) => r.id))]);
    return c.json({
      meta: registryMeta(c, page, rows.length, hasMore),
      modules: rows.map((m) => protocolModule(m, latest.get(m.id), downloads.get(m.id) ?? 0)),
    });
  }

  async function readable(c: Context<AppEnv>): Promise<ModuleWithOrg> {
    const { namespace, name, provider } = c.req.param() as Record<string, string>;
    return assertCanRead(deps, c, await findModule(deps.db, namespace!, name!, provider!));
  }

  async function detail(c: Context<AppEnv>, m: ModuleWithOrg, version: string) {
    const row = await getVersion(deps.db, m.id, version);
    if (!row || row.status !== 'ok') throw notFound(`version ${version} of ${m.namespace}/${m.name}/${m.provider} not found`);
    const [siblings, ok, downloads] = await Promise.all([
      findModulesByName(deps.db, m.namespace, m.name),
      listVersions(deps.db, m.id, 'ok'),
      totalDownloads(deps.db, [m.id]),
    ]);
    const providers = siblings.filter((s) => s.latest_version !== null).map((s) => s.provider);
    return c.json(protocolModuleDetail(m, row, downloads.get(m.id) ?? 0, providers, sortVersionsDesc(ok.map((v) => v.version))));
  }

  app.get('/v1/modules', (c) => renderList(c, {}));
  app.get('/v1/modules/', (c) => renderList(c, {}));

  app.get('/v1/modules/search', (c) => {
    const q = queryParams(c);
    const term = q.get('q')?.trim();
    if (!term) throw badRequest('the query parameter q is required, for example /v1/modules/search?q=network');
    return renderList(c, { q: term, namespace: q.get('namespace') || undefined });
  });

  app.get('/v1/modules/:namespace', (c) => renderList(c, { namespace: c.req.param('namespace') }));
  app.get('/v1/modules/:namespace/', (c) => renderList(c, { namespace: c.req.param('namespace') }));

  app.get('/v1/modules/:namespace/:name', (c) => renderList(c, { namespace: c.req.param('namespace'), name: c.req.param('name') }));

  app.get('/v1/modules/:namespace/:name/:provider/versions', async (c) => {
    const m = await readable(c);
    // The versions array is rendered once per publish; only the envelope is built here.
    const source = JSON.stringify(`${m.namespace}/${m.name}/${m.provider}`);
    return c.body(`{"modules":[{"source":${source},"versions":${m.versions_json}}]}`, 200, JSON_HEADERS);
  });

  app.get('/v1/modules/:namespace/:name/:provider/download', async (c) => {
    const m = await readable(c);
    if (!m.latest_version) throw notFound(`${m.namespace}/${m.name}/${m.provider} has no published versions`);
    const { namespace, name, provider } = c.req.param();
    return c.redirect(`/v1/modules/${namespace}/${name}/${provider}/${m.latest_version}/download`, 302);
  });

  app.get('/v1/modules/:namespace/:name/:provider', async (c) => {
    const m = await readable(c);
    if (!m.latest_version) throw notFound(`${m.namespace}/${m.name}/${m.provider} has no published versions`);
    return detail(c, m, m.latest_version);
  });

  app.get('/v1/modules/:namespace/:name/:provider/:version/download', async (c) => {
    const m = await readable(c);
    const raw = c.req.param('version');
    const version = normalizeRequestedVersion(raw);
    const row = version ? await getVersionForDownload(deps.db, m.id, version) : undefined;
    if (!row || row.status !== 'ok') throw notFound(`version ${raw} of ${m.namespace}/${m.name}/${m.provider} not found`);
    const url = await archiveUrlFor(deps, m, row);
    await recordDownload(deps.db, m.id, deps.clock.now().toISOString().slice(0, 10));
    return c.body(null, 204, { 'X-Terraform-Get': url });
  });

  app.get('/v1/modules/:namespace/:name/:provider/:version', async (c) => {
    const m = await readable(c);
    const raw = c.req.param('version');
    const version = normalizeRequestedVersion(raw);
    if (!version) throw notFound(`version ${raw} of ${m.namespace}/${m.name}/${m.provider} not found`);
    return detail(c, m, version);
  });

  app.get('/v2/modules/:namespace/:name/:provider/downloads/summary', async (c) => {
    const m = await readable(c);
    const s = await downloadSummary(deps.db, m.id, deps.clock.now());
    return c.json({ data: { type: 'module-downloads-summary', id: m.id, attributes: s } });
  });

  return app;
}
