import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError } from '../http/errors.js';
import { enqueue, PermanentJobError, saveJobProgress, wakeJobs, type JobFailureHook, type JobHandler, type JobKind, type RecurringJob } from '../jobs/runner.js';
import { submitArchive } from '../registry/ingest.js';
import { failClone, versionById } from '../registry/publishers.js';
import { findModuleById, listVersions, type ModuleWithOrg } from '../registry/store.js';
import { archiveCommit, GitError, listTags, repositoryUrl, resolveBranch, type GitLimits, type GitProvider, type GitRemote } from './git.js';
import { JOB } from './module-jobs-kinds.js';
import { eventFor, moduleAddress, queueClone, webhookSecret, webhookUrl } from './module-service.js';
import { tagVersion } from './module-settings.js';
import { getVcsModule, purgeDeliveries, tagModulesAfter, updateVcsModuleRow, vcsModulesOfToken, type VcsModuleRow } from './module-store.js';
import { deleteWebhook, ProviderError, registerWebhook } from './provider.js';
import { connectionForToken, recordVcsEvent, type VcsConnection } from './service.js';

const ROTATE = 'rotate the token with PATCH /api/v2/oauth-clients/:id (oauth-token-string), or connect the module to another token with PATCH (vcs-repo.oauth-token-id)';
const RECONNECT = 'connect the module to another OAuth token with PATCH (vcs-repo.oauth-token-id)';
/** Delivery ids are kept as long as VCS events: a replay older than that is still a no-op (versions are immutable). */
const DELIVERY_RETENTION_MS = 10 * 24 * 3600 * 1000;

function limits(deps: Deps): GitLimits {
  return { timeoutMs: deps.config.gitTimeoutMs, maxFetchBytes: deps.config.gitMaxFetchBytes };
}

function remoteOf(row: VcsModuleRow, c: VcsConnection): GitRemote {
  return { url: repositoryUrl(c.httpUrl, row.identifier), provider: c.serviceProvider as GitProvider, token: c.token };
}

function field<T>(payload: unknown, key: string): T {
  const v = (payload as Record<string, unknown> | null)?.[key];
  if (typeof v !== 'string') throw new PermanentJobError(`payload has no ${key}`);
  return v as T;
}

const now = (deps: Deps) => rfc3339(deps.clock.now());

/** A transient failure is retried by the runner; the rest are the repository's or the token's answer. */
const transient = (e: GitError) => e.kind === 'unreachable' || e.kind === 'timeout';

function suggestionFor(e: GitError): string | null {
  if (e.kind === 'auth') return ROTATE;
  if (e.kind === 'not_found') return 'check vcs-repo.identifier and that the token may read the repository';
  if (e.kind === 'unreachable' || e.kind === 'timeout') return 'check that the repository host is reachable; a resync retries';
  return null;
}

/** The module is unusable until someone fixes its connection. */
async function setupFailed(deps: Deps, row: VcsModuleRow, m: ModuleWithOrg, reason: string, suggestedAction: string | null): Promise<void> {
  // One commit: whoever sees the status sees the event that says why.
  await inTransaction(deps.db, async (tx) => {
    await updateVcsModuleRow(tx, row.module_id, { status: 'setup_failed', status_error: reason, updated_at: now(deps) });
    await recordVcsEvent(deps, { ...eventFor(row), level: 'error', message: `${moduleAddress(m)}: ${reason}`, suggestedAction }, tx);
  });
}

async function loaded(deps: Deps, moduleId: string): Promise<{ row: VcsModuleRow; module: ModuleWithOrg } | undefined> {
  const row = await getVcsModule(deps.db, moduleId);
  const module = row ? await findModuleById(deps.db, moduleId) : undefined;
  return row && module ? { row, module } : undefined;
}

/** A scan whose module lost its OAuth token (deleted or replaced) while it read the repository: nothing of it is kept. */
async function disconnectedMeanwhile(deps: Deps, row: VcsModuleRow, m: ModuleWithOrg, what: string): Promise<void> {
  await recordVcsEvent(deps, {
    ...eventFor(row),
    level: 'info',
    message: `Discarded the ${what} read from ${row.identifier} for ${moduleAddress(m)}: the module's OAuth token was deleted or replaced while they were read`,
  });
}

