import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readJson, readResource } from '../http/body.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { optionalParam } from './params.js';
import {
  createAgentPool,
  organizationForSiteAdmin,
  removeDataRetentionPolicy,
  setDataRetentionPolicy,
  setModuleConsumers,
  visibleAgentPool,
} from './related.js';
import { effectiveDataRetentionPolicy } from './retention.js';
import { serializeAgentPool, serializeOrganizationRef, serializeRetentionPolicy } from './serialize.js';
import { organizationForAdministration, visibleOrganization } from './service.js';
import { listAgentPools, listConsumers, listProducers } from './store.js';

const createPoolSchema = z.object({
  name: z
    .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
    .regex(/^\S(?:[^\x00-\x1f]{0,126}\S)?$/, { error: 'must be 1-128 characters without control characters or surrounding spaces' }),
  'organization-scoped': z.boolean({ error: 'must be true or false' }).optional(),
});

const DRP_TYPES = ['data-retention-policy-delete-olders', 'data-retention-policy-dont-deletes', 'data-retention-policies'] as const;
const days = z
  .number({ error: 'must be a whole number of days' })
  .int({ error: 'must be a whole number of days' })
  .min(1, { error: 'must be at least 1 day' })
  .max(36_500, { error: 'must be at most 36500 days' });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Agent pools, module producers (and the admin side that sets them), data retention policy. */
export function organizationRelatedRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // ---- agent pools: enough for default-execution-mode "agent" to name one ----

  app.get('/organizations/:name/agent-pools', async (c) => {
    const { org } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    const page = parsePage(c);
    const { rows, total } = await listAgentPools(deps.db, org.id, optionalParam(c, 'q'), { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map((r) => serializeAgentPool(r, org.name)), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.post('/organizations/:name/agent-pools', async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForAdministration(deps, p, c.req.param('name'), 'only the owners of an organization may create agent pools');
    const { attributes: a } = await readResource(c, 'agent-pools', createPoolSchema);
    const pool = await createAgentPool(deps, p, target, { name: a.name, organizationScoped: a['organization-scoped'] !== false });
    return jsonApi(c, { data: serializeAgentPool(pool, target.org.name) }, 201);
  });

  app.get('/agent-pools/:id', async (c) => {
    const { pool, org } = await visibleAgentPool(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeAgentPool(pool, org.name) });
  });

  // ---- module producers ----

  app.get('/organizations/:name/relationships/module-producers', async (c) => {
    const { org } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    const page = parsePage(c);
    const { rows, total } = await listProducers(deps.db, org.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map(serializeOrganizationRef), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.get('/admin/organizations/:name/relationships/module-consumers', async (c) => {
    const org = await organizationForSiteAdmin(deps, requirePrincipal(c), c.req.param('name'));
    const page = parsePage(c);
    const { rows, total } = await listConsumers(deps.db, org.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map(serializeOrganizationRef), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  /** TFE's admin API: replaces the set of organizations that may use :name's private modules. */
  app.patch('/admin/organizations/:name/relationships/module-consumers', async (c) => {
    const p = requirePrincipal(c);
    const producer = await organizationForSiteAdmin(deps, p, c.req.param('name'));
    const body = await readJson(c);
    if (!isObject(body) || !Array.isArray(body.data)) {
      throw unprocessable('the body must be {"data":[{"type":"organizations","id":"<name>"}, …]} (an empty array removes every consumer)', '/data');
    }
    const names = body.data.map((item, i) => {
      if (!isObject(item)) throw unprocessable(`data[${i}] must be an object`, `/data/${i}`);
      if (item.type !== 'organizations') throw unprocessable(`data[${i}].type must be "organizations", got ${quoteValue(item.type ?? null)}`, `/data/${i}/type`);
      if (typeof item.id !== 'string' || item.id === '') throw unprocessable(`data[${i}].id must be an organization name`, `/data/${i}/id`);
      return item.id;
    });
    await setModuleConsumers(deps, p, producer, names);
    return c.body(null, 204);
  });

  // ---- data retention policy: explicit, else the installation default ----

  const DRP = '/organizations/:name/relationships/data-retention-policy';

  app.get(DRP, async (c) => {
    const { org } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    const policy = await effectiveDataRetentionPolicy(deps.db, deps.config, org.id);
    if (!policy) throw notFound(`organization ${quoteValue(org.name)} has no data retention policy and this installation sets no default`);
    return jsonApi(c, { data: serializeRetentionPolicy(policy, org.name) });
  });

  const setPolicy = async (c: Context<AppEnv>) => {
    const p = requirePrincipal(c);
    const target = await organizationForAdministration(deps, p, c.req.param('name')!, 'only the owners of an organization may set its data retention policy');
    const body = await readJson(c);
    if (!isObject(body) || !isObject(body.data)) throw unprocessable('"data" must be an object', isObject(body) ? '/data' : '');
    const data = body.data;
    const type = data.type as string;
    if (!(DRP_TYPES as readonly string[]).includes(type)) {
      throw unprocessable(`data.type must be one of ${DRP_TYPES.join(', ')}, got ${quoteValue(data.type ?? null)}`, '/data/type');
    }
    const attrs = data.attributes ?? {};
    if (!isObject(attrs)) throw unprocessable('"data.attributes" must be an object', '/data/attributes');
    const kind = type === 'data-retention-policy-dont-deletes' ? 'dont-delete' : 'delete-older';
    let n: number | null = null;
    if (kind === 'delete-older') {
      // go-tfe sends delete-older-than-n-days; one docs sample shows deleteOlderThanNDays.
      const key = attrs.deleteOlderThanNDays !== undefined && attrs['delete-older-than-n-days'] === undefined ? 'deleteOlderThanNDays' : 'delete-older-than-n-days';
      const parsed = days.safeParse(attrs[key]);
      if (!parsed.success) {
        const msg = attrs[key] === undefined ? 'is required' : parsed.error.issues[0]!.message;
        throw unprocessable(`delete-older-than-n-days ${msg}`, `/data/attributes/${key}`);
      }
      n = parsed.data;
    }
    const { policy, created } = await setDataRetentionPolicy(deps, p, target, { kind, days: n });
    // Never 204 here: go-tfe decodes the policy from the body.
    return jsonApi(c, { data: serializeRetentionPolicy(policy, target.org.name, type === 'data-retention-policies') }, created ? 201 : 200);
  };
  app.post(DRP, setPolicy);
  app.patch(DRP, setPolicy);

  app.delete(DRP, async (c) => {
    const p = requirePrincipal(c);
    const target = await organizationForAdministration(deps, p, c.req.param('name'), 'only the owners of an organization may remove its data retention policy');
    await removeDataRetentionPolicy(deps, p, target);
    return c.body(null, 204);
  });

  return app;
}
