import type { Deps } from '../deps.js';
import type { Principal } from '../identity/principal.js';
import { orgAccess } from '../organizations/access.js';

/** Publishing and deleting need the manage-modules permission (owners and site admins have it). */
export async function canManageModules(deps: Deps, p: Principal, organizationId: string): Promise<boolean> {
  const access = await orgAccess(deps.db, p, organizationId);
  return access.permissions['manage-modules'];
}
