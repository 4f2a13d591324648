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
 *                                                   …/configuration-versions/<cv id>.tar.gz
 *                                                   …/runs/<run id>/plan.json
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

/** The uploaded configuration (tar.gz) of one configuration version. */
export function configurationVersionKey(organizationId: string, workspaceId: string, configurationVersionId: string): string {
  return `${workspacePrefix(organizationId, workspaceId)}configuration-versions/${configurationVersionId}.tar.gz`;
}

/** The plan JSON (`terraform show -json`) an executor handed over for a run. */
export function planJsonKey(organizationId: string, workspaceId: string, runId: string): string {
  return `${workspacePrefix(organizationId, workspaceId)}runs/${runId}/plan.json`;
}

/** Blob prefixes that belong to one organization; everything under them goes with it. */
export function organizationPrefixes(organizationId: string): string[] {
  return [`organizations/${organizationId}/`, `${MODULES_PREFIX}${organizationId}/`];
}

/**
 * Blob kinds that can hold secrets, sealed at rest (src/blobs/sealed.ts). A new kind is covered
 * by adding its pattern here; module archives are published
 * code and stay as stored, so presigned downloads keep working.
 */
export const SENSITIVE_BLOB_KINDS: readonly { kind: string; pattern: RegExp }[] = [
  { kind: 'state file', pattern: /^organizations\/[^/]+\/workspaces\/[^/]+\/state-versions\/[^/]+(?<!-json-state|-json-outputs)\.json(\.sealed)?$/ },
  { kind: 'JSON state', pattern: /^organizations\/[^/]+\/workspaces\/[^/]+\/state-versions\/[^/]+-json-state\.json(\.sealed)?$/ },
  { kind: 'JSON outputs', pattern: /^organizations\/[^/]+\/workspaces\/[^/]+\/state-versions\/[^/]+-json-outputs\.json(\.sealed)?$/ },
  { kind: 'configuration version', pattern: /^organizations\/[^/]+\/workspaces\/[^/]+\/configuration-versions\/[^/]+\.tar\.gz(\.sealed)?$/ },
  { kind: 'plan JSON', pattern: /^organizations\/[^/]+\/workspaces\/[^/]+\/runs\/[^/]+\/plan\.json(\.sealed)?$/ },
];

export function isSensitiveBlobKey(key: string): boolean {
  return SENSITIVE_BLOB_KINDS.some((k) => k.pattern.test(key));
}

/**
 * Where the upkeep job writes the sealed copy of a blob stored before encryption: a new key, so
 * the row flips from the old blob to the new one in one step and nothing is overwritten in place.
 */
export function sealedCopyKey(key: string): string {
  return `${key}.sealed`;
}
