import type { OrgAccess } from '../organizations/access.js';

/** What a principal may do with the workspaces of one organization (Terrace grants per organization). */
export interface WorkspaceAccess {
  org: OrgAccess;
  /** See the workspace and its current outputs (sensitive values as null). */
  readOutputs: boolean;
  /** Read state versions, their files, and sensitive output values. */
  readStateVersions: boolean;
  /** Create, change, lock and delete workspaces; create state versions. */
  manage: boolean;
}

export function workspaceAccess(a: OrgAccess): WorkspaceAccess {
  const manage = a.member && (a.owner || a.organizationToken || a.permissions['manage-workspaces']);
  return {
    org: a,
    manage,
    readStateVersions: manage,
    readOutputs: manage || (a.member && a.permissions['read-state-outputs']),
  };
}
