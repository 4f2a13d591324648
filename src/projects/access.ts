import type { OrgAccess } from '../organizations/access.js';

/**
 * What a principal may do with the projects of one organization. Terrace grants workspace access
 * per organization, so whoever sees the organization's workspaces sees every project (each holds
 * only workspaces they can see); manage-projects adds creating, renaming and deleting projects.
 */
export interface ProjectAccess {
  org: OrgAccess;
  read: boolean;
  manage: boolean;
}

export function projectAccess(a: OrgAccess): ProjectAccess {
  const manage = a.member && (a.owner || a.organizationToken || a.permissions['manage-projects']);
  const readWorkspaces = a.permissions['manage-workspaces'] || a.permissions['read-state-outputs'];
  return { org: a, manage, read: a.member && (manage || readWorkspaces) };
}
