import type { Readable } from 'node:stream';
import { BlobTooLargeError } from '../blobs/types.js';
import { rfc3339 } from '../clock.js';
import { inTransaction, isUniqueViolation, type Tx } from '../db/index.js';
import { claimUpload, consumeUpload, releaseUpload } from '../db/upload-claims.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { wakeJobs } from '../jobs/runner.js';
import { clientClosedBody } from '../http/body.js';
import { ApiError, conflict, notFound, payloadTooLarge, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { generateToken, hashToken } from '../identity/tokens.js';
import { newId } from '../ids.js';
import { orgAccess, type OrgAccess, type OrganizationRow } from '../organizations/access.js';
import { getOrganizationByName } from '../organizations/store.js';
import { canManageModules } from './access.js';
import { runModuleDeleteHooks } from './hooks.js';
import { enqueueIngestion, freshArchiveKey, runIngestionJobNow, waitForIngestion } from './ingest.js';
import { canonicalPublishVersion, MODULE_NAME_RE, PROVIDER_RE } from './names.js';
import { deleteModuleRows, deleteVersionRow, findModule, findModuleById, findModulesByName, getVersion, insertModule, insertVersion, type ModuleRow, type ModuleWithOrg, refreshModuleCache, renewUploadLease, versionByUploadToken, type VersionRow } from './store.js';

/** The organization, if the caller may manage its modules; 404 otherwise. */
export async function manageableOrganization(deps: Deps, p: Principal, orgName: string): Promise<OrganizationRow> {
  const org = await getOrganizationByName(deps.db, orgName);
  authorize(org !== undefined && (await canManageModules(deps, p, org.id)), () => notFound());
  return org!;
}

/** The organization named in a path, with the caller's access, if the caller is a member; 404 otherwise. */
export async function memberOrganization(deps: Deps, p: Principal, orgName: string): Promise<{ org: OrganizationRow; access: OrgAccess }> {
  const org = await getOrganizationByName(deps.db, orgName);
  const access = org ? await orgAccess(deps.db, p, org.id) : undefined;
  if (!org || !access?.member) throw notFound();
  return { org, access };
}

/** The module at private/<namespace>/<name>/<provider>, to members of its organization; 404 otherwise. */
export async function memberModule(
  deps: Deps,
  p: Principal,
  orgName: string,
  namespace: string,
  name: string,
  provider: string,
): Promise<{ module: ModuleWithOrg; access: OrgAccess }> {
  const { org, access } = await memberOrganization(deps, p, orgName).catch(() => {
    throw notFound();
  });
  const module = namespace.toLowerCase() === org.name_lower ? await findModule(deps.db, namespace, name, provider) : undefined;
  if (!module) throw notFound();
  return { module, access };
}

/** A module by its id, to members of its organization; 404 otherwise (go-tfe's Read by ID). */
export async function memberModuleById(deps: Deps, p: Principal, id: string): Promise<{ module: ModuleWithOrg; access: OrgAccess }> {
  const module = await findModuleById(deps.db, id);
  const access = module ? await orgAccess(deps.db, p, module.organization_id) : undefined;
  if (!module || !access?.member) throw notFound();
  return { module, access };
}

/** Every change to an organization's modules begins here: 404 unless the caller may manage them. */
async function requireManageModules(deps: Deps, p: Principal, organizationId: string): Promise<void> {
  authorize(await canManageModules(deps, p, organizationId), () => notFound());
}

/** The module at private/<namespace>/<name>/<provider> of an organization the caller manages. */
export async function manageableModule(
  deps: Deps,
  p: Principal,
  orgName: string,
  namespace: string,
  name: string,
  provider: string,
): Promise<{ org: OrganizationRow; module: ModuleWithOrg }> {
  const org = await manageableOrganization(deps, p, orgName);
  const module = namespace.toLowerCase() === org.name_lower ? await findModule(deps.db, namespace, name, provider) : undefined;
  if (!module) throw notFound(`no module ${namespace}/${name}/${provider} in organization ${org.name}`);
  return { org, module };
}

export async function createModule(
  deps: Deps,
  p: Principal,
  org: OrganizationRow,
  input: { name: string; provider: string; description?: string },
  /** Runs in the transaction that inserts the module (a VCS publisher records its connection). */
  within?: (tx: Tx, module: ModuleWithOrg) => Promise<void>,
): Promise<ModuleWithOrg> {
  await requireManageModules(deps, p, org.id);
  if (!MODULE_NAME_RE.test(input.name)) {
    throw unprocessable(
      `name ${quoteValue(input.name)} is invalid: use 1-64 letters, digits, "-" or "_", starting and ending with a letter or digit`,
      '/data/attributes/name',
    );
  }
  if (!PROVIDER_RE.test(input.provider)) {
    throw unprocessable(
      `provider ${quoteValue(input.provider)} is invalid: use 1-64 lower-case letters and digits (Terraform cannot address anything else)`,
      '/data/attributes/provider',
    );
  }
  const now = rfc3339(deps.clock.now());
  const row: ModuleRow = {
    id: newId('mod'),
    organization_id: org.id,
    name: input.name,
    name_lower: input.name.toLowerCase(),
    provider: input.provider,
    description: input.description ?? '',
    versions_json: '[]',
    latest_version: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await inTransaction(deps.db, async (tx) => {
      await insertModule(tx, row);
      await within?.(tx, { ...row, namespace: org.name });
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw unprocessable(`module ${org.name}/${input.name}/${input.provider} already exists`, '/data/attributes/name');
    }
    throw err;
  }
  deps.logger.info({ actor: principalLabel(p), module: row.id, org: org.id }, 'registry module created');
  return { ...row, namespace: org.name };
}

/** A module published through the API stays so: a VCS-backed module is created as one. */
export const vcsUnsupported = (pointer?: string) =>
  unprocessable(
    'this module is published through the API, so it cannot be connected to a VCS repository: create a VCS-backed module with POST /api/v2/organizations/:org/registry-modules/vcs instead',
    pointer,
  );

/**
 * go-tfe's Update. Terrace modules are API-published, without no-code provisioning or module
 * tests: the settings that describe that are accepted and change nothing, the others are refused
 * with what to do instead.
 */
export async function updateModule(
  deps: Deps,
  p: Principal,
  module: ModuleWithOrg,
  input: { noCode?: boolean; testsEnabled?: boolean; vcsRepo: boolean },
): Promise<ModuleWithOrg> {
  await requireManageModules(deps, p, module.organization_id);
  if (input.noCode) throw unprocessable('Terrace does not offer no-code provisioning: send "no-code": false or leave it out', '/data/attributes/no-code');
  if (input.testsEnabled) throw unprocessable('Terrace does not run module tests: send "tests-enabled": false or leave "test-config" out', '/data/attributes/test-config/tests-enabled');
  if (input.vcsRepo) throw vcsUnsupported('/data/attributes/vcs-repo');
  return module;
}

/**
 * Creates a pending version and a one-time, expiring upload URL for its tarball. A version that
 * exists and errored is replaced; any other existing version is refused.
 */
export async function createVersion(
  deps: Deps,
  p: Principal,
  module: ModuleWithOrg,
  input: { version: string; description?: string | null; commitSha?: string | null },
): Promise<{ version: VersionRow; uploadUrl: string }> {
  await requireManageModules(deps, p, module.organization_id);
  const canonical = canonicalPublishVersion(input.version);
  if (!canonical) {
    throw unprocessable(`version ${quoteValue(input.version)} is not valid semantic versioning (for example 1.2.0 or v1.2.0-rc.1)`, '/data/attributes/version');
  }
  const now = deps.clock.now();
  const token = generateToken();
  const row: VersionRow = {
    id: newId('modver'),
    module_id: module.id,
    version: canonical,
    status: 'pending',
    error: null,
    description: input.description ?? null,
    commit_sha: input.commitSha ?? null,
    blob_key: null,
    size: null,
    sha256: null,
    upload_token_hash: hashToken(token),
    upload_expires_at: rfc3339(now.getTime() + deps.config.uploadUrlTtlSeconds * 1000),
    created_at: rfc3339(now),
    updated_at: rfc3339(now),
    published_at: null,
    contents: null,
    warnings: '[]',
    upload_lease_until: null,
  };
  const replaced = await inTransaction(deps.db, async (tx) => {
    const existing = await getVersion(tx, module.id, canonical);
    if (existing && existing.status !== 'errored') {
      throw unprocessable(
        `version ${canonical} of ${module.namespace}/${module.name}/${module.provider} already exists (status ${existing.status}); publish a new version instead`,
        '/data/attributes/version',
      );
    }
    await insertVersion(tx, row, existing?.id);
    return existing;
  });
  if (replaced?.blob_key) await deps.blobs.delete(replaced.blob_key);
  deps.logger.info({ actor: principalLabel(p), module: module.id, version: canonical }, 'registry module version created');
  return { version: row, uploadUrl: `${deps.config.publicUrl}/uploads/modules/${token}` };
}

/**
 * Takes a tarball for the version behind an upload token: streams it to the blob store (the
 * upload holds a lease it renews while bytes arrive), then, in the transaction that uses the URL
 * up, queues its ingestion (src/registry/ingest.ts) and waits for it, up to TERRACE_INGEST_WAIT_MS.
 * Returns the version as the wait left it: ok, or still ingesting (the caller answers 202). A
 * refused archive throws as the upload always did (422 with the reason); a broken-off transfer
 * gives the URL back; no failure leaves a blob behind.
 */
export async function receiveUpload(deps: Deps, token: string, body: Readable, contentLength: number | null): Promise<VersionRow> {
  const now = rfc3339(deps.clock.now());
  const leaseMs = deps.config.jobLeaseSeconds * 1000;
  const tokenHash = hashToken(token);
  const invalid = () => notFound('this upload URL is invalid, has expired, or was already used');
  const claimed = await inTransaction(deps.db, async (tx) => {
    const row = await versionByUploadToken(tx, tokenHash);
    if (!row) return undefined;
    const blobKey = freshArchiveKey(row);
    // While it is uploading the version is "uploading"; if this process dies, the lease lapses and
    // the registry upkeep returns it to pending.
    const lease = rfc3339(deps.clock.now().getTime() + leaseMs);
    const before = await claimUpload(tx, 'module', tokenHash, now, { status: 'uploading', blob_key: blobKey, upload_lease_until: lease, updated_at: now });
    return before && { ...before, blob_key: blobKey };
  });
  if (!claimed) {
    body.resume();
    throw invalid();
  }
  const heartbeat = setInterval(() => {
    renewUploadLease(deps.db, claimed.id, rfc3339(deps.clock.now().getTime() + leaseMs)).catch((err) =>
      deps.logger.warn({ err, version: claimed.id }, 'could not renew an upload lease'),
    );
  }, Math.max(1000, Math.floor(leaseMs / 3)));
  heartbeat.unref?.();
  try {
    return await receiveClaimedUpload(deps, claimed, tokenHash, body, contentLength, heartbeat);
  } finally {
    // However the request ends, it stops renewing: a lease renewed for ever would block the repair.
    clearInterval(heartbeat);
  }
}

async function receiveClaimedUpload(
  deps: Deps,
  claimed: VersionRow & { blob_key: string },
  tokenHash: string,
  body: Readable,
  contentLength: number | null,
  heartbeat: NodeJS.Timeout,
): Promise<VersionRow> {
  const blobKey = claimed.blob_key;
  const max = deps.config.maxArchiveBytes;

  /** A broken-off transfer gives the URL back; a refused archive marks the version errored. */
  const fail = async (status: 'pending' | 'errored', reason: string | null, err: ApiError): Promise<never> => {
    clearInterval(heartbeat);
    await deps.blobs.delete(blobKey).catch((e) => deps.logger.warn({ err: e, blobKey }, 'could not remove a failed upload'));
    const set = { status, error: reason, blob_key: null, upload_lease_until: null, updated_at: rfc3339(deps.clock.now()) };
    if (status === 'pending') await releaseUpload(deps.db, 'module', claimed.id, tokenHash, set);
    else await consumeUpload(deps.db, 'module', claimed.id, tokenHash, set);
    throw err;
  };

  if (contentLength !== null && contentLength > max) {
    body.resume();
    const msg = `the archive is ${contentLength} bytes, over the limit of ${max} bytes (TERRACE_MAX_ARCHIVE_BYTES)`;
    return fail('errored', msg, payloadTooLarge(msg));
  }
  let put;
  try {
    put = await deps.blobs.put(blobKey, body, { maxBytes: max, contentType: 'application/gzip' });
  } catch (err) {
    if (err instanceof BlobTooLargeError) {
      const msg = `the archive is over the limit of ${max} bytes (TERRACE_MAX_ARCHIVE_BYTES)`;
      return fail('errored', msg, payloadTooLarge(msg));
    }
    // The client went away (logged as such by the app) or the store failed: the URL stays usable.
    if (!clientClosedBody(body, err)) deps.logger.warn({ err, version: claimed.id }, 'module upload interrupted');
    return fail('pending', null, new ApiError(400, 'upload interrupted', 'the upload did not complete; retry the PUT'));
  }
  if (contentLength !== null && put.size !== contentLength) {
    return fail('pending', null, new ApiError(400, 'upload interrupted', `received ${put.size} of ${contentLength} bytes; retry the PUT`));
  }
  clearInterval(heartbeat);

  // The bytes are stored: using the URL up and queueing the ingestion commit together.
  const stored = rfc3339(deps.clock.now());
  const jobId = await inTransaction(deps.db, async (tx) => {
    const used = await consumeUpload(tx, 'module', claimed.id, tokenHash, {
      status: 'ingesting',
      error: null,
      size: put.size,
      sha256: put.sha256,
      upload_lease_until: null,
      updated_at: stored,
    });
    return used ? await enqueueIngestion(tx, claimed.id, deps.clock.now()) : undefined;
  });
  if (!jobId) {
    // The version was deleted while its bytes were arriving.
    await deps.blobs.delete(blobKey);
    throw conflict('the version was deleted during the upload');
  }
  if (deps.config.jobsEnabled) wakeJobs(deps.db);
  // A process that runs no background jobs does its own upload's ingestion (the job row keeps it crash-safe).
  else await runIngestionJobNow(deps, jobId);
  const after = await waitForIngestion(deps, claimed.id, deps.config.ingestWaitMs);
  if (!after) throw conflict('the version was deleted during the upload');
  if (after.status === 'errored') throw unprocessable(after.error ?? 'the archive was refused');
  return after;
}

/** Deletes versions' rows in one transaction, then their blobs. */
async function deleteRowsThenBlobs(deps: Deps, fn: (tx: Parameters<Parameters<typeof inTransaction>[1]>[0]) => Promise<string[]>): Promise<void> {
  const keys = await inTransaction(deps.db, fn);
  for (const key of keys) {
    await deps.blobs.delete(key).catch((err) => deps.logger.warn({ err, key }, 'blob left behind; the orphan sweep will remove it'));
  }
}

export async function deleteVersion(deps: Deps, p: Principal, module: ModuleWithOrg, version: string): Promise<void> {
  await requireManageModules(deps, p, module.organization_id);
  const canonical = canonicalPublishVersion(version) ?? version;
  await deleteRowsThenBlobs(deps, async (tx) => {
    const row = await getVersion(tx, module.id, canonical);
    if (!row) throw notFound(`version ${version} of ${module.namespace}/${module.name}/${module.provider} does not exist`);
    await deleteVersionRow(tx, row.id);
    await refreshModuleCache(tx, module.id, rfc3339(deps.clock.now()));
    return row.blob_key ? [row.blob_key] : [];
  });
  deps.logger.info({ actor: principalLabel(p), module: module.id, version: canonical }, 'registry module version deleted');
}

export async function deleteModules(deps: Deps, p: Principal, modules: ModuleWithOrg[]): Promise<void> {
  for (const organizationId of new Set(modules.map((m) => m.organization_id))) await requireManageModules(deps, p, organizationId);
  await deleteRowsThenBlobs(deps, async (tx) => {
    await runModuleDeleteHooks(tx, deps, modules.map((m) => m.id));
    return deleteModuleRows(tx, modules.map((m) => m.id));
  });
  for (const m of modules) deps.logger.info({ actor: principalLabel(p), module: m.id }, 'registry module deleted');
}


/** Deletes every provider of namespace/name in an organization the caller manages; 404 when there is none. */
export async function deleteModulesNamed(deps: Deps, p: Principal, orgName: string, namespace: string, name: string): Promise<void> {
  const org = await manageableOrganization(deps, p, orgName);
  const modules = namespace.toLowerCase() === org.name_lower ? await findModulesByName(deps.db, namespace, name) : [];
  if (modules.length === 0) throw notFound(`no module ${namespace}/${name} in organization ${org.name}`);
  await deleteModules(deps, p, modules);
}
