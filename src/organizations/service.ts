import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Queryable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { ApiError, notFound, quoteValue, unprocessable } from '../http/errors.js';
import { ApiErrors } from '../http/jsonapi.js';
import { isSiteAdmin, principalLabel, type Principal } from '../identity/principal.js';
import { deleteToken, findOwnedToken, type TokenRow } from '../identity/store.js';
import { newId } from '../ids.js';
import {
  canAdministerOrganization,
  memberOrganizationIds,
  orgAccess,
  type OrgAccess,
  type OrganizationRow,
} from './access.js';
import { runOrganizationCreateHooks, runOrganizationDeleteHooks } from './hooks.js';
import { effectiveDataRetentionPolicy } from './retention.js';
import type { OrganizationView } from './serialize.js';
import { DEFAULT_SETTINGS, PLAIN_SETTINGS, parseSettings, type OrganizationInput, type OrgSettings } from './settings.js';
import {
  countOrganizations,
  deleteOrganizationRow,
  getAgentPool,
  getOrganizationByName,
  insertMembership,
  insertOrganization,
  listOrganizations,
  updateOrganizationRow,
  type OrganizationFilter,
} from './store.js';
import { replaceToken, type TokenOptions } from './tokens.js';

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
  if (!org) throw notFound(`organization ${quoteValue(name)} not found, or you are not authorized to see it`);
  const access = await orgAccess(deps.db, principal, org.id);
  if (!access.member) throw notFound(`organization ${quoteValue(name)} not found, or you are not authorized to see it`);
  return { org, access };
}

/**
 * The organization named in a path, if the caller may administer it (owners and site admins);
 * 404 with refusal otherwise. Call before reading a body.
 */
export async function organizationForAdministration(
  deps: Deps,
  principal: Principal,
  name: string,
  refusal: string,
): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  const target = await visibleOrganization(deps, principal, name);
  authorize(canAdministerOrganization(target.access), () => notFound(refusal));
  return target;
}

/** Whoever creates an organization owns it, so only a user can. */
export function requireOrganizationCreator(p: Principal): asserts p is Extract<Principal, { kind: 'user' }> {
  authorize(p.kind === 'user', () => notFound('organizations can be created only with a user token, not a team or organization token'));
}

/**
 * The organizations the caller may see (its own; every one for site admins), each with the
 * caller's access; total only when paged.
 */
export async function visibleOrganizations(
  deps: Deps,
  p: Principal,
  f: Omit<OrganizationFilter, 'ids'>,
  page?: { limit: number; offset: number },
): Promise<{ rows: { org: OrganizationRow; access: OrgAccess }[]; total?: number }> {
  const filter: OrganizationFilter = { ...f, ids: isSiteAdmin(p) ? 'all' : await memberOrganizationIds(deps.db, p) };
  const orgs = await listOrganizations(deps.db, filter, page);
  const rows = [];
  for (const org of orgs) rows.push({ org, access: await orgAccess(deps.db, p, org.id) });
  return { rows, ...(page ? { total: await countOrganizations(deps.db, filter) } : {}) };
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
  if (d.type !== 'agent-pools') throw unprocessable(`relationships.default-agent-pool.data.type must be "agent-pools", got ${quoteValue(d.type ?? null)}`, `${POOL_REL}/data/type`);
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
        errors.push(unprocessable(`default-agent-pool-id: ${quoteValue(poolId)} is not an agent pool of this organization`, ptr));
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

const nameTaken = (name: string) => unprocessable(`name: ${quoteValue(name)} has already been taken`, ATTR('name'));

export async function createOrganization(
  deps: Deps,
  p: Principal,
  a: OrganizationInput & { name: string; email: string },
  relPool: string | null | undefined,
): Promise<OrganizationRow> {
  requireOrganizationCreator(p);
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
  try {
    await inTransaction(deps.db, async (tx) => {
      await insertOrganization(tx, org);
      await insertMembership(tx, { id: newId('ou'), organization_id: org.id, user_id: p.user.id, status: 'active', created_at: now });
      // The owners team (teams' hook) makes the creator an owner.
      await runOrganizationCreateHooks(tx, deps, org, p.user.id);
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
  authorize(canAdministerOrganization(access), () => notFound('only the owners of an organization may change its settings'));
  const settings = await resolveSettings(deps.db, org.id, parseSettings(org.attributes), a, relPool);
  const name = a.name ?? org.name;
  if (name.toLowerCase() !== org.name_lower) {
    const other = await getOrganizationByName(deps.db, name);
    if (other && other.id !== org.id) throw nameTaken(name);
  }
  const updated: OrganizationRow = { ...org, name, name_lower: name.toLowerCase(), email: a.email ?? org.email, attributes: JSON.stringify(settings) };
  try {
    await updateOrganizationRow(deps.db, updated);
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
  authorize(canAdministerOrganization(access), () => notFound('only the owners of an organization may delete it'));
  await deleteOrganizationRow(deps.db, org.id);
  deps.logger.info({ actor: principalLabel(p), organization: org.id, name: org.name }, 'organization deleted');
  await runOrganizationDeleteHooks(deps, org);
}

// ---- the organization token: one per organization, owners only ----

const TOKEN_OWNERS_ONLY = 'only the owners of an organization may manage its token';

/** The organization whose token the caller may manage; 404 otherwise. Call before reading a body. */
export function organizationForTokens(deps: Deps, p: Principal, name: string): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  return organizationForAdministration(deps, p, name, TOKEN_OWNERS_ONLY);
}

export async function organizationToken(deps: Deps, p: Principal, target: { org: OrganizationRow; access: OrgAccess }): Promise<TokenRow> {
  authorize(canAdministerOrganization(target.access), () => notFound(TOKEN_OWNERS_ONLY));
  const row = await findOwnedToken(deps.db, { kind: 'organization', organizationId: target.org.id });
  if (!row) throw notFound(`organization ${quoteValue(target.org.name)} has no organization token`);
  return row;
}

export async function createOrganizationToken(
  deps: Deps,
  p: Principal,
  target: { org: OrganizationRow; access: OrgAccess },
  opts: TokenOptions,
): Promise<{ row: TokenRow; token: string }> {
  authorize(canAdministerOrganization(target.access), () => notFound(TOKEN_OWNERS_ONLY));
  const created = await replaceToken(deps, p, { kind: 'organization', organizationId: target.org.id }, opts);
  deps.logger.info({ actor: principalLabel(p), organization: target.org.id, token: created.row.id }, 'organization token created');
  return created;
}

export async function deleteOrganizationToken(deps: Deps, p: Principal, target: { org: OrganizationRow; access: OrgAccess }): Promise<void> {
  const row = await organizationToken(deps, p, target);
  await deleteToken(deps.db, row.id);
  deps.logger.info({ actor: principalLabel(p), organization: target.org.id, token: row.id }, 'organization token deleted');
}
