import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Queryable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError, notFound, unprocessable } from '../http/errors.js';
import { ApiErrors } from '../http/jsonapi.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { newId } from '../ids.js';
import {
  canAdministerOrganization,
  getOrganizationByName,
  orgAccess,
  type OrgAccess,
  type OrganizationRow,
} from './access.js';
import { runOrganizationDeleteHooks } from './hooks.js';
import { effectiveDataRetentionPolicy } from './retention.js';
import type { OrganizationView } from './serialize.js';
import { DEFAULT_SETTINGS, PLAIN_SETTINGS, parseSettings, type OrganizationInput, type OrgSettings } from './settings.js';
import { getAgentPool } from './store.js';

export const OWNERS_TEAM_NAME = 'owners';

const ATTR = (k: string) => `/data/attributes/${k}`;
const POOL_REL = '/data/relationships/default-agent-pool';

function throwAll(errors: ApiError[]): void {
  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ApiErrors(errors);
}

/** The organization named in a path, with the caller's access; 404 when missing or invisible. */
export async function visibleOrganization(
  deps: Deps,
  principal: Principal,
  name: string,
): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  const org = await getOrganizationByName(deps.db, name);
  if (!org) throw notFound(`organization "${name}" not found, or you are not authorized to see it`);
  const access = await orgAccess(deps.db, principal, org.id);
  if (!access.member) throw notFound(`organization "${name}" not found, or you are not authorized to see it`);
  return { org, access };
}

export async function organizationView(deps: Deps, org: OrganizationRow, access: OrgAccess): Promise<OrganizationView> {
  return {
    settings: parseSettings(org.attributes),
    access,
    retention: await effectiveDataRetentionPolicy(deps.db, deps.config, org.id),
  };
}

/**
 * relationships.default-agent-pool.data (go-tfe's form): undefined when absent, null to clear,
 * else the pool id.
 */
export function poolFromRelationships(rel: Record<string, unknown>): string | null | undefined {
  const r = rel['default-agent-pool'];
  if (r === undefined) return undefined;
  if (typeof r !== 'object' || r === null || !('data' in r)) {
    throw unprocessable('relationships.default-agent-pool must be {"data":{"type":"agent-pools","id":"apool-…"}} or {"data":null}', POOL_REL);
  }
  const data = (r as { data: unknown }).data;
  if (data === null) return null;
  const d = data as { type?: unknown; id?: unknown };
  if (typeof data !== 'object' || Array.isArray(data)) throw unprocessable('relationships.default-agent-pool.data must be an object or null', `${POOL_REL}/data`);
  if (d.type !== 'agent-pools') throw unprocessable(`relationships.default-agent-pool.data.type must be "agent-pools", got ${JSON.stringify(d.type ?? null)}`, `${POOL_REL}/data/type`);
  if (typeof d.id !== 'string' || d.id === '') throw unprocessable('relationships.default-agent-pool.data.id must be a non-empty string', `${POOL_REL}/data/id`);
  return d.id;
}

/**
 * Applies an input over the current settings and enforces the rules between attributes. All
 * broken rules are reported at once, each with its pointer.
 */
export async function resolveSettings(
  db: Queryable,
  organizationId: string | null,
  current: OrgSettings,
  a: OrganizationInput,
  relPool: string | null | undefined,
): Promise<OrgSettings> {
  const errors: ApiError[] = [];
  const next: OrgSettings = { ...current };
  const target = next as unknown as Record<string, unknown>;
  for (const k of PLAIN_SETTINGS) if (a[k] !== undefined) target[k] = a[k];

  // Self-hosted rules: cost estimation needs enabling in site administration, which Terrace does
  // not offer; passing statuses for untriggered speculative plans are always off.
  if (a['cost-estimation-enabled'] === true) {
    errors.push(
      unprocessable(
        'cost-estimation-enabled: on a self-hosted installation cost estimation must also be enabled in site administration, and this installation offers none; leave it false',
        ATTR('cost-estimation-enabled'),
      ),
    );
  }
  const SPS = 'send-passing-statuses-for-untriggered-speculative-plans';
  if (a[SPS] === true) {
    errors.push(unprocessable(`${SPS}: on a self-hosted installation this is always false and cannot be changed`, ATTR(SPS)));
  }
  if (next[SPS] && next['aggregated-commit-status-enabled']) {
    const ptr = a['aggregated-commit-status-enabled'] !== undefined ? 'aggregated-commit-status-enabled' : SPS;
    errors.push(
      unprocessable(
        `aggregated-commit-status-enabled cannot be true while ${SPS} is true; set one of them to false`,
        ATTR(ptr),
      ),
    );
  }

  const attrPool = a['default-agent-pool-id'];
  if (attrPool !== undefined && relPool !== undefined && attrPool !== relPool) {
    errors.push(unprocessable('default-agent-pool-id and relationships.default-agent-pool name different pools; send one of them', `${POOL_REL}/data/id`));
  }
  const given = attrPool !== undefined ? attrPool : relPool;
  const ptr = attrPool !== undefined ? ATTR('default-agent-pool-id') : `${POOL_REL}/data/id`;
  if (next['default-execution-mode'] === 'agent') {
    const poolId = given !== undefined ? given : current['default-agent-pool-id'];
    if (!poolId) {
      errors.push(unprocessable('default-agent-pool-id is required when default-execution-mode is agent', given === undefined ? ATTR('default-agent-pool-id') : ptr));
    } else {
      const pool = await getAgentPool(db, poolId);
      if (!pool || pool.organization_id !== organizationId) {
        errors.push(unprocessable(`default-agent-pool-id: "${poolId}" is not an agent pool of this organization`, ptr));
      }
      next['default-agent-pool-id'] = poolId;
    }
  } else {
    if (given !== undefined && given !== null) {
      errors.push(unprocessable(`default-agent-pool-id must not be given when default-execution-mode is ${next['default-execution-mode']}`, ptr));
    }
    next['default-agent-pool-id'] = null;
  }
  throwAll(errors);
  return next;
}

