import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import { notFound, unauthorized } from '../http/errors.js';
import type { Principal } from '../identity/principal.js';
import { consumableOrganizationIds, orgAccess } from '../organizations/access.js';
import type { ModuleWithOrg } from './store.js';

/**
 * Registry reads: a token is needed unless TERRACE_PUBLIC_READ is on. Returns the organizations
 * whose modules the caller may read, or 'all' (site admins, public read).
 */
export async function readableOrganizations(deps: Deps, c: Context<AppEnv>): Promise<string[] | 'all'> {
  const principal = c.get('principal');
  if (deps.config.publicRead) return 'all';
  if (!principal) throw unauthorized();
  // Members read their organizations' modules, and those of the organizations producing for them.
  return consumableOrganizationIds(deps.db, principal);
}

/** 404 unless the caller may read this module (the module's existence is not revealed). */
export async function assertCanRead(deps: Deps, c: Context<AppEnv>, module: ModuleWithOrg | undefined): Promise<ModuleWithOrg> {
  const orgs = await readableOrganizations(deps, c);
  if (!module || (orgs !== 'all' && !orgs.includes(module.organization_id))) throw notFound();
  return module;
}

/** Publishing and deleting need the manage-modules permission (owners and site admins have it). */
export async function canManageModules(deps: Deps, p: Principal, organizationId: string): Promise<boolean> {
  const access = await orgAccess(deps.db, p, organizationId);
  return access.permissions['manage-modules'];
}
