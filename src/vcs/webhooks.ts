// Inbound VCS webhooks (contract-wave2 §6): GitHub push/create/ping signed with
// X-Hub-Signature-256 over the raw body (JSON or form-encoded), GitLab Tag Push Hook with the
// secret verbatim in X-Gitlab-Token. Verified in constant time before anything is parsed; every
// delivery that is not a new tag is acknowledged (2xx) so the provider does not disable the hook;
// work is queued as jobs, never done in the request.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { ApiError, badRequest, notFound, truncate } from '../http/errors.js';
import { enqueue, wakeJobs } from '../jobs/runner.js';
import { findModuleById } from '../registry/store.js';
import { JOB } from './module-jobs-kinds.js';
import { eventFor, moduleAddress, queueClone, webhookSecret } from './module-service.js';
import { tagVersion } from './module-settings.js';
import { recordDelivery, vcsModuleByWebhook } from './module-store.js';
import { recordVcsEvent } from './service.js';

/** Most bytes of a delivery read: tag pushes are small; GitHub's cap of 25 MB is for big branch pushes we ignore. */
export const MAX_WEBHOOK_BYTES = 1024 * 1024;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SHA_RE = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;
const ZERO_RE = /^0+$/;

export interface WebhookOutcome {
  status: 200 | 202;
  body: { status: string; detail: string; version?: string };
}

type Header = (name: string) => string | undefined;