/** The connection of a module, or undefined after recording why there is none. */
async function connectionOf(deps: Deps, row: VcsModuleRow, m: ModuleWithOrg): Promise<VcsConnection | undefined> {
  const c = row.oauth_token_id ? await connectionForToken(deps, row.oauth_token_id) : undefined;
  if (!c) await setupFailed(deps, row, m, 'its OAuth token was deleted, so Terrace can no longer read the repository', RECONNECT);
  return c;
}

/** Registers the repository webhook, then publishes: tags are scanned, or a branch's initial version queued. */
const setup: JobHandler = async (deps, payload) => {
  const found = await loaded(deps, field(payload, 'moduleId'));
  if (!found) return;
  const { row, module } = found;
  const conn = await connectionOf(deps, row, module);
  if (!conn) return;
  if (!row.webhook_hook_id) {
    try {
      const { hookId } = await registerWebhook(deps, conn, row.identifier, webhookUrl(deps, row.webhook_uuid), webhookSecret(deps, row));
      await updateVcsModuleRow(deps.db, row.module_id, { webhook_hook_id: hookId, webhook_error: null, updated_at: now(deps) });
      await recordVcsEvent(deps, { ...eventFor(row), level: 'info', message: `Created the webhook of ${moduleAddress(module)} on ${row.identifier}` });
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      await updateVcsModuleRow(deps.db, row.module_id, { webhook_error: err.message, updated_at: now(deps) });
      await recordVcsEvent(deps, {
        ...eventFor(row),
        level: 'error',
        message: `Could not create the webhook of ${moduleAddress(module)} on ${row.identifier}: ${err.message}`,
        suggestedAction:
          'give the token admin (GitHub) or maintainer (GitLab) rights on the repository, or add the webhook by hand with the URL and secret from GET .../vcs-webhook; until then new tags appear after a resync',
      });
    }
  }
  const initialVersion = (payload as { initialVersion?: unknown }).initialVersion;
  if (row.branch !== '') {
    if (typeof initialVersion !== 'string') return;
    let sha: string | null;
    try {
      sha = await resolveBranch(remoteOf(row, conn), row.branch, limits(deps));
    } catch (err) {
      if (!(err instanceof GitError)) throw err;
      if (transient(err)) throw err;
      return setupFailed(deps, row, module, `could not read branch ${row.branch} of ${row.identifier}: ${err.message}`, suggestionFor(err));
    }
    if (!sha) return setupFailed(deps, row, module, `branch ${row.branch} does not exist in ${row.identifier}`, 'set vcs-repo.branch to an existing branch with PATCH');
    const connected = await inTransaction(deps.db, async (tx) => {
      if (!(await updateVcsModuleRow(tx, row.module_id, { status: 'setup_complete', status_error: null, updated_at: now(deps) }, conn.oauthTokenId))) return false;
      await queueClone(tx, deps, row.module_id, initialVersion, sha);
      return true;
    });
    if (!connected) return disconnectedMeanwhile(deps, row, module, `branch ${row.branch}`);
    wakeJobs(deps.db);
    return;
  }
  await scanTags(deps, row, module, conn, 'setup', false);
};

const scan: JobHandler = async (deps, payload) => {
  const found = await loaded(deps, field(payload, 'moduleId'));
  if (!found || found.row.branch !== '') return;
  const conn = await connectionOf(deps, found.row, found.module);
  if (!conn) return;
  const p = payload as { reason?: string; retryFailed?: boolean };
  await scanTags(deps, found.row, found.module, conn, p.reason ?? 'periodic', p.retryFailed === true);
};

