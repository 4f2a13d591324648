import type { ResourceObject } from '../http/jsonapi.js';
import type { ModulePublisherView } from './hooks.js';
import { parseContents, type DetailVersion, type ModuleWithOrg, type VersionRow } from './store.js';

function parseWarnings(v: VersionRow): string[] {
  try {
    return JSON.parse(v.warnings) as string[];
  } catch {
    return [];
  }
}

/**
 * A version's status as the API names it. Terrace's own states keep their names (pending,
 * uploading, ok, errored); the ingestion states take HCP's (contract-wave2 §4.4): bytes stored
 * and being checked is reg_ingressing, an archive being produced from VCS is cloning.
 */
export function versionStatusName(status: VersionRow['status']): string {
  switch (status) {
    case 'ingesting':
      return 'reg_ingressing';
    default:
      return status;
  }
}

/** The protocol's Module object (list, search, detail). */
export function protocolModule(m: ModuleWithOrg, latest: Pick<VersionRow, 'version' | 'description' | 'published_at'> | undefined, downloads: number): Record<string, unknown> {
  const version = latest?.version ?? m.latest_version ?? '';
  return {
    id: `${m.namespace}/${m.name}/${m.provider}/${version}`,
    owner: '',
    namespace: m.namespace,
    name: m.name,
    version,
    provider: m.provider,
    description: latest?.description || m.description,
    source: '',
    published_at: latest?.published_at ?? m.created_at,
    downloads,
    verified: false,
  };
}

/** ModuleDetail: Module plus root, submodules, examples, providers and versions. */
export function protocolModuleDetail(
  m: ModuleWithOrg,
  version: DetailVersion,
  downloads: number,
  providers: string[],
  versions: string[],
): Record<string, unknown> {
  return {
    ...protocolModule(m, version, downloads),
    ...parseContents(version),
    providers,
    versions,
  };
}

const moduleLink = (m: ModuleWithOrg) => `/api/v2/organizations/${encodeURIComponent(m.namespace)}/registry-modules/private/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.name)}/${m.provider}`;

/** HCP's registry-modules resource, as go-tfe decodes it; view is what a VCS publisher adds. */
export function serializeRegistryModule(m: ModuleWithOrg, versions: VersionRow[], canManage: boolean, view?: ModulePublisherView): ResourceObject {
  const hasOk = versions.some((v) => v.status === 'ok');
  return {
    id: m.id,
    type: 'registry-modules',
    attributes: {
      name: m.name,
      namespace: m.namespace,
      provider: m.provider,
      'registry-name': 'private',
      status: view?.status ?? (hasOk ? 'setup_complete' : 'pending'),
      'version-statuses': versions.map((v) => ({ version: v.version, status: view && v.status === 'errored' ? 'reg_ingress_failed' : versionStatusName(v.status), error: v.error ?? '' })),
      'created-at': m.created_at,
      'updated-at': m.updated_at,
      'publishing-mechanism': view?.publishingMechanism ?? 'non_vcs',
      'no-code': false,
      'test-config': null,
      'vcs-repo': view?.vcsRepo ?? null,
      permissions: { 'can-delete': canManage, 'can-resync': canManage && (view?.canResync ?? false), 'can-retry': canManage && (view?.canRetry ?? false) },
    },
    relationships: {
      organization: { data: { type: 'organizations', id: m.namespace } },
    },
    links: { self: moduleLink(m) },
  };
}

export function serializeModuleVersion(m: ModuleWithOrg, v: VersionRow, uploadUrl?: string): ResourceObject {
  const links: Record<string, string> = {};
  if (uploadUrl) links.upload = uploadUrl;
  return {
    id: v.id,
    type: 'registry-module-versions',
    attributes: {
      source: 'tfe-api',
      status: versionStatusName(v.status),
      version: v.version,
      error: v.error,
      'commit-sha': v.commit_sha,
      description: v.description,
      size: v.size,
      sha256: v.sha256,
      'created-at': v.created_at,
      'updated-at': v.updated_at,
      'published-at': v.published_at,
      ...(v.status === 'ok' ? parseContents(v) : {}),
      warnings: parseWarnings(v),
    },
    relationships: {
      'registry-module': { data: { type: 'registry-modules', id: m.id } },
    },
    links,
  };
}
