import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { capabilityUrl } from '../http/authorized.js';
import { declaredLength, readResource, requestBody } from '../http/body.js';
import { notFound, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { canonicalPublishVersion } from './names.js';
import { modulePublisherViews } from './hooks.js';
import { renderModule } from './render.js';
import { serializeModuleVersion, serializeRegistryModule, versionStatusName } from './serialize.js';
import {
  createModule,
  createVersion,
  deleteModules,
  deleteModulesNamed,
  deleteVersion,
  manageableModule,
  manageableOrganization,
  memberModule,
  memberModuleById,
  memberOrganization,
  receiveUpload,
  updateModule,
} from './service.js';
import { getVersion, listModules, listVersions, type ModuleWithOrg } from './store.js';

const createModuleSchema = z.object({
  name: z.string().min(1, 'is required'),
  provider: z.string().min(1, 'is required'),
  'registry-name': z.literal('private', { message: 'only "private" modules can be published to Terrace' }).optional(),
  'no-code': z.boolean().optional(),
  description: z.string().max(2000).optional(),
});

const updateModuleSchema = z.object({
  'no-code': z.boolean().optional(),
  'test-config': z.object({ 'tests-enabled': z.boolean().optional() }).optional(),
  'vcs-repo': z.unknown().optional(),
});

const createVersionSchema = z.object({
  version: z.string().min(1, 'is required'),
  'commit-sha': z.string().max(100).nullable().optional(),
  description: z.string().max(2000).nullable().optional(),
});

/** HCP Terraform's registry-modules API, so go-tfe, the tfe provider and scripts can publish. */
export function registryApiRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const PRIVATE = '/organizations/:org/registry-modules/private/:namespace/:name';
  const render = (m: ModuleWithOrg, canManage: boolean) => renderModule(deps, m, canManage);

  app.post('/organizations/:org/registry-modules', async (c) => {
    const p = requirePrincipal(c);
    const org = await manageableOrganization(deps, p, c.req.param('org'));
    const { attributes: a } = await readResource(c, 'registry-modules', createModuleSchema);
    const m = await createModule(deps, p, org, a);
    return jsonApi(c, { data: await render(m, true) }, 201);
  });

  app.get('/organizations/:org/registry-modules', async (c) => {
    const { org, access } = await memberOrganization(deps, requirePrincipal(c), c.req.param('org'));
    const page = parsePage(c);
    const q = queryParams(c);
    const filter = {
      organizationIds: [org.id],
      nameContains: q.get('q') || q.get('search[name]') || undefined,
      provider: q.get('filter[provider]') || undefined,
      publishedOnly: false,
      offset: page.offset,
      limit: page.size,
    };
    const registryName = q.get('filter[registry_name]');
    const { rows } = registryName && registryName !== 'private' ? { rows: [] } : await listModules(deps.db, filter);
    const total = registryName && registryName !== 'private' ? 0 : await countMatching(filter);
    const views = await modulePublisherViews(deps, rows.map((m) => m.id));
    const data = await Promise.all(rows.map(async (m) => serializeRegistryModule(m, await listVersions(deps.db, m.id), access.permissions['manage-modules'], views.get(m.id))));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  async function countMatching(filter: Parameters<typeof listModules>[1]): Promise<number> {
    // Counting by paging keeps one filter implementation; organizations hold few modules.
    let n = 0;
    for (let offset = 0; ; offset += 1000) {
      const { rows, hasMore } = await listModules(deps.db, { ...filter, offset, limit: 1000 });
      n += rows.length;
      if (!hasMore) return n;
    }
  }

  // Each action is written once and served at every path go-tfe (0.x and 1.x) sends it to:
  // the current organizations/:org/registry-modules/private/... paths and the older
  // registry-modules/... ones that CreateVersion and the deprecated deletes still call.
  const coordinates = (c: Context<AppEnv>) => {
    const p = c.req.param() as Record<string, string | undefined>;
    // The older paths name only the organization: a private module's namespace is its organization.
    const org = (p.org ?? p.organization)!;
    return { org, namespace: p.namespace ?? org, name: p.name!, provider: p.provider! };
  };

  const showModule = async (c: Context<AppEnv>) => {
    const { org, namespace, name, provider } = coordinates(c);
    const { module: m, access } = await memberModule(deps, requirePrincipal(c), org, namespace, name, provider);
    return jsonApi(c, { data: await render(m, access.permissions['manage-modules']) });
  };

  const deleteNamed = async (c: Context<AppEnv>) => {
    const { org, namespace, name } = coordinates(c);
    await deleteModulesNamed(deps, requirePrincipal(c), org, namespace, name);
    return c.body(null, 204);
  };

  const deleteProvider = async (c: Context<AppEnv>) => {
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const { module } = await manageableModule(deps, p, org, namespace, name, provider);
    await deleteModules(deps, p, [module]);
    return c.body(null, 204);
  };

  const deleteOneVersion = async (c: Context<AppEnv>) => {
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const { module } = await manageableModule(deps, p, org, namespace, name, provider);
    await deleteVersion(deps, p, module, c.req.param('version')!);
    return c.body(null, 204);
  };

  const createOneVersion = async (c: Context<AppEnv>) => {
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const { module } = await manageableModule(deps, p, org, namespace, name, provider);
    const { attributes: a } = await readResource(c, 'registry-module-versions', createVersionSchema);
    const { version, uploadUrl } = await createVersion(deps, p, module, {
      version: a.version,
      description: a.description,
      commitSha: a['commit-sha'],
    });
    return jsonApi(c, { data: serializeModuleVersion(module, version, uploadUrl) }, 201);
  };

  // Literal segments first: "show" and "actions" must not be taken for an organization's name.
  app.get('/registry-modules/show/:organization/:name/:provider', showModule);
  app.post('/registry-modules/actions/delete/:organization/:name', deleteNamed);
  app.post('/registry-modules/actions/delete/:organization/:name/:provider', deleteProvider);
  app.post('/registry-modules/actions/delete/:organization/:name/:provider/:version', deleteOneVersion);
  app.post('/registry-modules/:organization/:name/:provider/versions', createOneVersion);

  app.get('/registry-modules/:id', async (c) => {
    const { module: m, access } = await memberModuleById(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: await render(m, access.permissions['manage-modules']) });
  });

  app.get(`${PRIVATE}/:provider`, showModule);
  app.delete(PRIVATE, deleteNamed);
  app.delete(`${PRIVATE}/:provider`, deleteProvider);
  app.post(`${PRIVATE}/:provider/versions`, createOneVersion);

  app.patch(`${PRIVATE}/:provider`, async (c) => {
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const { module } = await manageableModule(deps, p, org, namespace, name, provider);
    const { attributes: a } = await readResource(c, 'registry-modules', updateModuleSchema);
    const m = await updateModule(deps, p, module, { noCode: a['no-code'], testsEnabled: a['test-config']?.['tests-enabled'], vcsRepo: a['vcs-repo'] !== undefined });
    return jsonApi(c, { data: await render(m, true) });
  });

  // VCS-backed modules are created, updated and versioned by src/vcs/module-routes.ts, mounted first.
  app.get(`${PRIVATE}/:provider/commits`, async (c) => {
    const { org, namespace, name, provider } = coordinates(c);
    await memberModule(deps, requirePrincipal(c), org, namespace, name, provider);
    throw unprocessable(`${namespace}/${name}/${provider} is not connected to a VCS repository, so it has no commits to list`);
  });

  async function showVersion(c: Context<AppEnv>, raw: string | undefined) {
    const { org, namespace, name, provider } = coordinates(c);
    const { module: m } = await memberModule(deps, requirePrincipal(c), org, namespace, name, provider);
    if (!raw) throw unprocessable('the module_version query parameter is required');
    const v = await getVersion(deps.db, m.id, canonicalPublishVersion(raw) ?? raw);
    if (!v) throw notFound(`version ${raw} of ${m.namespace}/${m.name}/${m.provider} does not exist`);
    return jsonApi(c, { data: serializeModuleVersion(m, v) });
  }

  // go-tfe reads a version as .../version?module_version=X; the path form is for people.
  app.get(`${PRIVATE}/:provider/version`, (c) => showVersion(c, queryParams(c).get('module_version') ?? undefined));
  app.get(`${PRIVATE}/:provider/versions/:version`, (c) => showVersion(c, c.req.param('version')));
  app.delete(`${PRIVATE}/:provider/:version`, deleteOneVersion);

  return app;
}

/** The one-time upload URL handed out in links.upload: no token, the URL is the capability. */
export function uploadRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.put('/uploads/modules/:token', async (c) => {
    capabilityUrl();
    const version = await receiveUpload(deps, c.req.param('token'), requestBody(c), declaredLength(c));
    // Published: 200 as always. Still being ingested at TERRACE_INGEST_WAIT_MS: 202, poll the version.
    return jsonApi(
      c,
      { data: { id: version.id, type: 'registry-module-versions', attributes: { status: versionStatusName(version.status), version: version.version, size: version.size, sha256: version.sha256 } } },
      version.status === 'ok' ? 200 : 202,
    );
  });
  return app;
}
