import { rfc3339 } from '../clock.js';
import type { Queryable, Tx } from '../db/index.js';
import type { Deps } from '../deps.js';
import { newId } from '../ids.js';
import { getVersion, getVersionById, insertVersion, transitionVersion, type VersionRow } from './store.js';

/**
 * Versions made by a publisher that works without a caller (VCS tags and commits): the publisher
 * has authorized the work when it was set up. The bytes then go through registry/ingest like an
 * upload's.
 */

/**
 * A new version in status "cloning" for a commit, in the caller's transaction. Versions are
 * immutable: when the version exists, nothing changes and undefined is returned, unless it failed
 * to clone and replaceFailed is set (a retry).
 */
export async function createClonedVersion(
  tx: Tx,
  deps: Deps,
  moduleId: string,
  version: string,
  commitSha: string,
  opts: { replaceFailed?: boolean } = {},
): Promise<VersionRow | undefined> {
  const existing = await getVersion(tx, moduleId, version);
  if (existing && !(opts.replaceFailed && existing.status === 'clone_failed')) return undefined;
  const now = rfc3339(deps.clock.now());
  const row: VersionRow = {
    id: newId('modver'),
    module_id: moduleId,
    version,
    status: 'cloning',
    error: null,
    description: null,
    commit_sha: commitSha,
    blob_key: null,
    size: null,
    sha256: null,
    upload_token_hash: null,
    upload_expires_at: null,
    created_at: now,
    updated_at: now,
    published_at: null,
    contents: null,
    warnings: '[]',
    upload_lease_until: null,
  };
  await insertVersion(tx, row, existing?.id);
  return row;
}

/** Marks a version that is being cloned as failed with a reason; false if it is no longer cloning. */
export async function failClone(deps: Deps, versionId: string, error: string): Promise<boolean> {
  return transitionVersion(deps.db, versionId, ['cloning'], { status: 'clone_failed', error, updated_at: rfc3339(deps.clock.now()) }, { blobKey: null });
}

export async function versionById(db: Queryable, id: string): Promise<VersionRow | undefined> {
  return getVersionById(db, id);
}
