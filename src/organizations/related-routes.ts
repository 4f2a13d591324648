import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { readJson, readResource } from '../http/body.js';
import { notFound, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { isSiteAdmin, principalLabel } from '../identity/principal.js';
import { newId } from '../ids.js';
import { canAdministerOrganization, getOrganizationByName, orgAccess } from './access.js';
import { optionalParam } from './params.js';
import { effectiveDataRetentionPolicy } from './retention.js';
import { serializeAgentPool, serializeOrganizationRef, serializeRetentionPolicy } from './serialize.js';
import { visibleOrganization } from './service.js';
import { getAgentPool, getDataRetentionPolicy, getOrganizationById, listAgentPools, listConsumers, listProducers } from './store.js';

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
    const { org, access } = await visibleOrganization(deps, p, c.req.param('name'));
    if (!canAdministerOrganization(access)) throw notFound('only the owners of an organization may create agent pools');
    const { attributes: a } = await readResource(c, 'agent-pools', createPoolSchema);
    const pool = {
      id: newId('apool'),
      organization_id: org.id,
      name: a.name,
      name_lower: a.name.toLowerCase(),
      organization_scoped: a['organization-scoped'] === false ? 0 : 1,
      created_at: rfc3339(deps.clock.now()),
    };
    try {
      await deps.db.insertInto('agent_pools').values(pool).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw unprocessable(`name: an agent pool named "${a.name}" already exists in this organization`, '/data/attributes/name');
      throw err;
    }
    deps.logger.info({ actor: principalLabel(p), organization: org.id, agentPool: pool.id }, 'agent pool created');
    return jsonApi(c, { data: serializeAgentPool(pool, org.name) }, 201);
  });

  app.get('/agent-pools/:id', async (c) => {
    const p = requirePrincipal(c);
    const pool = await getAgentPool(deps.db, c.req.param('id'));
    const org = pool ? await getOrganizationById(deps.db, pool.organization_id) : undefined;
    if (!pool || !org || !(await orgAccess(deps.db, p, org.id)).member) throw notFound();
    return jsonApi(c, { data: serializeAgentPool(pool, org.name) });
  });

  // ---- module producers ----

  app.get('/organizations/:name/relationships/module-producers', async (c) => {
    const { org } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    const page = parsePage(c);
    const { rows, total } = await listProducers(deps.db, org.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map(serializeOrganizationRef), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  async function adminOrganization(c: { req: { param(k: string): string } }, p: ReturnType<typeof requirePrincipal>) {
    if (!isSiteAdmin(p)) throw notFound();
    const org = await getOrganizationByName(deps.db, c.req.param('name'));
    if (!org) throw notFound(`organization "${c.req.param('name')}" not found`);
    return org;
  }

  app.get('/admin/organizations/:name/relationships/module-consumers', async (c) => {
    const org = await adminOrganization(c, requirePrincipal(c));
    const page = parsePage(c);
    const { rows, total } = await listConsumers(deps.db, org.id, { limit: page.size, offset: page.offset });
    return jsonApi(c, { data: rows.map(serializeOrganizationRef), ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  /** TFE's admin API: replaces the set of organizations that may use :name's private modules. */
  app.patch('/admin/organizations/:name/relationships/module-consumers', async (c) => {
    const p = requirePrincipal(c);
    const producer = await adminOrganization(c, p);
    const body = await readJson(c);
    if (!isObject(body) || !Array.isArray(body.data)) {
      throw unprocessable('the body must be {"data":[{"type":"organizations","id":"<name>"}, …]} (an empty array removes every consumer)', '/data');
    }
    const consumerIds = new Set<string>();
    for (const [i, item] of body.data.entries()) {
      if (!isObject(item)) throw unprocessable(`data[${i}] must be an object`, `/data/${i}`);
      if (item.type !== 'organizations') throw unprocessable(`data[${i}].type must be "organizations", got ${JSON.stringify(item.type ?? null)}`, `/data/${i}/type`);
      if (typeof item.id !== 'string' || item.id === '') throw unprocessable(`data[${i}].id must be an organization name`, `/data/${i}/id`);
      const consumer = await getOrganizationByName(deps.db, item.id);
      if (!consumer) throw unprocessable(`data[${i}].id: organization "${item.id}" does not exist`, `/data/${i}/id`);
      if (consumer.id === producer.id) throw unprocessable(`data[${i}].id: an organization cannot be its own module consumer`, `/data/${i}/id`);
      consumerIds.add(consumer.id);
    }
    const now = rfc3339(deps.clock.now());
    await inTransaction(deps.db, async (tx) => {
      await tx.deleteFrom('organization_module_producers').where('producer_id', '=', producer.id).execute();
      for (const id of consumerIds) {
        await tx.insertInto('organization_module_producers').values({ organization_id: id, producer_id: producer.id, created_at: now }).execute();
      }
    });
    deps.logger.info({ actor: principalLabel(p), organization: producer.id, consumers: [...consumerIds] }, 'module consumers updated');
    return c.body(null, 204);
  });

  // ---- data retention policy: explicit, else the installation default ----

  const DRP = '/organizations/:name/relationships/data-retention-policy';

  app.get(DRP, async (c) => {
    const { org } = await visibleOrganization(deps, requirePrincipal(c), c.req.param('name'));
    const policy = await effectiveDataRetentionPolicy(deps.db, deps.config, org.id);
    if (!policy) throw notFound(`organization "${org.name}" has no data retention policy and this installation sets no default`);
    return jsonApi(c, { data: serializeRetentionPolicy(policy, org.name) });
  });

  const setPolicy = async (c: Context<AppEnv>) => {
    const p = requirePrincipal(c);
    const { org, access } = await visibleOrganization(deps, p, c.req.param('name')!);
    if (!canAdministerOrganization(access)) throw notFound('only the owners of an organization may set its data retention policy');
    const body = await readJson(c);
    if (!isObject(body) || !isObject(body.data)) throw unprocessable('"data" must be an object', isObject(body) ? '/data' : '');
    const data = body.data;
    const type = data.type as string;
    if (!(DRP_TYPES as readonly string[]).includes(type)) {
      throw unprocessable(`data.type must be one of ${DRP_TYPES.join(', ')}, got ${JSON.stringify(data.type ?? null)}`, '/data/type');
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
    const now = rfc3339(deps.clock.now());
    const existing = await getDataRetentionPolicy(deps.db, org.id);
    const id = existing && existing.kind === kind ? existing.id : newId('drp');
    await inTransaction(deps.db, async (tx) => {
      await tx.deleteFrom('data_retention_policies').where('organization_id', '=', org.id).execute();
      await tx
        .insertInto('data_retention_policies')
        .values({ id, organization_id: org.id, kind, delete_older_than_n_days: n, created_at: existing?.created_at ?? now, updated_at: now })
        .execute();
    });
    deps.logger.info({ actor: principalLabel(p), organization: org.id, policy: id, kind, days: n }, 'data retention policy set');
    const policy = (await effectiveDataRetentionPolicy(deps.db, deps.config, org.id))!;
    // Never 204 here: go-tfe decodes the policy from the body.
    return jsonApi(c, { data: serializeRetentionPolicy(policy, org.name, type === 'data-retention-policies') }, existing ? 200 : 201);
  };
  app.post(DRP, setPolicy);
  app.patch(DRP, setPolicy);

  app.delete(DRP, async (c) => {
    const p = requirePrincipal(c);
    const { org, access } = await visibleOrganization(deps, p, c.req.param('name'));
    if (!canAdministerOrganization(access)) throw notFound('only the owners of an organization may remove its data retention policy');
    const existing = await getDataRetentionPolicy(deps.db, org.id);
    if (!existing) throw notFound(`organization "${org.name}" has no data retention policy of its own to remove`);
    await deps.db.deleteFrom('data_retention_policies').where('id', '=', existing.id).execute();
    deps.logger.info({ actor: principalLabel(p), organization: org.id, policy: existing.id }, 'data retention policy removed');
    return c.body(null, 204);
  });

  return app;
}