/** Lists the tags; every new one that matches queues a version (versions are immutable: existing ones are left). */
async function scanTags(deps: Deps, row: VcsModuleRow, module: ModuleWithOrg, conn: VcsConnection, reason: string, retryFailed: boolean): Promise<void> {
  let tags;
  try {
    tags = await listTags(remoteOf(row, conn), limits(deps));
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    const reasonText = `could not list the tags of ${row.identifier}: ${err.message}`;
    if (row.status === 'pending' || err.kind === 'auth' || err.kind === 'not_found') return setupFailed(deps, row, module, reasonText, suggestionFor(err));
    await recordVcsEvent(deps, { ...eventFor(row), level: 'error', message: `${moduleAddress(module)}: ${reasonText}`, suggestedAction: suggestionFor(err) });
    return;
  }
  const skipped: string[] = [];
  const wanted = new Map<string, { tag: string; sha: string }>();
  for (const t of [...tags].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const r = tagVersion(t.name, row.tag_prefix);
    if ('skipped' in r) skipped.push(`${t.name} (${r.skipped === 'prefix' ? `outside prefix ${row.tag_prefix}` : 'not semver'})`);
    else if (!wanted.has(r.version)) wanted.set(r.version, { tag: t.name, sha: t.sha });
  }
  // What the committed attempt queued (PostgreSQL may run the transaction again); null when
  // the module lost this connection while its tags were read. The scan's events commit with the
  // status they explain, so no reader sees one without the other.
  const queued = await inTransaction(deps.db, async (tx) => {
    const existing = new Map((await listVersions(tx, row.module_id)).map((v) => [v.version, v.status]));
    const status = existing.size > 0 || wanted.size > 0 ? 'setup_complete' : 'no_version_tags';
    // First, so that a token deleted meanwhile (whose hook left the module setup_failed) wins.
    if (!(await updateVcsModuleRow(tx, row.module_id, { status, status_error: null, updated_at: now(deps) }, conn.oauthTokenId))) return null;
    const inAttempt: string[] = [];
    for (const [version, t] of wanted) {
      const versionStatus = existing.get(version);
      if (versionStatus !== undefined && !(retryFailed && versionStatus === 'clone_failed')) continue;
      if (await queueClone(tx, deps, row.module_id, version, t.sha, { replaceFailed: retryFailed })) inAttempt.push(`${version} (tag ${t.tag})`);
    }
    if (reason === 'periodic' && inAttempt.length === 0) return inAttempt;
    const ev = eventFor(row);
    const what = inAttempt.length > 0 ? `queued ${inAttempt.length} new version(s): ${inAttempt.slice(0, 20).join(', ')}` : 'no new versions';
    await recordVcsEvent(deps, { ...ev, level: 'info', message: `Loaded ${tags.length} tag(s) of ${row.identifier} for ${moduleAddress(module)} (${reason}): ${what}` }, tx);
    if (skipped.length > 0) {
      await recordVcsEvent(deps, { ...ev, level: 'info', message: `Skipped ${skipped.length} tag(s) of ${row.identifier} for ${moduleAddress(module)}: ${skipped.slice(0, 20).join(', ')}` }, tx);
    }
    if (wanted.size === 0) {
      const suggestedAction = `push a semver tag (for example ${row.tag_prefix ?? ''}v1.0.0), then resync`;
      await recordVcsEvent(deps, { ...ev, level: 'error', message: `${row.identifier} has no tag that publishes ${moduleAddress(module)}`, suggestedAction }, tx);
    }
    return inAttempt;
  });
  if (queued === null) return disconnectedMeanwhile(deps, row, module, `${tags.length} tag(s)`);
  if (queued.length > 0) wakeJobs(deps.db);
}

