import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue } from '../http/errors.js';
import type { Principal } from '../identity/principal.js';
import { orgAccess, type OrgAccess, type OrganizationRow } from '../organizations/access.js';
import { visibleOrganization } from '../organizations/service.js';
import { getOrganizationById } from '../organizations/store.js';
import { getOAuthClient, getOAuthToken, type OAuthClientRow, type OAuthTokenRow } from './store.js';

/** Owners, teams with manage-vcs-settings and the organization token see and manage VCS settings. */
export function canManageVcs(access: OrgAccess): boolean {
  return access.member && (access.owner || access.organizationToken || access.permissions['manage-vcs-settings']);
}

/**
 * The organization named in a path, if the caller may see and manage its VCS settings (reads
 * included: OAuth clients and the event log are for VCS managers only); 404 otherwise.
 */
export async function organizationForVcs(deps: Deps, p: Principal, name: string): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  const target = await visibleOrganization(deps, p, name);
  authorize(canManageVcs(target.access), () =>
    notFound(`organization ${quoteValue(name)} not found, or you may not manage its VCS settings (owners, teams with manage-vcs-settings and the organization token may)`),
  );
  return target;
}

export interface ManagedClient {
  client: OAuthClientRow;
  org: OrganizationRow;
}

export interface ManagedToken {
  token: OAuthTokenRow;
  client: OAuthClientRow;
  org: OrganizationRow;
}

async function managedOrg(deps: Deps, p: Principal, organizationId: string | undefined): Promise<OrganizationRow | undefined> {
  const org = organizationId ? await getOrganizationById(deps.db, organizationId) : undefined;
  if (!org) return undefined;
  return canManageVcs(await orgAccess(deps.db, p, org.id)) ? org : undefined;
}

/** An OAuth client the caller may see and manage; 404 for everyone else. */
export async function clientForManagement(deps: Deps, p: Principal, id: string): Promise<ManagedClient> {
  const client = await getOAuthClient(deps.db, id);
  const org = await managedOrg(deps, p, client?.organization_id);
  authorize(client !== undefined && org !== undefined, () => notFound(`OAuth client ${quoteValue(id)} not found, or you may not manage VCS settings in its organization`));
  return { client: client!, org: org! };
}

/** An OAuth token the caller may see and manage; 404 for everyone else. */
export async function tokenForManagement(deps: Deps, p: Principal, id: string): Promise<ManagedToken> {
  const token = await getOAuthToken(deps.db, id);
  const client = token ? await getOAuthClient(deps.db, token.oauth_client_id) : undefined;
  const org = await managedOrg(deps, p, client?.organization_id);
  authorize(token !== undefined && client !== undefined && org !== undefined, () =>
    notFound(`OAuth token ${quoteValue(id)} not found, or you may not manage VCS settings in its organization`),
  );
  return { token: token!, client: client!, org: org! };
}
