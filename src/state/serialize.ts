import { rfc3339 } from '../clock.js';
import type { Deps } from '../deps.js';
import type { ResourceObject } from '../http/jsonapi.js';
import type { OutputRow, StateVersionRow } from './store.js';

const DOWNLOAD_PURPOSE = 'state-file-url';
export type StateFile = 'state.json' | 'json-state.json';

function downloadUrl(deps: Deps, svId: string, file: StateFile): string {
  const expiresAt = new Date(deps.clock.now().getTime() + deps.config.archiveUrlTtlSeconds * 1000);
  return `${deps.config.publicUrl}/state-files/${svId}/${deps.secrets.capability(DOWNLOAD_PURPOSE, `${svId}:${file}`, expiresAt)}/${file}`;
}

/** Checks a download capability; false for tampered, foreign or expired ones. */
export function verifyDownload(deps: Deps, svId: string, file: string, capability: string): boolean {
  return deps.secrets.checkCapability(DOWNLOAD_PURPOSE, `${svId}:${file}`, capability, deps.clock.now());
}

export interface StateVersionView {
  /** The caller may read state files: download URLs are included. */
  readFiles: boolean;
  outputIds: string[];
  /** Only in the create response of the upload-URL variant. */
  uploadUrls?: { state: string; jsonState: string };
}

/**
 * go-tfe's StateVersion. Async attributes (terraform-version, outputs) are only final once
 * resources-processed is true. `resources`, `modules` and `providers` are left out: go-tfe's
 * field types for them do not match HCP's payloads.
 */
export function serializeStateVersion(deps: Deps, sv: StateVersionRow, view: StateVersionView): ResourceObject {
  const finalized = sv.status === 'finalized';
  return {
    id: sv.id,
    type: 'state-versions',
    attributes: {
      'created-at': rfc3339(sv.created_at),
      status: sv.status,
      serial: sv.serial,
      lineage: sv.lineage,
      md5: sv.md5,
      size: sv.size,
      'state-version': sv.state_format_version,
      'terraform-version': sv.terraform_version,
      'resources-processed': sv.resources_processed === 1,
      'resource-count': sv.resources_processed === 1 ? sv.resource_count : null,
      'hosted-state-download-url': view.readFiles && finalized && sv.blob_key ? downloadUrl(deps, sv.id, 'state.json') : null,
      'hosted-json-state-download-url': view.readFiles && sv.json_state_blob_key ? downloadUrl(deps, sv.id, 'json-state.json') : null,
      'hosted-state-upload-url': view.uploadUrls?.state ?? null,
      'hosted-json-state-upload-url': view.uploadUrls?.jsonState ?? null,
      'vcs-commit-sha': null,
      'vcs-commit-url': null,
    },
    relationships: {
      workspace: { data: { id: sv.workspace_id, type: 'workspaces' } },
      run: { data: null },
      outputs: { data: view.outputIds.map((id) => ({ id, type: 'state-version-outputs' })) },
    },
    links: { self: `/api/v2/state-versions/${sv.id}` },
  };
}

/** One output. Sensitive values are null unless reveal (show-by-id for callers who may read state versions). */
export function serializeOutput(deps: Deps, o: OutputRow, reveal: boolean): ResourceObject {
  const sensitive = o.sensitive === 1;
  let value: unknown = null;
  if (!sensitive) value = JSON.parse(o.value);
  else if (reveal) value = JSON.parse(deps.secrets.decrypt(o.value));
  return {
    id: o.id,
    type: 'state-version-outputs',
    attributes: {
      name: o.name,
      sensitive,
      type: o.type,
      value,
      'detailed-type': JSON.parse(o.detailed_type),
    },
    links: { self: `/api/v2/state-version-outputs/${o.id}` },
  };
}
