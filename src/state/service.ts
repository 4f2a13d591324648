import { createHash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { z } from 'zod';
import { BlobTooLargeError } from '../blobs/types.js';
import { rfc3339 } from '../clock.js';
import { inTransaction, type Queryable } from '../db/index.js';
import type { WorkspaceRow } from '../db/rows.js';
import { claimUpload, consumeUpload, releaseUpload } from '../db/upload-claims.js';
import type { Deps } from '../deps.js';
import { clientClosedBody, zodToApiError } from '../http/body.js';
import { ApiError, conflict, notFound, payloadTooLarge, quoteValue, unprocessable } from '../http/errors.js';
import { principalLabel, type Principal } from '../identity/principal.js';
import { generateToken, hashToken } from '../identity/tokens.js';
import { newId } from '../ids.js';
import { enqueue, wakeJobs } from '../jobs/runner.js';
import { heldBy, requireManage, type WorkspaceContext } from '../workspaces/service.js';
import { getWorkspaceById, setCurrentStateVersion } from '../workspaces/store.js';
import { analyzeState, assertJsonDepth, assertJsonObject, checkHeader, StateFormatError, type StateHeader } from './analyze.js';
import { parseJsonStateOutputs } from './output-types.js';
import { removeDocuments, type InlineStateBody } from './inline-body.js';
import { EXPIRE_STATE_UPLOAD, PROCESS_STATE_VERSION } from './processing.js';
import { blobKeysOf, getStateVersion, stateBlobKeys, type StateVersionRow } from './store.js';

const ATTR = (k: string) => `/data/attributes/${k}`;

/** go-tfe's StateVersionCreateOptions (unknown attributes ignored; `run` relationship ignored). */
export const createStateVersionSchema = z.object({
  serial: z
    .number({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a whole number') })
    .int({ error: 'must be a whole number' })
    .min(0, { error: 'must not be negative' })
    .max(Number.MAX_SAFE_INTEGER, { error: 'is too large' }),
  md5: z
    .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
    .regex(/^[0-9a-fA-F]{32}$/, { error: 'must be the MD5 of the state file as 32 hexadecimal digits' }),
  lineage: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).max(200).nullable().optional(),
  state: z.string({ error: 'must be a base64 string' }).nullable().optional(),
  'json-state': z.string({ error: 'must be a base64 string' }).nullable().optional(),
  'json-state-outputs': z.string({ error: 'must be a base64 string' }).nullable().optional(),
  force: z.boolean({ error: 'must be true or false' }).nullable().optional(),
});
export type CreateStateVersionInput = z.output<typeof createStateVersionSchema>;

function parseJsonAttr(buf: Buffer, attr: string): unknown {
  try {
    assertJsonDepth(buf);
  } catch (err) {
    if (err instanceof StateFormatError) throw unprocessable(`${attr} is not usable: ${err.message}`, ATTR(attr));
    throw err;
  }
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (err) {
    throw unprocessable(`${attr} is not valid JSON once decoded: ${(err as Error).message}`, ATTR(attr));
  }
}


/** The version that would follow the current one must be newer and of the same lineage, unless forced. */
function successionError(current: StateVersionRow | undefined, serial: number, lineage: string | null | undefined): ApiError | null {
  if (!current) return null;
  if (serial <= current.serial) {
    return unprocessable(
      `serial ${serial} is not greater than the serial of the current state version (${current.serial}); a new state must have a higher serial (or send force: true)`,
      ATTR('serial'),
    );
  }
  if (lineage && current.lineage && lineage !== current.lineage) {
    return unprocessable(
      `lineage ${quoteValue(lineage)} differs from the current state's lineage ${quoteValue(current.lineage)}: this state belongs to another state history (send force: true to replace it)`,
      ATTR('lineage'),
    );
  }
  return null;
}

async function currentOf(db: Queryable, ws: WorkspaceRow): Promise<StateVersionRow | undefined> {
  return ws.current_state_version_id ? getStateVersion(db, ws.current_state_version_id) : undefined;
}

function requireLockHolder(ws: WorkspaceRow, p: Principal): void {
  if (!heldBy(ws, p)) {
    throw conflict(
      ws.locked === 1
        ? `workspace ${quoteValue(ws.name)} is locked by someone else; a state version can only be created by the lock holder`
        : `workspace ${quoteValue(ws.name)} must be locked by you before a state version is created (POST /api/v2/workspaces/${ws.id}/actions/lock)`,
    );
  }
}

/** Reads and checks a state file as a stream; a StateFormatError becomes a 422 naming pointer. */
async function checkStateFile(body: Readable, pointer: string): Promise<StateHeader> {
  try {
    return checkHeader(await analyzeState(body, { outputValues: false }));
  } catch (err) {
    if (err instanceof StateFormatError) throw unprocessable(`the state is not a Terraform state file: ${err.message}`, pointer);
    throw err;
  }
}

async function deleteBlobs(deps: Deps, keys: (string | null | undefined)[]): Promise<void> {
  for (const key of keys) {
    if (key) await deps.blobs.delete(key).catch((err) => deps.logger.warn({ err, key }, 'could not remove a state blob'));
  }
}

export interface CreatedStateVersion {
  sv: StateVersionRow;
  uploadUrls?: { state: string; jsonState: string };
}

/** A state version about to be created: who may create it is settled, its id and blob keys chosen. */
export interface StateVersionDraft {
  id: string;
  keys: ReturnType<typeof stateBlobKeys>;
}

/**
 * Settles, before any of the body is read, that the caller may create a state version here:
 * manage rights and the workspace lock. The body then streams into the draft's blob keys.
 */
export function draftStateVersion(p: Principal, ctx: WorkspaceContext): StateVersionDraft {
  requireManage(ctx);
  requireLockHolder(ctx.ws, p);
  const id = newId('sv');
  return { id, keys: stateBlobKeys(ctx.ws, id) };
}

/** The blob keys of a draft, by the attribute whose document goes there. */
export function documentKeys(draft: StateVersionDraft): Record<'state' | 'json-state' | 'json-state-outputs', string> {
  return { state: draft.keys.state, 'json-state': draft.keys.jsonState, 'json-state-outputs': draft.keys.jsonOutputs };
}

async function readDocument(deps: Deps, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of await deps.blobs.get(key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * go-tfe's Create (state inline, base64) or the first half of its Upload (no state: answers
 * one-time upload URLs). The body's documents are already in the draft's blobs (streamed by
 * readInlineStateBody); everything is checked before the row is written, and on any refusal
 * those blobs are removed. The row, the workspace's current version and the processing job
 * commit together.
 */
export async function createStateVersion(
  deps: Deps,
  p: Principal,
  ctx: WorkspaceContext,
  draft: StateVersionDraft,
  body: InlineStateBody,
): Promise<CreatedStateVersion> {
  try {
    return await createFromDocuments(deps, p, ctx, draft, body);
  } catch (err) {
    await removeDocuments(deps, body);
    throw err;
  }
}

async function createFromDocuments(deps: Deps, p: Principal, ctx: WorkspaceContext, draft: StateVersionDraft, body: InlineStateBody): Promise<CreatedStateVersion> {
  requireManage(ctx);
  const { ws } = ctx;
  const parsed = createStateVersionSchema.safeParse(body.attributes);
  if (!parsed.success) throw zodToApiError(parsed.error, '/data/attributes');
  const a = parsed.data;
  const md5 = a.md5.toLowerCase();
  const force = a.force === true;
  const docs = body.documents;

  // Older go-tfe sends unset pointers as null: null means absent.
  const state = docs.state ?? null;
  let header: StateHeader | null = null;
  if (state) {
    if (state.md5 !== md5) {
      throw unprocessable(`md5 ${md5} does not match the MD5 of the decoded state, ${state.md5}; nothing was stored`, ATTR('md5'));
    }
    header = await checkStateFile(await deps.blobs.get(state.key), ATTR('state'));
    if (header.serial !== a.serial) {
      throw unprocessable(`serial ${a.serial} does not match the state file's serial ${header.serial}`, ATTR('serial'));
    }
    if (a.lineage && a.lineage !== header.lineage) {
      throw unprocessable(`lineage ${quoteValue(a.lineage)} does not match the state file's lineage ${quoteValue(header.lineage)}`, ATTR('lineage'));
    }
  } else if (docs['json-state']) {
    throw unprocessable('json-state is accepted only together with state; without state, upload it to hosted-json-state-upload-url', ATTR('json-state'));
  }
  const jsonState = docs['json-state'] ?? null;
  if (jsonState) {
    try {
      await assertJsonObject(await deps.blobs.get(jsonState.key));
    } catch (err) {
      if (err instanceof StateFormatError) throw unprocessable(`json-state is not usable: ${err.message}`, ATTR('json-state'));
      throw err;
    }
  }
  const jsonOutputs = docs['json-state-outputs'] ?? null;
  if (jsonOutputs) {
    // Only outputs: small next to the state, and bounded by TERRACE_MAX_STATE_BYTES.
    const outputs = parseJsonStateOutputs(parseJsonAttr(await readDocument(deps, jsonOutputs.key), 'json-state-outputs'));
    if (typeof outputs === 'string') throw unprocessable(`json-state-outputs: ${outputs}`, ATTR('json-state-outputs'));
  }
  const lineage = header?.lineage ?? a.lineage ?? null;
  const early = force ? null : successionError(await currentOf(deps.db, ws), a.serial, lineage);
  if (early) throw early;

  const id = draft.id;
  const now = deps.clock.now();
  const tokens = state ? null : { state: generateToken(), json: generateToken() };
  const expires = new Date(now.getTime() + deps.config.uploadUrlTtlSeconds * 1000);
  const row: StateVersionRow = {
    id,
    workspace_id: ws.id,
    serial: a.serial,
    lineage,
    md5,
    force: force ? 1 : 0,
    status: state ? 'finalized' : 'pending',
    size: state ? state.size : null,
    state_format_version: header ? header.version : null,
    terraform_version: null,
    resources_processed: 0,
    resource_count: null,
    blob_key: state ? state.key : null,
    json_state_blob_key: jsonState ? jsonState.key : null,
    json_outputs_blob_key: jsonOutputs ? jsonOutputs.key : null,
    upload_token_hash: tokens ? hashToken(tokens.state) : null,
    json_upload_token_hash: tokens ? hashToken(tokens.json) : null,
    upload_expires_at: tokens ? rfc3339(expires) : null,
    created_by: principalLabel(p),
    created_at: rfc3339(now),
    finalized_at: state ? rfc3339(now) : null,
  };
  await inTransaction(deps.db, async (tx) => {
    // Checked again where it counts: another version may have landed since.
    const fresh = await getWorkspaceById(tx, ws.id);
    if (!fresh) throw notFound(`workspace ${quoteValue(ws.id)} not found`);
    requireLockHolder(fresh, p);
    const err = force ? null : successionError(await currentOf(tx, fresh), a.serial, lineage);
    if (err) throw err;
    await tx.insertInto('state_versions').values(row).execute();
    if (row.status === 'finalized') {
      await setCurrentStateVersion(tx, ws.id, id, row.created_at);
      await enqueue(tx, PROCESS_STATE_VERSION, { stateVersionId: id }, now);
    } else {
      // A pending version whose upload never comes is removed when its URL expires.
      await enqueue(tx, EXPIRE_STATE_UPLOAD, { stateVersionId: id }, new Date(expires.getTime() + 1000), now);
    }
  });
  wakeJobs(deps.db);
  deps.logger.info({ actor: principalLabel(p), workspace: ws.id, stateVersion: id, serial: a.serial, status: row.status }, 'state version created');
  const base = deps.config.publicUrl;
  return {
    sv: row,
    ...(tokens ? { uploadUrls: { state: `${base}/uploads/state/${tokens.state}`, jsonState: `${base}/uploads/state-json/${tokens.json}` } } : {}),
  };
}

/** Hashes (MD5) what streams through, for the upload-URL variant's check against the declared md5. */
class Md5Meter extends Transform {
  private readonly hash = createHash('md5');
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk);
    cb(null, chunk);
  }
  hex(): string {
    return this.hash.digest('hex');
  }
}

const invalidUrl = () => notFound('this upload URL is invalid, has expired, or was already used');

/** Streams an upload into key; maps size and transport failures. */
async function streamInto(deps: Deps, key: string, body: Readable, contentLength: number | null, what: string) {
  const max = deps.config.maxStateBytes;
  if (contentLength !== null && contentLength > max) {
    body.resume();
    return { error: 'rejected' as const, err: payloadTooLarge(`the ${what} is ${contentLength} bytes, over the limit of ${max} bytes (TERRACE_MAX_STATE_BYTES)`) };
  }
  const meter = new Md5Meter();
  body.on('error', (e) => meter.destroy(e));
  try {
    const put = await deps.blobs.put(key, body.pipe(meter), { maxBytes: max, contentType: 'application/json' });
    if (contentLength !== null && put.size !== contentLength) {
      await deps.blobs.delete(key);
      return { error: 'interrupted' as const, err: new ApiError(400, 'upload interrupted', `received ${put.size} of ${contentLength} bytes; retry the PUT`) };
    }
    return { error: null, size: put.size, md5: meter.hex() };
  } catch (err) {
    if (err instanceof BlobTooLargeError) {
      return { error: 'rejected' as const, err: payloadTooLarge(`the ${what} is over the limit of ${max} bytes (TERRACE_MAX_STATE_BYTES)`) };
    }
    if (!clientClosedBody(body, err)) deps.logger.warn({ err, key }, 'state upload interrupted');
    return { error: 'interrupted' as const, err: new ApiError(400, 'upload interrupted', 'the upload did not complete; retry the PUT') };
  }
}

/**
 * The one-time hosted-state-upload-url. The body streams into the blob store (MD5 computed on
 * the way), is then read back and checked; a body that is refused removes the pending state
 * version and every blob of it, so nothing of it remains. A transfer that breaks off keeps the
 * version pending and the URL usable until it expires.
 */
export async function receiveStateUpload(deps: Deps, token: string, body: Readable, contentLength: number | null): Promise<StateVersionRow> {
  const h = hashToken(token);
  const claimed = await claimUpload(deps.db, 'state', h, rfc3339(deps.clock.now()));
  const ws = claimed ? await getWorkspaceById(deps.db, claimed.workspace_id) : undefined;
  if (!claimed || !ws) {
    body.resume();
    throw invalidUrl();
  }
  const key = stateBlobKeys(ws, claimed.id).state;

  const reject = async (err: ApiError): Promise<never> => {
    const row = await getStateVersion(deps.db, claimed.id);
    await deps.db.deleteFrom('state_versions').where('id', '=', claimed.id).where('status', '=', 'pending').execute();
    await deleteBlobs(deps, [key, ...(row ? blobKeysOf(row) : [])]);
    deps.logger.info({ stateVersion: claimed.id, reason: err.detail }, 'state upload refused; the pending state version was removed');
    throw err;
  };

  const put = await streamInto(deps, key, body, contentLength, 'state file');
  if (put.error === 'interrupted') {
    await releaseUpload(deps.db, 'state', claimed.id, h);
    throw put.err;
  }
  if (put.error === 'rejected') return reject(put.err);
  if (put.md5 !== claimed.md5) {
    return reject(unprocessable(`the uploaded state's MD5 is ${put.md5}, but the state version was created with md5 ${claimed.md5}; nothing was stored`));
  }
  let header: StateHeader;
  try {
    header = await checkStateFile(await deps.blobs.get(key), '');
  } catch (err) {
    if (err instanceof ApiError) return reject(new ApiError(err.status, err.title, err.detail));
    throw err;
  }
  if (header.serial !== claimed.serial) return reject(unprocessable(`the uploaded state's serial ${header.serial} does not match the state version's serial ${claimed.serial}`));
  if (claimed.lineage && claimed.lineage !== header.lineage) {
    return reject(unprocessable(`the uploaded state's lineage ${quoteValue(header.lineage)} does not match the state version's lineage ${quoteValue(claimed.lineage)}`));
  }

  const finalizedAt = deps.clock.now();
  const outcome = await inTransaction(deps.db, async (tx): Promise<'finalized' | 'gone' | ApiError> => {
    const fresh = await getWorkspaceById(tx, ws.id);
    if (!fresh) return 'gone';
    const refusal = claimed.force === 1 ? null : successionError(await currentOf(tx, fresh), claimed.serial, header.lineage);
    if (refusal) return refusal;
    const used = await consumeUpload(tx, 'state', claimed.id, h, {
      status: 'finalized',
      size: put.size,
      lineage: header.lineage,
      state_format_version: header.version,
      blob_key: key,
      finalized_at: rfc3339(finalizedAt),
    });
    if (!used) return 'gone';
    await setCurrentStateVersion(tx, ws.id, claimed.id, rfc3339(finalizedAt));
    await enqueue(tx, PROCESS_STATE_VERSION, { stateVersionId: claimed.id }, finalizedAt);
    return 'finalized';
  });
  if (outcome instanceof ApiError) return reject(new ApiError(outcome.status, outcome.title, outcome.detail));
  if (outcome === 'gone') {
    // Expired or deleted (with its workspace) while the bytes were arriving.
    await deleteBlobs(deps, [key]);
    throw invalidUrl();
  }
  wakeJobs(deps.db);
  deps.logger.info({ stateVersion: claimed.id, size: put.size }, 'state uploaded');
  return (await getStateVersion(deps.db, claimed.id))!;
}

/**
 * The one-time hosted-json-state-upload-url (Terraform's JSON state representation). Stored
 * for download; a body that is not one JSON object is refused and removed.
 */
export async function receiveJsonStateUpload(deps: Deps, token: string, body: Readable, contentLength: number | null): Promise<StateVersionRow> {
  const h = hashToken(token);
  const claimed = await claimUpload(deps.db, 'state-json', h, rfc3339(deps.clock.now()));
  const ws = claimed ? await getWorkspaceById(deps.db, claimed.workspace_id) : undefined;
  if (!claimed || !ws) {
    body.resume();
    throw invalidUrl();
  }
  const key = stateBlobKeys(ws, claimed.id).jsonState;
  // Refused or broken off, the bytes go and the URL is given back as it was.
  const giveBack = async (err: ApiError): Promise<never> => {
    await deleteBlobs(deps, [key]);
    await releaseUpload(deps.db, 'state-json', claimed.id, h);
    throw err;
  };
  const put = await streamInto(deps, key, body, contentLength, 'JSON state');
  if (put.error !== null) return giveBack(put.err);
  try {
    await assertJsonObject(await deps.blobs.get(key));
  } catch (err) {
    if (err instanceof StateFormatError) return giveBack(unprocessable(`the JSON state is not usable: ${err.message}`));
    await releaseUpload(deps.db, 'state-json', claimed.id, h);
    throw err;
  }
  if (!(await consumeUpload(deps.db, 'state-json', claimed.id, h, { json_state_blob_key: key }))) {
    await deleteBlobs(deps, [key]);
    throw invalidUrl();
  }
  return (await getStateVersion(deps.db, claimed.id))!;
}
