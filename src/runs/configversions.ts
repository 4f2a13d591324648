import { Transform, type Readable } from 'node:stream';
import { z } from 'zod';
import { configurationVersionKey } from '../blobs/layout.js';
import { BlobTooLargeError } from '../blobs/types.js';
import { rfc3339 } from '../clock.js';
import { claimUpload, consumeUpload, releaseUpload } from '../db/upload-claims.js';
import type { Deps } from '../deps.js';
import { clientClosedBody } from '../http/body.js';
import { ApiError, notFound, payloadTooLarge, quoteValue, unauthorized, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { generateToken, hashToken } from '../identity/tokens.js';
import { newId } from '../ids.js';
import { getWorkspaceById } from '../workspaces/store.js';
import { workspaceById, type WorkspaceContext } from '../workspaces/service.js';
import { resultForToken, type Caller } from './access.js';
import { getConfigurationVersion, getRun, insertConfigurationVersion, type ConfigurationVersionRow } from './store.js';

const bool = () => z.boolean({ error: 'must be true or false' }).optional();
export const createConfigurationVersionSchema = z.object({ 'auto-queue-runs': bool(), speculative: bool(), provisional: bool() });

const hidden = (id: string) => notFound(`configuration version ${quoteValue(id)} not found, or you are not authorized to see it`);
const invalidUrl = () => notFound('this upload URL is invalid, has expired, or was already used; create a new configuration version');

/** A configuration version and its workspace, if the caller sees the workspace. */
export async function readableConfigurationVersion(deps: Deps, p: Principal, id: string): Promise<{ cv: ConfigurationVersionRow } & WorkspaceContext> {
  const cv = await getConfigurationVersion(deps.db, id);
  if (!cv) throw hidden(id);
  const ctx = await workspaceById(deps, p, cv.workspace_id).catch(() => {
    throw hidden(id);
  });
  return { cv, ...ctx };
}

/** Creates a pending configuration version with a one-time upload URL (shown in this answer only). */
export async function createConfigurationVersion(deps: Deps, p: Principal, ctx: WorkspaceContext, input: z.output<typeof createConfigurationVersionSchema>) {
  const now = deps.clock.now();
  const token = generateToken();
  const row: ConfigurationVersionRow = {
    id: newId('cv'),
    workspace_id: ctx.ws.id,
    status: 'pending',
    source: 'tfe-api',
    speculative: input.speculative ? 1 : 0,
    provisional: input.provisional ? 1 : 0,
    auto_queue_runs: input['auto-queue-runs'] === false ? 0 : 1,
    upload_token_hash: hashToken(token),
    upload_expires_at: rfc3339(now.getTime() + deps.config.uploadUrlTtlSeconds * 1000),
    blob_key: null,
    size: null,
    status_timestamps: '{}',
    created_at: rfc3339(now),
  };
  await insertConfigurationVersion(deps.db, row);
  deps.logger.info({ by: principalLabel(p), configurationVersion: row.id, workspace: ctx.ws.id }, 'configuration version created');
  return { cv: row, uploadUrl: `${deps.config.publicUrl}/uploads/configuration-versions/${token}` };
}

/**
 * The one-time upload URL: the tar.gz streams into the blob store (size-limited), then the
 * version becomes uploaded in one statement that also uses the URL up. A broken or refused
 * upload gives the URL back unchanged.
 */
export async function receiveConfigurationUpload(deps: Deps, token: string, body: Readable, declared: number | null): Promise<ConfigurationVersionRow> {
  const h = hashToken(token);
  const claimed = await claimUpload(deps.db, 'configuration-version', h, rfc3339(deps.clock.now()));
  const ws = claimed ? await getWorkspaceById(deps.db, claimed.workspace_id) : undefined;
  if (!claimed || !ws) {
    body.resume();
    throw invalidUrl();
  }
  const max = deps.config.maxConfigurationVersionBytes;
  const key = configurationVersionKey(ws.organization_id, ws.id, claimed.id);
  const refuse = async (err: ApiError) => {
    await releaseUpload(deps.db, 'configuration-version', claimed.id, h);
    return err;
  };
  if (declared !== null && declared > max) {
    body.resume();
    throw await refuse(payloadTooLarge(`the configuration is ${declared} bytes, over the limit of ${max} bytes (TERRACE_MAX_CONFIGURATION_VERSION_BYTES)`));
  }
  let size: number;
  const checked = gzipOnly();
  body.on('error', (e) => checked.destroy(e));
  try {
    size = (await deps.blobs.put(key, body.pipe(checked), { maxBytes: max, contentType: 'application/gzip' })).size;
  } catch (err) {
    if (err instanceof BlobTooLargeError) throw await refuse(payloadTooLarge(`the configuration is over the limit of ${max} bytes (TERRACE_MAX_CONFIGURATION_VERSION_BYTES)`));
    if (!clientClosedBody(body, err)) deps.logger.warn({ err, key }, 'configuration upload interrupted');
    throw await refuse(new ApiError(400, 'upload interrupted', 'the upload did not complete; retry the PUT'));
  }
  if (checked.refused()) {
    await deps.blobs.delete(key);
    throw await refuse(notGzip());
  }
  if (declared !== null && size !== declared) {
    await deps.blobs.delete(key);
    throw await refuse(new ApiError(400, 'upload interrupted', `received ${size} of ${declared} bytes; retry the PUT`));
  }
  const at = rfc3339(deps.clock.now());
  const ok = await consumeUpload(deps.db, 'configuration-version', claimed.id, h, {
    status: 'uploaded',
    blob_key: key,
    size,
    status_timestamps: JSON.stringify({ 'uploaded-at': at }),
  });
  if (!ok) {
    await deps.blobs.delete(key);
    throw invalidUrl();
  }
  deps.logger.info({ configurationVersion: claimed.id, size }, 'configuration uploaded');
  return (await getConfigurationVersion(deps.db, claimed.id))!;
}

const notGzip = () => unprocessable('the configuration must be a tar.gz archive (gzip data, as `tar -czf` makes); nothing was stored', '');

/**
 * Passes the bytes through once their first two are gzip's magic number. Anything else (or an
 * empty body) is swallowed and flagged, so the put ends cleanly and the caller refuses it.
 */
function gzipOnly(): Transform & { refused: () => boolean } {
  let head = Buffer.alloc(0);
  let state: 'unknown' | 'gzip' | 'refused' = 'unknown';
  const t = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (state === 'gzip') return cb(null, chunk);
      if (state === 'refused') return cb();
      head = Buffer.concat([head, chunk]);
      if (head.length < 2) return cb();
      state = head[0] === 0x1f && head[1] === 0x8b ? 'gzip' : 'refused';
      cb(null, state === 'gzip' ? head : undefined);
    },
    flush(cb) {
      if (state === 'unknown') state = 'refused';
      cb();
    },
  });
  return Object.assign(t, { refused: () => state === 'refused' });
}

/**
 * The blob of an uploaded configuration version the caller may download: workspace managers, or
 * an integrator whose access token belongs to a run of this configuration version.
 */
export async function downloadableConfiguration(deps: Deps, caller: Caller, id: string): Promise<string> {
  let cv: ConfigurationVersionRow | undefined;
  if (caller.taskToken) {
    const result = await resultForToken(deps, caller.taskToken);
    if (!result) throw unauthorized('the run task access token is invalid or no longer valid');
    const run = await getRun(deps.db, result.run_id);
    cv = run?.configuration_version_id === id ? await getConfigurationVersion(deps.db, id) : undefined;
  } else {
    if (!caller.principal) throw unauthorized();
    const r = await readableConfigurationVersion(deps, caller.principal, id);
    cv = r.access.readStateVersions ? r.cv : undefined;
  }
  if (!cv || cv.status !== 'uploaded' || !cv.blob_key) throw hidden(id);
  return cv.blob_key;
}