export function sameSecret(given: string, expected: string): boolean {
  // Hashing first gives equal lengths, so the compare takes the same time whatever was sent.
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export function githubSignatureOk(raw: Buffer, header: string | undefined, secret: string): boolean {
  if (!header || !/^sha256=[0-9a-fA-F]{64}$/.test(header)) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  return timingSafeEqual(Buffer.from(header.slice(7).toLowerCase(), 'hex'), expected);
}

function parsePayload(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  const ct = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  let text = raw.toString('utf8');
  if (ct === 'application/x-www-form-urlencoded') {
    const p = new URLSearchParams(text).get('payload');
    if (p === null) throw badRequest('a form-encoded delivery must carry its JSON in the "payload" field');
    text = p;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw badRequest('the delivery body is not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest('the delivery body must be a JSON object');
  return v as Record<string, unknown>;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const obj = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/** A tag event as both providers describe it, or the reason the delivery publishes nothing. */
type Parsed =
  | { kind: 'tag'; event: string; tag: string; sha: string; repository: string | undefined }
  | { kind: 'scan'; event: string; tag: string; repository: string | undefined }
  | { kind: 'ping'; event: string }
  | { kind: 'ignored'; event: string; why: string };

function parseGitHub(event: string, p: Record<string, unknown>): Parsed {
  const repository = str(obj(p.repository)?.full_name);
  if (event === 'ping') return { kind: 'ping', event };
  if (event === 'create') {
    if (p.ref_type !== 'tag' || !str(p.ref)) return { kind: 'ignored', event, why: `a ${str(p.ref_type) ?? 'ref'} was created, not a tag` };
    // "create" carries no commit SHA: a scan reads it from the repository.
    return { kind: 'scan', event, tag: str(p.ref)!, repository };
  }
  if (event !== 'push') return { kind: 'ignored', event, why: `the ${truncate(event, 40)} event publishes nothing` };
  const ref = str(p.ref) ?? '';
  if (!ref.startsWith('refs/tags/')) return { kind: 'ignored', event, why: `${truncate(ref, 100)} is not a tag` };
  const tag = ref.slice('refs/tags/'.length);
  const after = str(p.after) ?? '';
  if (p.deleted === true || ZERO_RE.test(after)) return { kind: 'ignored', event, why: `tag ${truncate(tag, 100)} was deleted (versions stay)` };
  // Annotated tags: "after" is the tag object; head_commit.id is the commit it points at.
  const sha = str(obj(p.head_commit)?.id) ?? after;
  if (!SHA_RE.test(sha)) return { kind: 'scan', event, tag, repository };
  return { kind: 'tag', event, tag, sha, repository };
}

function parseGitLab(p: Record<string, unknown>): Parsed {
  // The UI's test button once sent push payloads under the tag header: trust object_kind and ref.
  const event = str(p.object_kind) ?? 'unknown';
  const repository = str(obj(p.project)?.path_with_namespace);
  const ref = str(p.ref) ?? '';
  if (event !== 'tag_push' || !ref.startsWith('refs/tags/')) return { kind: 'ignored', event, why: `${truncate(ref || event, 100)} is not a tag push` };
  const tag = ref.slice('refs/tags/'.length);
  const sha = str(p.checkout_sha);
  if (!sha || ZERO_RE.test(str(p.after) ?? '')) return { kind: 'ignored', event, why: `tag ${truncate(tag, 100)} was deleted (versions stay)` };
  if (!SHA_RE.test(sha)) return { kind: 'scan', event, tag, repository };
  return { kind: 'tag', event, tag, sha, repository };
}

/**
 * Takes one delivery for the module behind uuid. Throws 404 for an unknown uuid, 401 for a bad
 * signature or token, 400 for a signed body that is not a payload; anything else is 2xx.
 */
export async function receiveWebhook(deps: Deps, uuid: string, header: Header, raw: Buffer): Promise<WebhookOutcome> {
  const row = UUID_RE.test(uuid) ? await vcsModuleByWebhook(deps.db, uuid) : undefined;
  if (!row) throw notFound('no webhook is registered at this URL');
  const module = await findModuleById(deps.db, row.module_id);
  if (!module) throw notFound('no webhook is registered at this URL');
  const address = moduleAddress(module);
  const secret = webhookSecret(deps, row);
  const ev = eventFor(row);

  const ghEvent = header('x-github-event');
  const glEvent = header('x-gitlab-event');
  const verified = ghEvent !== undefined ? githubSignatureOk(raw, header('x-hub-signature-256'), secret) : glEvent !== undefined ? sameSecret(header('x-gitlab-token') ?? '', secret) : false;
  if (!verified) {
    const what = ghEvent !== undefined ? 'X-Hub-Signature-256 does not match the body' : glEvent !== undefined ? 'X-Gitlab-Token is wrong' : 'it is neither a GitHub nor a GitLab delivery';
    await recordVcsEvent(deps, { ...ev, level: 'error', message: `Rejected a webhook delivery for ${address}: ${what}`, suggestedAction: 'check the webhook secret (GET .../vcs-webhook shows it to module managers)' });
    throw new ApiError(401, 'unauthorized', ghEvent !== undefined ? 'the X-Hub-Signature-256 signature does not match the body and the webhook secret' : glEvent !== undefined ? 'the X-Gitlab-Token does not match the webhook secret' : 'the delivery must be signed: X-Hub-Signature-256 (GitHub) or X-Gitlab-Token (GitLab)');
  }

  const payload = parsePayload(raw, header('content-type'));
  const parsed = ghEvent !== undefined ? parseGitHub(ghEvent, payload) : parseGitLab(payload);
  const deliveryId = header('x-github-delivery') ?? header('x-gitlab-event-uuid') ?? header('idempotency-key');
  const delivery = deliveryId ? truncate(deliveryId, 200) : undefined;
  const nowIso = rfc3339(deps.clock.now());

  if (parsed.kind === 'ping') {
    await recordVcsEvent(deps, { ...ev, level: 'info', message: `Received ping for ${row.identifier} (${address})` });
    return { status: 200, body: { status: 'ok', detail: 'pong' } };
  }
  if (parsed.kind === 'ignored') {
    await recordVcsEvent(deps, { ...ev, level: 'info', message: `Ignored ${parsed.event} for ${row.identifier} (${address}): ${parsed.why}` });
    return { status: 200, body: { status: 'ignored', detail: parsed.why } };
  }
  const ref = `refs/tags/${truncate(parsed.tag, 200)}`;
  if (parsed.repository && parsed.repository.toLowerCase() !== row.identifier.toLowerCase()) {
    const why = `the delivery is for ${truncate(parsed.repository, 200)}, not ${row.identifier}`;
    await recordVcsEvent(deps, { ...ev, level: 'error', message: `Ignored ${parsed.event} for ${address}: ${why}`, suggestedAction: 'remove this webhook from the other repository' });
    return { status: 200, body: { status: 'ignored', detail: why } };
  }
  const ignore = async (why: string, level: 'info' | 'error' = 'info', suggestedAction: string | null = null): Promise<WebhookOutcome> => {
    await recordVcsEvent(deps, { ...ev, level, message: `Ignored ${parsed.event} for ${row.identifier} (ref ${ref}): ${why}`, suggestedAction });
    return { status: 200, body: { status: 'ignored', detail: why } };
  };
  if (row.branch !== '') return ignore(`${address} publishes from branch ${row.branch}, not from tags`);
  if (!row.oauth_token_id) return ignore(`${address} has lost its OAuth token`, 'error', 'connect the module to another OAuth token with PATCH (vcs-repo.oauth-token-id)');
  const v = tagVersion(parsed.tag, row.tag_prefix);
  if ('skipped' in v) return ignore(v.skipped === 'prefix' ? `the tag is outside prefix ${row.tag_prefix}` : 'the tag is not a semantic version');

  const outcome = await inTransaction(deps.db, async (tx): Promise<'duplicate' | 'exists' | 'queued' | 'scan'> => {
    if (delivery && !(await recordDelivery(tx, row.module_id, delivery, nowIso))) return 'duplicate';
    if (parsed.kind === 'scan') {
      await enqueue(tx, JOB.scan, { moduleId: row.module_id, reason: 'webhook' }, deps.clock.now());
      return 'scan';
    }
    return (await queueClone(tx, deps, row.module_id, v.version, parsed.sha)) ? 'queued' : 'exists';
  });
  if (outcome === 'duplicate') {
    await recordVcsEvent(deps, { ...ev, level: 'info', message: `Processing skipped for duplicate delivery ${delivery} (${parsed.event} ${ref} of ${row.identifier})` });
    return { status: 200, body: { status: 'duplicate', detail: `delivery ${delivery} was processed before` } };
  }
  if (outcome === 'exists') {
    await recordVcsEvent(deps, { ...ev, level: 'info', message: `Processing skipped for ${ref} of ${row.identifier}: ${address} ${v.version} exists (versions are immutable)` });
    return { status: 200, body: { status: 'exists', detail: `version ${v.version} exists; versions are immutable`, version: v.version } };
  }
  wakeJobs(deps.db);
  await recordVcsEvent(deps, { ...ev, level: 'info', message: `Received ${parsed.event} for ${row.identifier} (ref ${ref})${outcome === 'queued' ? `: publishing ${address} ${v.version}` : ': scanning the tags'}` });
  return { status: 202, body: { status: 'queued', detail: outcome === 'queued' ? `version ${v.version} is being published` : 'the repository is being scanned', version: v.version } };
}