/** Fetches one version's commit and hands the tree to the registry's ingestion. */
const clone: JobHandler = async (deps, payload) => {
  const versionId = field<string>(payload, 'versionId');
  const v = await versionById(deps.db, versionId);
  if (!v || v.status !== 'cloning') return;
  const found = await loaded(deps, v.module_id);
  if (!found) {
    await failClone(deps, v.id, 'the module is no longer connected to a repository');
    return;
  }
  const { row, module } = found;
  const label = `${moduleAddress(module)} ${v.version}`;
  const failed = async (reason: string, suggestedAction: string | null) => {
    if (await failClone(deps, v.id, reason)) {
      await recordVcsEvent(deps, { ...eventFor(row), level: 'error', message: `Could not clone ${label}: ${reason}`, suggestedAction });
    }
  };
  const conn = row.oauth_token_id ? await connectionForToken(deps, row.oauth_token_id) : undefined;
  if (!conn) return failed('the OAuth token was deleted', RECONNECT);
  let handle;
  try {
    handle = await archiveCommit(remoteOf(row, conn), v.commit_sha ?? '', row.source_directory ?? '', limits(deps));
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    if (transient(err)) throw err;
    return failed(err.message, suggestionFor(err));
  }
  try {
    await submitArchive(deps, v.id, handle.stream);
  } catch (err) {
    if (err instanceof GitError) {
      if (transient(err)) throw err;
      return failed(err.message, null);
    }
    if (err instanceof ApiError && err.status === 413) {
      await recordVcsEvent(deps, { ...eventFor(row), level: 'error', message: `Version ingest failed: ${label}: reg_ingress_failed: ${err.detail}` });
      return;
    }
    // Deleted meanwhile (404) or taken by another attempt (409): nothing left to do here.
    if (err instanceof ApiError && (err.status === 404 || err.status === 409)) return;
    throw err;
  } finally {
    handle.stream.destroy();
    handle.cleanup();
  }
  await enqueue(deps.db, JOB.settle, { versionId: v.id }, deps.clock.now());
  wakeJobs(deps.db);
};

/** A clone whose every attempt failed (a host that stayed down): the version says so. */
const cloneFailed: JobFailureHook = async (deps, payload, _job, lastError) => {
  const versionId = (payload as { versionId?: unknown } | null)?.versionId;
  if (typeof versionId !== 'string') return;
  const v = await versionById(deps.db, versionId);
  if (!v) return;
  const row = await getVcsModule(deps.db, v.module_id);
  if ((await failClone(deps, v.id, lastError.slice(0, 500))) && row) {
    await recordVcsEvent(deps, { ...eventFor(row), level: 'error', message: `Could not clone version ${v.version}: ${lastError.slice(0, 500)}`, suggestedAction: 'resync the module once the repository is reachable' });
  }
};

/** Records how a version's ingestion ended; retried (with backoff) while it is still running. */
const settle: JobHandler = async (deps, payload) => {
  const v = await versionById(deps.db, field(payload, 'versionId'));
  if (!v) return;
  if (v.status === 'ingesting') throw new Error(`version ${v.version} is still being ingested`);
  const found = await loaded(deps, v.module_id);
  if (!found) return;
  const { row, module } = found;
  const at = v.commit_sha ? ` (commit ${v.commit_sha.slice(0, 12)})` : '';
  if (v.status === 'ok') {
    await recordVcsEvent(deps, { ...eventFor(row), level: 'info', message: `Published ${moduleAddress(module)} ${v.version}${at}` });
  } else if (v.status === 'errored') {
    await recordVcsEvent(deps, {
      ...eventFor(row),
      level: 'error',
      message: `Version ingest failed: ${moduleAddress(module)} ${v.version}${at}: reg_ingress_failed: ${v.error ?? 'refused'}`,
      suggestedAction: 'fix the module and push a new tag (versions are immutable)',
    });
  }
};

/** Removes a webhook at the provider. A hook already gone is fine; a missing token is logged. */
const removeWebhook: JobHandler = async (deps, payload) => {
  const p = payload as { organizationId?: string; oauthTokenId?: string | null; identifier?: string; hookId?: string | null };
  if (!p.organizationId || !p.identifier || !p.hookId) return;
  const conn = p.oauthTokenId ? await connectionForToken(deps, p.oauthTokenId) : undefined;
  if (!conn) {
    await recordVcsEvent(deps, {
      organizationId: p.organizationId,
      level: 'error',
      message: `Could not remove webhook ${p.hookId} from ${p.identifier}: its OAuth token was deleted`,
      suggestedAction: 'remove the webhook in the repository settings',
    });
    return;
  }
  try {
    await deleteWebhook(deps, conn, p.identifier, p.hookId);
    await recordVcsEvent(deps, { organizationId: p.organizationId, oauthClientId: conn.oauthClientId, oauthTokenId: conn.oauthTokenId, level: 'info', message: `Removed webhook ${p.hookId} from ${p.identifier}` });
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.status === 404) return;
    if (err.status === null || err.status >= 500) throw err;
    await recordVcsEvent(deps, {
      organizationId: p.organizationId,
      oauthClientId: conn.oauthClientId,
      oauthTokenId: conn.oauthTokenId,
      level: 'error',
      message: `Could not remove webhook ${p.hookId} from ${p.identifier}: ${err.message}`,
      suggestedAction: 'remove the webhook in the repository settings',
    });
  }
};