const nameTaken = (name: string) => unprocessable(`name: "${name}" has already been taken`, ATTR('name'));

export async function createOrganization(
  deps: Deps,
  p: Principal,
  a: OrganizationInput & { name: string; email: string },
  relPool: string | null | undefined,
): Promise<OrganizationRow> {
  // Whoever creates an organization owns it, so only a user can.
  if (p.kind !== 'user') throw notFound('organizations can be created only with a user token, not a team or organization token');
  const settings = await resolveSettings(deps.db, null, DEFAULT_SETTINGS, a, relPool);
  if (await getOrganizationByName(deps.db, a.name)) throw nameTaken(a.name);
  const now = rfc3339(deps.clock.now());
  const org: OrganizationRow = {
    id: newId('org'),
    name: a.name,
    name_lower: a.name.toLowerCase(),
    email: a.email,
    attributes: JSON.stringify(settings),
    created_at: now,
  };
  const teamId = newId('team');
  try {
    await inTransaction(deps.db, async (tx) => {
      await tx.insertInto('organizations').values(org).execute();
      await tx
        .insertInto('teams')
        .values({
          id: teamId,
          organization_id: org.id,
          name: OWNERS_TEAM_NAME,
          name_lower: OWNERS_TEAM_NAME,
          is_owners: 1,
          visibility: 'organization',
          permissions: '{}',
          created_at: now,
        })
        .execute();
      await tx
        .insertInto('organization_memberships')
        .values({ id: newId('ou'), organization_id: org.id, user_id: p.user.id, status: 'active', created_at: now })
        .execute();
      await tx.insertInto('team_members').values({ team_id: teamId, user_id: p.user.id, created_at: now }).execute();
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(a.name);
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), organization: org.id, name: org.name }, 'organization created');
  return org;
}

export async function updateOrganization(
  deps: Deps,
  p: Principal,
  org: OrganizationRow,
  access: OrgAccess,
  a: OrganizationInput,
  relPool: string | null | undefined,
): Promise<OrganizationRow> {
  if (!canAdministerOrganization(access)) throw notFound('only the owners of an organization may change its settings');
  const settings = await resolveSettings(deps.db, org.id, parseSettings(org.attributes), a, relPool);
  const name = a.name ?? org.name;
  if (name.toLowerCase() !== org.name_lower) {
    const other = await getOrganizationByName(deps.db, name);
    if (other && other.id !== org.id) throw nameTaken(name);
  }
  const updated: OrganizationRow = { ...org, name, name_lower: name.toLowerCase(), email: a.email ?? org.email, attributes: JSON.stringify(settings) };
  try {
    await deps.db
      .updateTable('organizations')
      .set({ name: updated.name, name_lower: updated.name_lower, email: updated.email, attributes: updated.attributes })
      .where('id', '=', org.id)
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(name);
    throw err;
  }
  const changed = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  deps.logger.info(
    { actor: principalLabel(p), organization: org.id, changed, ...(name !== org.name ? { renamedFrom: org.name, renamedTo: name } : {}) },
    'organization updated',
  );
  return updated;
}

/** Rows go in one statement (every table cascades from organizations); bytes after commit. */
export async function destroyOrganization(deps: Deps, p: Principal, org: OrganizationRow, access: OrgAccess): Promise<void> {
  if (!canAdministerOrganization(access)) throw notFound('only the owners of an organization may delete it');
  await deps.db.deleteFrom('organizations').where('id', '=', org.id).execute();
  deps.logger.info({ actor: principalLabel(p), organization: org.id, name: org.name }, 'organization deleted');
  await runOrganizationDeleteHooks(deps, org);
}
