import { rfc3339 } from '../clock.js';
import { isUniqueViolation } from '../db/index.js';
import type { DataRetentionPolicyKind } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { isSiteAdmin, principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import { canAdministerOrganization, orgAccess, type OrgAccess, type OrganizationRow } from './access.js';
import { effectiveDataRetentionPolicy, type EffectivePolicy } from './retention.js';
import {
  deleteDataRetentionPolicy,
  getAgentPool,
  getDataRetentionPolicy,
  getOrganizationById,
  getOrganizationByName,
  insertAgentPool,
  replaceDataRetentionPolicy,
  replaceModuleConsumers,
  type AgentPoolRow,
} from './store.js';

type Target = { org: OrganizationRow; access: OrgAccess };

// ---- agent pools ----

const POOL_OWNERS_ONLY = 'only the owners of an organization may create agent pools';

export async function createAgentPool(deps: Deps, p: Principal, target: Target, a: { name: string; organizationScoped: boolean }): Promise<AgentPoolRow> {
  authorize(canAdministerOrganization(target.access), () => notFound(POOL_OWNERS_ONLY));
  const pool: AgentPoolRow = {
    id: newId('apool'),
    organization_id: target.org.id,
    name: a.name,
    name_lower: a.name.toLowerCase(),
    organization_scoped: a.organizationScoped ? 1 : 0,
    created_at: rfc3339(deps.clock.now()),
  };
  try {
    await insertAgentPool(deps.db, pool);
  } catch (err) {
    if (isUniqueViolation(err)) throw unprocessable(`name: an agent pool named ${quoteValue(a.name)} already exists in this organization`, '/data/attributes/name');
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), organization: target.org.id, agentPool: pool.id }, 'agent pool created');
  return pool;
}

/** An agent pool, to members of its organization; 404 otherwise. */
export async function visibleAgentPool(deps: Deps, p: Principal, id: string): Promise<{ pool: AgentPoolRow; org: OrganizationRow }> {
  const pool = await getAgentPool(deps.db, id);
  const org = pool ? await getOrganizationById(deps.db, pool.organization_id) : undefined;
  if (!pool || !org || !(await orgAccess(deps.db, p, org.id)).member) throw notFound();
  return { pool, org };
}

// ---- module consumers (TFE's admin API) ----

/** An organization, for site admins only (anyone else: 404). Call before reading a body. */
export async function organizationForSiteAdmin(deps: Deps, p: Principal, name: string): Promise<OrganizationRow> {
  authorize(isSiteAdmin(p), () => notFound());
  const org = await getOrganizationByName(deps.db, name);
  if (!org) throw notFound(`organization ${quoteValue(name)} not found`);
  return org;
}

/** Replaces the set of organizations that may use producer's private modules, named by organization name. */
export async function setModuleConsumers(deps: Deps, p: Principal, producer: OrganizationRow, consumerNames: string[]): Promise<void> {
  authorize(isSiteAdmin(p), () => notFound());
  const consumerIds = new Set<string>();
  for (const [i, name] of consumerNames.entries()) {
    const consumer = await getOrganizationByName(deps.db, name);
    if (!consumer) throw unprocessable(`data[${i}].id: organization ${quoteValue(name)} does not exist`, `/data/${i}/id`);
    if (consumer.id === producer.id) throw unprocessable(`data[${i}].id: an organization cannot be its own module consumer`, `/data/${i}/id`);
    consumerIds.add(consumer.id);
  }
  await replaceModuleConsumers(deps.db, producer.id, [...consumerIds], rfc3339(deps.clock.now()));
  deps.logger.info({ actor: principalLabel(p), organization: producer.id, consumers: [...consumerIds] }, 'module consumers updated');
}

// ---- data retention policy: explicit, else the installation default ----

/** Sets the organization's own policy; created tells 201 from 200. */
export async function setDataRetentionPolicy(
  deps: Deps,
  p: Principal,
  target: Target,
  policy: { kind: DataRetentionPolicyKind; days: number | null },
): Promise<{ policy: EffectivePolicy; created: boolean }> {
  const { org, access } = target;
  authorize(canAdministerOrganization(access), () => notFound('only the owners of an organization may set its data retention policy'));
  const now = rfc3339(deps.clock.now());
  const existing = await getDataRetentionPolicy(deps.db, org.id);
  const id = existing && existing.kind === policy.kind ? existing.id : newId('drp');
  await replaceDataRetentionPolicy(deps.db, {
    id,
    organization_id: org.id,
    kind: policy.kind,
    delete_older_than_n_days: policy.days,
    created_at: existing?.created_at ?? now,
    updated_at: now,
  });
  deps.logger.info({ actor: principalLabel(p), organization: org.id, policy: id, kind: policy.kind, days: policy.days }, 'data retention policy set');
  return { policy: (await effectiveDataRetentionPolicy(deps.db, deps.config, org.id))!, created: !existing };
}

export async function removeDataRetentionPolicy(deps: Deps, p: Principal, target: Target): Promise<void> {
  const { org, access } = target;
  authorize(canAdministerOrganization(access), () => notFound('only the owners of an organization may remove its data retention policy'));
  const existing = await getDataRetentionPolicy(deps.db, org.id);
  if (!existing) throw notFound(`organization ${quoteValue(org.name)} has no data retention policy of its own to remove`);
  await deleteDataRetentionPolicy(deps.db, existing.id);
  deps.logger.info({ actor: principalLabel(p), organization: org.id, policy: existing.id }, 'data retention policy removed');
}
