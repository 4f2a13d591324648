import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readResource } from '../http/body.js';
import { jsonApi, type ResourceObject } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { serializeToken } from '../identity/serialize.js';
import { orgAccess, type OrganizationRow } from './access.js';
import { includeSet, optionalParam } from './params.js';
import { entitlementsFor } from './entitlements.js';
import { serializeEntitlementSet, serializeOrganization } from './serialize.js';
import {
  createOrganization,
  createOrganizationToken,
  deleteOrganizationToken,
  destroyOrganization,
  organizationForAdministration,
  organizationForTokens,
  organizationToken,
  organizationView,
  poolFromRelationships,
  requireOrganizationCreator,
  updateOrganization,
  visibleOrganization,
  visibleOrganizations,
} from './service.js';
import { createOrganizationSchema, updateOrganizationSchema } from './settings.js';
import { readTokenOptions } from './tokens.js';

/** Organizations: CRUD, the entitlement set, and the organization token. */
export function organizationRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  const included = (orgs: OrganizationRow[], include: Set<string>): ResourceObject[] =>
    include.has('entitlement_set') || include.has('entitlement-set') ? orgs.map((o) => serializeEntitlementSet(o, entitlementsFor(deps.config.edition))) : [];

  app.get('/organizations', async (c) => {
    const p = requirePrincipal(c);
    const page = parsePage(c);
    const filter = { q: optionalParam(c, 'q'), name: optionalParam(c, 'q[name]'), email: optionalParam(c, 'q[email]') };
    // Neither page parameter: the whole list, without pagination metadata (HCP's documented quirk).
    const { rows, total } = await visibleOrganizations(deps, p, filter, page.explicit ? { limit: page.size, offset: page.offset } : undefined);
    const data: ResourceObject[] = [];
    for (const { org, access } of rows) data.push(serializeOrganization(org, await organizationView(deps, org, access)));
    const paging = page.explicit ? pageLinksAndMeta(c, deps.config.publicUrl, page, total!) : {};
    return jsonApi(c, { data, included: included(rows.map((r) => r.org), includeSet(c)), ...paging });
  });

  app.post('/organizations', async (c) => {
    const p = requirePrincipal(c);
    requireOrganizationCreator(p);
    const { attributes, relationships } = await readResource(c, 'organizations', createOrganizationSchema);
    const org = await createOrganization(deps, p, attributes, poolFromRelationships(relationships));
    const access = await orgAccess(deps.db, p, org.id);
    return jsonApi(c, { data: serializeOrganization(org, await organizationView(deps, org, access)), included: [serializeEntitlementSet(org, entitlementsFor(deps.config.edition))] }, 201);
  });

  app.get('/organizations/:name', async (c) => {
    const { org, access } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    return jsonApi(c, { data: serializeOrganization(org, await organizationView(deps, org, access)), included: included([org], includeSet(c)) });
  });

  app.patch('/organizations/:name', async (c) => {
    const p = requirePrincipal(c);
    const { org, access } = await organizationForAdministration(deps, p, c.req.param('name'), 'only the owners of an organization may change its settings');
    const { attributes, relationships } = await readResource(c, 'organizations', updateOrganizationSchema);
    const updated = await updateOrganization(deps, p, org, access, attributes, poolFromRelationships(relationships));
    return jsonApi(c, { data: serializeOrganization(updated, await organizationView(deps, updated, access)) });
  });

  app.delete('/organizations/:name', async (c) => {
    const p = requirePrincipal(c);
    const { org, access } = await visibleOrganization(deps, p, c.req.param('name'));
    await destroyOrganization(deps, p, org, access);
    return c.body(null, 204);
  });

  app.get('/organizations/:name/entitlement-set', async (c) => {
    const { org } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    return jsonApi(c, { data: serializeEntitlementSet(org, entitlementsFor(deps.config.edition)) });
  });

  // ---- the organization token: one per organization, owners only ----

  app.get('/organizations/:name/authentication-token', async (c) => {
    const p = requirePrincipal(c);
    const row = await organizationToken(deps, p, await organizationForTokens(deps, p, c.req.param('name')));
    return jsonApi(c, { data: serializeToken(row) });
  });

  app.post('/organizations/:name/authentication-token', async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForTokens(deps, p, c.req.param('name'));
    const opts = await readTokenOptions(c, deps.clock.now());
    const { row, token } = await createOrganizationToken(deps, p, target, opts);
    return jsonApi(c, { data: serializeToken(row, token) }, 201);
  });

  app.delete('/organizations/:name/authentication-token', async (c) => {
    const p = requirePrincipal(c);
    await deleteOrganizationToken(deps, p, await organizationForTokens(deps, p, c.req.param('name')));
    return c.body(null, 204);
  });

  return app;
}
