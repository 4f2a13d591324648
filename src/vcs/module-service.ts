import { randomBytes, randomUUID } from 'node:crypto';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { notFound, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { enqueue, wakeJobs } from '../jobs/runner.js';
import type { OrganizationRow } from '../organizations/access.js';
import { getOrganizationById } from '../organizations/store.js';
import { canManageModules } from '../registry/access.js';
import type { ModulePublisherView } from '../registry/hooks.js';
import { createClonedVersion } from '../registry/publishers.js';
import { createModule, manageableModule, manageableOrganization } from '../registry/service.js';
import type { ModuleWithOrg, VersionRow } from '../registry/store.js';
import { isGitHub } from './connection.js';
import { JOB } from './module-jobs-kinds.js';
import {
  checkBranch,
  checkCommitSha,
  checkIdentifier,
  checkSourceDirectory,
  checkTagPrefix,
  checkVersion,
  inferNameAndProvider,
  type VcsRepoInput,
} from './module-settings.js';
import { getVcsModule, insertVcsModule, updateVcsModuleRow, vcsModulesByIds, type VcsModuleRow } from './module-store.js';
import { connectionForToken, recordVcsEvent, usableConnection, type VcsConnection } from './service.js';

const REPO = '/data/attributes/vcs-repo';

export const moduleAddress = (m: Pick<ModuleWithOrg, 'namespace' | 'name' | 'provider'>) => `${m.namespace}/${m.name}/${m.provider}`;

export function webhookUrl(deps: Deps, uuid: string): string {
  return `${deps.config.publicUrl.replace(/\/+$/, '')}/webhooks/vcs/${uuid}`;
}

export function webhookSecret(deps: Deps, row: Pick<VcsModuleRow, 'webhook_secret_sealed'>): string {
  return deps.secrets.decrypt(row.webhook_secret_sealed);
}

/** The vcs-repo object of a module's HCP rendering (contract-wave2 §4.1). */
export function vcsRepoView(deps: Deps, row: VcsModuleRow): Record<string, unknown> {
  return {
    identifier: row.identifier,
    'display-identifier': row.display_identifier,
    'oauth-token-id': row.oauth_token_id,
    'github-app-installation-id': null,
    branch: row.branch,
    tags: row.branch === '',
    'tags-regex': null,
    'tag-prefix': row.tag_prefix,
    'source-directory': row.source_directory,
    'ingress-submodules': row.ingress_submodules === 1,
    'repository-http-url': row.repository_http_url,
    'service-provider': row.service_provider,
    'webhook-url': webhookUrl(deps, row.webhook_uuid),
  };
}

/** The registry's view reader (registered in domains.ts). */
export async function vcsModuleViews(deps: Deps, moduleIds: string[]): Promise<Map<string, ModulePublisherView>> {
  const rows = await vcsModulesByIds(deps.db, moduleIds);
  return new Map(
    rows.map((r) => [
      r.module_id,
      {
        status: r.status,
        publishingMechanism: r.branch === '' ? 'git_tag' : 'branch',
        vcsRepo: vcsRepoView(deps, r),
        canResync: r.branch === '' && r.oauth_token_id !== null,
        canRetry: r.oauth_token_id !== null,
      } satisfies ModulePublisherView,
    ]),
  );
}

/** What an event about a module carries: its organization and connection. */
export function eventFor(row: Pick<VcsModuleRow, 'organization_id' | 'oauth_client_id' | 'oauth_token_id'>) {
  return { organizationId: row.organization_id, oauthClientId: row.oauth_client_id, oauthTokenId: row.oauth_token_id };
}

export interface CreateInput {
  name?: string;
  provider?: string;
  initialVersion?: string;
  noCode?: boolean;
  testsEnabled?: boolean | null;
  vcsRepo: VcsRepoInput;
}

function refuseUnsupported(input: { noCode?: boolean; testsEnabled?: boolean | null }): void {
  if (input.noCode) throw unprocessable('Terrace does not offer no-code provisioning: send "no-code": false or leave it out', '/data/attributes/no-code');
  if (input.testsEnabled) throw unprocessable('Terrace does not run module tests: send "tests-enabled": false or leave "test-config" out', '/data/attributes/test-config/tests-enabled');
}

function refuseGitHubApp(r: VcsRepoInput): void {
  if (r['github-app-installation-id'] !== undefined) {
    throw unprocessable('GitHub App installations are not supported: connect through an OAuth client and send vcs-repo.oauth-token-id', `${REPO}/github-app-installation-id`);
  }
}

const unknownToken = (id: string) =>
  unprocessable(
    `oauth-token-id ${quoteValue(id)} is not an OAuth token of an organization whose modules you may manage: list them with GET /api/v2/organizations/:org/oauth-tokens`,
    `${REPO}/oauth-token-id`,
  );

/** POST /organizations/:org/registry-modules/vcs: the caller must manage the organization's modules. */
export async function authorizeVcsCreate(deps: Deps, p: Principal, orgName: string): Promise<OrganizationRow> {
  return manageableOrganization(deps, p, orgName);
}

/**
 * The deprecated POST /registry-modules names no organization: it is the OAuth token's. Any
 * caller may send the body; a token of an organization whose modules the caller may not manage
 * is answered exactly like an unknown one, so the answer tells nothing about other tenants.
 */
export function authorizeDeprecatedVcsCreate(): void {
  authorize(true, () => notFound());
}

export async function organizationOfToken(deps: Deps, p: Principal, tokenId: string | undefined): Promise<OrganizationRow> {
  if (tokenId === undefined) throw unprocessable('vcs-repo.oauth-token-id is required: the OAuth token that may read the repository', `${REPO}/oauth-token-id`);
  const c = await connectionForToken(deps, tokenId);
  const org = c ? await getOrganizationById(deps.db, c.organizationId) : undefined;
  if (!org || !(await canManageModules(deps, p, org.id))) throw unknownToken(tokenId);
  return org;
}

/** Creates a VCS-backed module; the setup (webhook, first scan or initial version) runs as a job. */
export async function createVcsModule(deps: Deps, p: Principal, org: OrganizationRow, input: CreateInput): Promise<ModuleWithOrg> {
  // Authorized by the caller's authorizeVcsCreate/organizationOfToken; checked again by createModule.
  refuseUnsupported(input);
  const r = input.vcsRepo;
  refuseGitHubApp(r);
  if (r.identifier === undefined || r.identifier.trim() === '') checkIdentifier(r.identifier, true);
  const tokenId = r['oauth-token-id'];
  if (tokenId === undefined) throw unprocessable('vcs-repo.oauth-token-id is required: the OAuth token that may read the repository', `${REPO}/oauth-token-id`);
  const branch = checkBranch(r.branch);
  if (r.tags === true && branch !== '') {
    throw unprocessable('vcs-repo.tags and vcs-repo.branch exclude each other: send "tags": true for tag-based publishing or a branch for branch-based', `${REPO}/tags`);
  }
  const tagPrefix = checkTagPrefix(r['tag-prefix']);
  const sourceDirectory = checkSourceDirectory(r['source-directory']);
  if (sourceDirectory !== null && (input.name === undefined || input.provider === undefined)) {
    throw unprocessable('a module with vcs-repo.source-directory needs an explicit name and provider', '/data/attributes/name');
  }
  const initialVersion = branch !== '' ? checkVersion(input.initialVersion ?? '0.0.0', '/data/attributes/initial-version') : null;
  const conn = await usableConnection(deps, p, org.id, tokenId);
  const identifier = checkIdentifier(r.identifier, isGitHub(conn.serviceProvider));
  let name = input.name;
  let provider = input.provider;
  if (name === undefined || provider === undefined) {
    const inferred = inferNameAndProvider(identifier);
    if (!inferred) {
      throw unprocessable(
        `the name and provider cannot be inferred from ${quoteValue(identifier)}: name the repository terraform-<provider>-<name> or send "name" and "provider"`,
        '/data/attributes/name',
      );
    }
    name ??= inferred.name;
    provider ??= inferred.provider;
  }
  const now = rfc3339(deps.clock.now());
  const uuid = randomUUID();
  const row: VcsModuleRow = {
    module_id: '',
    organization_id: org.id,
    oauth_token_id: conn.oauthTokenId,
    oauth_client_id: conn.oauthClientId,
    identifier,
    display_identifier: identifier,
    branch,
    tag_prefix: tagPrefix,
    source_directory: sourceDirectory,
    ingress_submodules: r['ingress-submodules'] === false ? 0 : 1,
    service_provider: conn.serviceProvider,
    repository_http_url: `${conn.httpUrl.replace(/\/+$/, '')}/${identifier}`,
    webhook_uuid: uuid,
    webhook_secret_sealed: deps.secrets.encrypt(randomBytes(32).toString('hex')),
    webhook_hook_id: null,
    webhook_error: null,
    status: 'pending',
    status_error: null,
    created_at: now,
    updated_at: now,
  };
  const m = await createModule(deps, p, org, { name, provider }, async (tx, module) => {
    await insertVcsModule(tx, { ...row, module_id: module.id });
    await enqueue(tx, JOB.setup, { moduleId: module.id, initialVersion }, deps.clock.now());
  });
  wakeJobs(deps.db);
  deps.logger.info({ actor: principalLabel(p), module: m.id, identifier }, 'VCS-backed registry module created');
  await recordVcsEvent(deps, {
    ...eventFor(row),
    level: 'info',
    message: `Connected ${moduleAddress(m)} to ${identifier} (${branch === '' ? 'tag-based' : `branch ${branch}`} publishing)`,
  });
  return m;
}

export interface UpdateInput {
  noCode?: boolean;
  testsEnabled?: boolean | null;
  /** undefined: unchanged; null: refused (a registry module's connection is not removed). */
  vcsRepo?: VcsRepoInput | null;
}

/** PATCH of a VCS-backed module: vcs-repo is a partial merge; switching mode or connection rescans. */
export async function updateVcsModule(deps: Deps, p: Principal, module: ModuleWithOrg, current: VcsModuleRow, input: UpdateInput): Promise<void> {
  // The module was found through manageableModule, which authorized the caller.
  refuseUnsupported(input);
  const r = input.vcsRepo;
  if (r === undefined) return;
  if (r === null) throw unprocessable('a VCS-backed module cannot be disconnected from its repository: delete it and publish it through the API instead', REPO);
  refuseGitHubApp(r);
  let branch = r.branch === undefined ? current.branch : checkBranch(r.branch);
  if (r.tags === true && r.branch !== undefined && branch !== '') {
    throw unprocessable('vcs-repo.tags and vcs-repo.branch exclude each other: send "branch": "" with "tags": true for tag-based publishing', `${REPO}/tags`);
  }
  if (r.tags === true) branch = '';
  if (r.tags === false && branch === '') {
    throw unprocessable('a module that does not publish from tags needs vcs-repo.branch', `${REPO}/branch`);
  }
  const set: Partial<VcsModuleRow> = { branch };
  if ('tag-prefix' in r) set.tag_prefix = checkTagPrefix(r['tag-prefix']);
  if ('source-directory' in r) set.source_directory = checkSourceDirectory(r['source-directory']);
  if (r['ingress-submodules'] !== undefined && r['ingress-submodules'] !== null) set.ingress_submodules = r['ingress-submodules'] ? 1 : 0;
  let conn: VcsConnection | undefined;
  const newToken = r['oauth-token-id'];
  if (newToken !== undefined && newToken !== current.oauth_token_id) conn = await usableConnection(deps, p, module.organization_id, newToken);
  const serviceProvider = conn?.serviceProvider ?? current.service_provider;
  if (r.identifier !== undefined) set.identifier = checkIdentifier(r.identifier, serviceProvider === 'github' || serviceProvider === 'github_enterprise');
  const reconnect = conn !== undefined || (set.identifier !== undefined && set.identifier !== current.identifier);
  if (conn) {
    set.oauth_token_id = conn.oauthTokenId;
    set.oauth_client_id = conn.oauthClientId;
    set.service_provider = conn.serviceProvider;
  }
  if (reconnect) {
    const identifier = set.identifier ?? current.identifier;
    const httpUrl = conn?.httpUrl ?? current.repository_http_url.slice(0, -current.identifier.length - 1);
    set.display_identifier = identifier;
    set.repository_http_url = `${httpUrl.replace(/\/+$/, '')}/${identifier}`;
    set.webhook_hook_id = null;
    set.webhook_error = null;
    set.status = 'pending';
    set.status_error = null;
  }
  const modeChanged = branch !== current.branch;
  const rescan = branch === '' && (reconnect || modeChanged || set.tag_prefix !== undefined && set.tag_prefix !== current.tag_prefix);
  if (branch !== '' && modeChanged && current.status !== 'setup_failed') set.status = 'setup_complete';
  await inTransaction(deps.db, async (tx) => {
    await updateVcsModuleRow(tx, module.id, { ...set, updated_at: rfc3339(deps.clock.now()) });
    if (reconnect && current.webhook_hook_id && current.oauth_token_id) {
      await enqueue(tx, JOB.deleteWebhook, deleteWebhookPayload(current), deps.clock.now());
    }
    if (reconnect) await enqueue(tx, JOB.setup, { moduleId: module.id, initialVersion: null }, deps.clock.now());
    else if (rescan) await enqueue(tx, JOB.scan, { moduleId: module.id, reason: 'update' }, deps.clock.now());
  });
  wakeJobs(deps.db);
  deps.logger.info({ actor: principalLabel(p), module: module.id }, 'VCS-backed registry module updated');
}

export function deleteWebhookPayload(row: VcsModuleRow) {
  return { organizationId: row.organization_id, oauthTokenId: row.oauth_token_id, identifier: row.identifier, hookId: row.webhook_hook_id };
}

/** The module's VCS row, for callers that have found the module through manageableModule or memberModule. */
export async function vcsModuleOf(deps: Deps, module: ModuleWithOrg): Promise<VcsModuleRow | undefined> {
  return getVcsModule(deps.db, module.id);
}

/** POST .../actions/resync: queues a scan of a tag-based module (manage-modules). */
export async function resyncModule(deps: Deps, p: Principal, orgName: string, namespace: string, name: string, provider: string): Promise<ModuleWithOrg> {
  const { module } = await manageableModule(deps, p, orgName, namespace, name, provider);
  const row = await getVcsModule(deps.db, module.id);
  if (!row) throw unprocessable(`${moduleAddress(module)} is published through the API, not from a VCS repository: there is nothing to resync`);
  if (row.branch !== '') throw unprocessable(`${moduleAddress(module)} publishes from branch ${row.branch}: create versions with POST .../versions and a commit-sha instead`);
  if (!row.oauth_token_id) throw unprocessable(`${moduleAddress(module)} has lost its OAuth token: connect it to another with PATCH (vcs-repo.oauth-token-id) first`);
  await enqueue(deps.db, JOB.scan, { moduleId: module.id, reason: 'resync', retryFailed: true }, deps.clock.now());
  wakeJobs(deps.db);
  deps.logger.info({ actor: principalLabel(p), module: module.id }, 'VCS module resync requested');
  return module;
}

/** POST .../versions of a VCS-backed module: branch mode only, from a commit; the clone runs as a job. */
export async function createBranchVersion(
  deps: Deps,
  p: Principal,
  module: ModuleWithOrg,
  row: VcsModuleRow,
  input: { version: string; commitSha?: string | null },
): Promise<VersionRow> {
  // The module was found through manageableModule, which authorized the caller.
  if (row.branch === '') {
    throw unprocessable(`${moduleAddress(module)} publishes a version for every matching tag pushed to ${row.identifier}: push a tag instead, or switch it to a branch with PATCH`, '/data/attributes/version');
  }
  if (!row.oauth_token_id) throw unprocessable(`${moduleAddress(module)} has lost its OAuth token: connect it to another with PATCH (vcs-repo.oauth-token-id) first`);
  const version = checkVersion(input.version, '/data/attributes/version');
  const sha = checkCommitSha(input.commitSha);
  const created = await inTransaction(deps.db, (tx) => queueClone(tx, deps, module.id, version, sha, { replaceFailed: true }));
  if (!created) {
    throw unprocessable(`version ${version} of ${moduleAddress(module)} already exists; versions are immutable, publish a new version instead`, '/data/attributes/version');
  }
  wakeJobs(deps.db);
  deps.logger.info({ actor: principalLabel(p), module: module.id, version }, 'VCS module version requested');
  return created;
}

/** A version in "cloning" plus its clone job, in the caller's transaction; undefined when it exists. */
export async function queueClone(tx: Tx, deps: Deps, moduleId: string, version: string, sha: string, opts: { replaceFailed?: boolean } = {}): Promise<VersionRow | undefined> {
  try {
    const v = await createClonedVersion(tx, deps, moduleId, version, sha, opts);
    if (v) await enqueue(tx, JOB.clone, { versionId: v.id, moduleId }, deps.clock.now());
    return v;
  } catch (err) {
    if (isUniqueViolation(err)) return undefined;
    throw err;
  }
}

/** GET .../vcs-webhook: the URL and secret, for adding the hook by hand (manage-modules only). */
export async function webhookDetails(deps: Deps, p: Principal, orgName: string, namespace: string, name: string, provider: string) {
  const { module } = await manageableModule(deps, p, orgName, namespace, name, provider);
  const row = await getVcsModule(deps.db, module.id);
  if (!row) throw notFound(`${moduleAddress(module)} is published through the API and has no webhook`);
  return { module, row, url: webhookUrl(deps, row.webhook_uuid), secret: webhookSecret(deps, row) };
}