/**
 * The periodic rescan: every tag-based module's tags, one module after another in this one
 * leased job (so runs never pile up), with progress saved after each module so a run that
 * stops resumes where it was; then old delivery ids are forgotten. One module's failure is
 * logged in the event log by the scan and does not stop the others.
 */
const rescan: JobHandler = async (deps, payload, job) => {
  let after = (payload as { after?: unknown } | null)?.after;
  if (typeof after !== 'string') after = null;
  for (;;) {
    const ids = await tagModulesAfter(deps.db, after as string | null, 50);
    if (ids.length === 0) break;
    for (const id of ids) {
      const found = await loaded(deps, id);
      const conn = found?.row.oauth_token_id ? await connectionForToken(deps, found.row.oauth_token_id) : undefined;
      if (found && conn) {
        try {
          await scanTags(deps, found.row, found.module, conn, 'periodic', false);
        } catch (err) {
          deps.logger.warn({ err, module: id }, 'periodic rescan of a VCS module failed; the next run retries it');
        }
      }
      after = id;
      await saveJobProgress(deps.db, job.id, { after });
    }
  }
  await purgeDeliveries(deps.db, rfc3339(deps.clock.now().getTime() - DELIVERY_RETENTION_MS));
};

export function vcsRescanJob(everyMs: number): RecurringJob {
  return { kind: JOB.rescan, everyMs, payload: { after: null } };
}

export const vcsModuleJobHandlers: Record<string, JobHandler | JobKind> = {
  [JOB.setup]: setup,
  [JOB.scan]: scan,
  [JOB.clone]: { run: clone, failed: cloneFailed } satisfies JobKind,
  [JOB.settle]: settle,
  [JOB.deleteWebhook]: removeWebhook,
  [JOB.rescan]: rescan,
};

/** vcs-core's hook: a deleted OAuth token (or client) leaves its modules setup_failed; their clones fail when they run. */
export async function onOAuthTokenDeleted(deps: Deps, oauthTokenId: string): Promise<void> {
  for (const row of await vcsModulesOfToken(deps.db, oauthTokenId)) {
    const module = await findModuleById(deps.db, row.module_id);
    const reason = `its OAuth token ${oauthTokenId} was deleted: Terrace no longer reads ${row.identifier} and publishes no new versions`;
    await inTransaction(deps.db, async (tx) => {
      await updateVcsModuleRow(tx, row.module_id, { oauth_token_id: null, status: 'setup_failed', status_error: reason, updated_at: now(deps) });
      await recordVcsEvent(deps, { ...eventFor(row), level: 'error', message: `${module ? moduleAddress(module) : row.identifier}: ${reason}`, suggestedAction: RECONNECT }, tx);
    });
  }
}

/** The registry's module delete hook: each deleted module's webhook is removed at the provider by a job. */
export async function onModulesDeleted(tx: Parameters<typeof enqueue>[0], deps: Deps, moduleIds: string[]): Promise<void> {
  for (const id of moduleIds) {
    const row = await getVcsModule(tx, id);
    if (!row?.webhook_hook_id || !row.oauth_token_id) continue;
    await enqueue(tx, JOB.deleteWebhook, { organizationId: row.organization_id, oauthTokenId: row.oauth_token_id, identifier: row.identifier, hookId: row.webhook_hook_id }, deps.clock.now());
  }
}
