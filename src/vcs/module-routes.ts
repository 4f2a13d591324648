import { Hono, type Context, type Next } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { capabilityUrl } from '../http/authorized.js';
import { limitedBody, readResource } from '../http/body.js';
import { payloadTooLarge } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { renderModule, renderVersion } from '../registry/render.js';
import { manageableModule } from '../registry/service.js';
import {
  authorizeDeprecatedVcsCreate,
  authorizeVcsCreate,
  createBranchVersion,
  createVcsModule,
  organizationOfToken,
  resyncModule,
  updateVcsModule,
  vcsModuleOf,
  webhookDetails,
  type CreateInput,
} from './module-service.js';
import { createVcsModuleSchema, createVcsVersionSchema, updateVcsModuleSchema } from './module-settings.js';
import { MAX_WEBHOOK_BYTES, receiveWebhook } from './webhooks.js';

const PRIVATE = '/organizations/:org/registry-modules/private/:namespace/:name/:provider';

type Attrs = ReturnType<typeof createVcsModuleSchema.parse>;
const createInput = (a: Attrs): CreateInput => ({
  name: a.name,
  provider: a.provider,
  initialVersion: a['initial-version'],
  noCode: a['no-code'],
  testsEnabled: a['test-config']?.['tests-enabled'],
  vcsRepo: a['vcs-repo'],
});

/**
 * Registry modules published from VCS (contract-wave2 §4.3). Mounted before the registry's
 * routes: on the paths both serve (PATCH, POST .../versions) a module that is not VCS-backed is
 * passed on to the registry unchanged.
 */
export function vcsModuleRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/organizations/:org/registry-modules/vcs', async (c) => {
    const p = requirePrincipal(c);
    const org = await authorizeVcsCreate(deps, p, c.req.param('org'));
    const { attributes: a } = await readResource(c, 'registry-modules', createVcsModuleSchema);
    const m = await createVcsModule(deps, p, org, createInput(a));
    return jsonApi(c, { data: await renderModule(deps, m, true) }, 201);
  });

  // The deprecated path go-tfe still uses for tag-based modules: the organization is the token's.
  app.post('/registry-modules', async (c) => {
    const p = requirePrincipal(c);
    authorizeDeprecatedVcsCreate();
    const { attributes: a } = await readResource(c, 'registry-modules', createVcsModuleSchema);
    const org = await organizationOfToken(deps, p, a['vcs-repo']['oauth-token-id']);
    const m = await createVcsModule(deps, p, org, createInput(a));
    return jsonApi(c, { data: await renderModule(deps, m, true) }, 201);
  });

  const coordinates = (c: Context<AppEnv>) => {
    const q = c.req.param() as Record<string, string | undefined>;
    const org = (q.org ?? q.organization)!;
    return { org, namespace: q.namespace ?? org, name: q.name!, provider: q.provider! };
  };

  const patch = async (c: Context<AppEnv>, next: Next) => {
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const { module } = await manageableModule(deps, p, org, namespace, name, provider);
    const row = await vcsModuleOf(deps, module);
    if (!row) return next();
    const { attributes: a } = await readResource(c, 'registry-modules', updateVcsModuleSchema);
    await updateVcsModule(deps, p, module, row, { noCode: a['no-code'], testsEnabled: a['test-config']?.['tests-enabled'], vcsRepo: a['vcs-repo'] });
    return jsonApi(c, { data: await renderModule(deps, module, true) });
  };
  app.patch(PRIVATE, patch);
  app.patch(`${PRIVATE}/`, patch);

  const createVersion = async (c: Context<AppEnv>, next: Next) => {
    // registry-modules/actions/delete/:org/:name with a module named "versions" is the registry's.
    if (c.req.param('organization') === 'actions') return next();
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const { module } = await manageableModule(deps, p, org, namespace, name, provider);
    const row = await vcsModuleOf(deps, module);
    if (!row) return next();
    const { attributes: a } = await readResource(c, 'registry-module-versions', createVcsVersionSchema);
    const v = await createBranchVersion(deps, p, module, row, { version: a.version, commitSha: a['commit-sha'] });
    return jsonApi(c, { data: renderVersion(module, v) }, 201);
  };
  app.post(`${PRIVATE}/versions`, createVersion);
  app.post('/registry-modules/:organization/:name/:provider/versions', createVersion);

  app.post(`${PRIVATE}/actions/resync`, async (c) => {
    const p = requirePrincipal(c);
    const { org, namespace, name, provider } = coordinates(c);
    const m = await resyncModule(deps, p, org, namespace, name, provider);
    return jsonApi(c, { data: await renderModule(deps, m, true) });
  });

  // For adding the hook by hand when Terrace could not: module managers read the URL and secret.
  app.get(`${PRIVATE}/vcs-webhook`, async (c) => {
    const { org, namespace, name, provider } = coordinates(c);
    const w = await webhookDetails(deps, requirePrincipal(c), org, namespace, name, provider);
    return jsonApi(c, {
      data: {
        id: w.row.webhook_uuid,
        type: 'registry-module-webhooks',
        attributes: {
          url: w.url,
          secret: w.secret,
          'content-type': 'json',
          events: w.row.service_provider.startsWith('gitlab') ? ['tag_push_events'] : ['push', 'create'],
          registered: w.row.webhook_hook_id !== null,
          'hook-id': w.row.webhook_hook_id,
          error: w.row.webhook_error,
        },
        relationships: { 'registry-module': { data: { type: 'registry-modules', id: w.module.id } } },
      },
    });
  });

  return app;
}

/** POST /webhooks/vcs/:uuid: outside /api, no token; the uuid finds the module, the signature proves the sender. */
export function vcsWebhookRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post('/webhooks/vcs/:uuid', async (c) => {
    capabilityUrl();
    const tooLarge = () => payloadTooLarge(`a webhook delivery may be at most ${MAX_WEBHOOK_BYTES} bytes`);
    const chunks: Buffer[] = [];
    for await (const chunk of limitedBody(c, MAX_WEBHOOK_BYTES, tooLarge)) chunks.push(chunk as Buffer);
    const out = await receiveWebhook(deps, c.req.param('uuid'), (n) => c.req.header(n), Buffer.concat(chunks));
    return c.json(out.body, out.status);
  });
  return app;
}
