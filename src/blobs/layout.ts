/**
 * The one blob-key layout. Every key Terrace writes is built here, so a kind of upload cannot
 * invent its own and an organization's (or a workspace's) bytes are always under prefixes its
 * deletion sweeps. Keys already stored in rows keep working: this spells the layout that was
 * in use, it does not change it.
 *
 *   modules/<organization id>/<module id>/<version id>.tar.gz
 *   organizations/<organization id>/workspaces/<workspace id>/state-versions/<sv id>.json
 *                                                                      …/<sv id>-json-state.json
 *                                                                      …/<sv id>-json-outputs.json
 */

/** Everything published to the module registry (start-up recovery sweeps orphans under it). */
export const MODULES_PREFIX = 'modules/';

export function moduleArchiveKey(organizationId: string, moduleId: string, versionId: string): string {
  return `${MODULES_PREFIX}${organizationId}/${moduleId}/${versionId}.tar.gz`;
}

/** Everything of one workspace; under its organization's prefix, so deleting that covers it. */
export function workspacePrefix(organizationId: string, workspaceId: string): string {
  return `organizations/${organizationId}/workspaces/${workspaceId}/`;
}

/** The state file, JSON state and JSON outputs of one state version. */
export function stateVersionKeys(organizationId: string, workspaceId: string, stateVersionId: string) {
  const base = `${workspacePrefix(organizationId, workspaceId)}state-versions/${stateVersionId}`;
  return { state: `${base}.json`, jsonState: `${base}-json-state.json`, jsonOutputs: `${base}-json-outputs.json` };
}

/** Blob prefixes that belong to one organization; everything under them goes with it. */
export function organizationPrefixes(organizationId: string): string[] {
  return [`organizations/${organizationId}/`, `${MODULES_PREFIX}${organizationId}/`];
}
