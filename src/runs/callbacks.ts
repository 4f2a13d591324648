import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { Deps } from '../deps.js';
import { authorize } from '../http/authorized.js';
import { conflict, quoteValue, unauthorized, unprocessable } from '../http/errors.js';
import { newId } from '../ids.js';
import { taskUrlProblem } from '../runtasks/outbound.js';
import { resultForToken } from './access.js';
import { settleStage, withTimestamp } from './progress.js';
import { getResult, replaceOutcomes, updateResultIf, type OutcomeRow, type TaskResultRow } from './task-store.js';

export const CALLBACK_STATUSES = ['running', 'passed', 'failed'] as const;
export const TAG_LEVELS = ['none', 'info', 'warning', 'error'] as const;
/** Limits on what one callback may record (the docs: outcome bodies under 1 MB recommended). */
export const LIMITS = { outcomes: 100, outcomeBodyBytes: 1024 * 1024, description: 1000, outcomeId: 256, message: 4000, tagKeys: 20, tagsPerKey: 50, tagLabel: 256 };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The result a callback's bearer token (or HCP's url_code) opens; 401 for a missing or wrong one. */
export async function resultForCallback(deps: Deps, resultId: string, token: string | null): Promise<TaskResultRow> {
  if (!token) throw unauthorized('send the access_token from the run task request as "Authorization: Bearer <access_token>"');
  const r = await resultForToken(deps, token, resultId);
  if (!r) throw unauthorized('the access token is not valid for this task result (wrong token, or the result ended more than a minute ago)');
  authorize(true, () => unauthorized());
  return r;
}

export interface ParsedCallback {
  status: (typeof CALLBACK_STATUSES)[number];
  message: string | undefined;
  url: string | undefined;
  /** undefined: the callback carried no outcomes (those recorded before stay). */
  outcomes: Omit<OutcomeRow, 'id' | 'task_result_id' | 'position' | 'created_at'>[] | undefined;
}

type Tags = Record<string, { label: string; level: string }[]>;

/** Tags as the docs' map {Severity: [{label, level}]}, or the read side's array [{label, value: [...]}]. */
function parseTags(raw: unknown, at: string): Tags {
  const fail = (what: string, ptr = at): never => {
    throw unprocessable(`outcome tags ${what}`, ptr);
  };
  let entries: [string, unknown][];
  if (raw === undefined || raw === null) return {};
  if (Array.isArray(raw)) entries = raw.map((e, i) => (isObject(e) && typeof e.label === 'string' ? [e.label, e.value] : fail('in array form must be [{"label": <name>, "value": [{label, level}]}]', `${at}/${i}`)));
  else if (isObject(raw)) entries = Object.entries(raw);
  else return fail('must be an object of tag arrays, named by header');
  if (entries.length > LIMITS.tagKeys) fail(`may have at most ${LIMITS.tagKeys} headers`);
  const out: Tags = {};
  for (const [key, list] of entries) {
    if (key.length === 0 || key.length > LIMITS.tagLabel) fail(`header names must be 1-${LIMITS.tagLabel} characters`, `${at}/${key}`);
    if (!Array.isArray(list) || list.length > LIMITS.tagsPerKey) fail(`${quoteValue(key)} must be an array of at most ${LIMITS.tagsPerKey} {label, level} objects`, `${at}/${key}`);
    out[key] = (list as unknown[]).map((t, i) => {
      const ptr = `${at}/${key}/${i}`;
      if (!isObject(t) || typeof t.label !== 'string' || t.label.length > LIMITS.tagLabel) return fail(`${quoteValue(key)}[${i}].label must be a string of at most ${LIMITS.tagLabel} characters`, ptr);
      const level = t.level === undefined || t.level === null ? 'none' : t.level;
      if (typeof level !== 'string' || !(TAG_LEVELS as readonly string[]).includes(level)) return fail(`${quoteValue(key)}[${i}].level must be one of ${TAG_LEVELS.join(', ')}, got ${quoteValue(t.level)}`, ptr);
      return { label: t.label, level };
    });
  }
  return out;
}

function optionalString(v: unknown, name: string, max: number, ptr: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw unprocessable(`${name} must be a string`, ptr);
  if (v.length > max) throw unprocessable(`${name} must be at most ${max} characters`, ptr);
  return v;
}

function optionalUrl(v: unknown, name: string, ptr: string): string | undefined {
  const s = optionalString(v, name, 2048, ptr);
  if (s !== undefined && taskUrlProblem(s) !== null) throw unprocessable(`${name} must be an absolute http or https URL without credentials`, ptr);
  return s;
}

/**
 * The callback body as integrators send it: data.type task-results (or task_results); outcomes
 * under relationships.outcomes, relationships.task-result-outcomes or attributes.outcomes, each
 * a {type, attributes} node or the bare attributes.
 */
export function parseCallback(body: unknown): ParsedCallback {
  if (!isObject(body) || !isObject(body.data)) throw unprocessable('the body must be {"data":{"type":"task-results","attributes":{"status":…}}}', '/data');
  const data = body.data;
  if (data.type !== 'task-results' && data.type !== 'task_results') throw unprocessable(`data.type must be "task-results", got ${quoteValue(data.type ?? null)}`, '/data/type');
  const attrs = data.attributes;
  if (!isObject(attrs)) throw unprocessable('data.attributes must be an object with status', '/data/attributes');
  const status = attrs.status;
  if (typeof status !== 'string' || !(CALLBACK_STATUSES as readonly string[]).includes(status)) {
    throw unprocessable(`status must be one of running, passed, failed; got ${quoteValue(status ?? null)}`, '/data/attributes/status');
  }
  const message = optionalString(attrs.message, 'message', LIMITS.message, '/data/attributes/message');
  const url = optionalUrl(attrs.url, 'url', '/data/attributes/url');
  const rel = isObject(data.relationships) ? data.relationships : {};
  const fromRel = (k: string) => (isObject(rel[k]) ? (rel[k] as Record<string, unknown>).data : undefined);
  const [raw, base] =
    fromRel('outcomes') !== undefined
      ? [fromRel('outcomes'), '/data/relationships/outcomes/data']
      : fromRel('task-result-outcomes') !== undefined
        ? [fromRel('task-result-outcomes'), '/data/relationships/task-result-outcomes/data']
        : [attrs.outcomes, '/data/attributes/outcomes'];
  if (raw === undefined || raw === null) return { status: status as ParsedCallback['status'], message, url, outcomes: undefined };
  if (!Array.isArray(raw)) throw unprocessable('outcomes must be an array', base);
  if (raw.length > LIMITS.outcomes) throw unprocessable(`a callback may carry at most ${LIMITS.outcomes} outcomes`, base);
  const outcomes = raw.map((node, i) => {
    const ptr = `${base}/${i}`;
    const o = isObject(node) && isObject(node.attributes) ? node.attributes : node;
    if (!isObject(o)) throw unprocessable(`outcome ${i} must be an object`, ptr);
    const outcomeId = o['outcome-id'];
    if (typeof outcomeId !== 'string' || outcomeId === '' || outcomeId.length > LIMITS.outcomeId) throw unprocessable(`outcome ${i}: outcome-id is required, a string of 1-${LIMITS.outcomeId} characters`, `${ptr}/outcome-id`);
    const description = o.description;
    if (typeof description !== 'string' || description === '' || description.length > LIMITS.description) throw unprocessable(`outcome ${i}: description is required, a string of 1-${LIMITS.description} characters`, `${ptr}/description`);
    const bodyText = optionalString(o.body, `outcome ${i}: body`, LIMITS.outcomeBodyBytes, `${ptr}/body`);
    if (bodyText !== undefined && Buffer.byteLength(bodyText, 'utf8') > LIMITS.outcomeBodyBytes) throw unprocessable(`outcome ${i}: body must be at most ${LIMITS.outcomeBodyBytes} bytes`, `${ptr}/body`);
    return {
      outcome_id: outcomeId,
      description,
      body: bodyText ?? null,
      url: optionalUrl(o.url, `outcome ${i}: url`, `${ptr}/url`) ?? null,
      tags: JSON.stringify(parseTags(o.tags, `${ptr}/tags`)),
    };
  });
  return { status: status as ParsedCallback['status'], message, url, outcomes };
}

/**
 * Records a callback by the seed's state table: running (repeatable) or a final passed/failed;
 * message, url and outcomes with each (outcomes replace those recorded before). A result that is
 * final already is a 409. A final status settles the stage and may move the run.
 */
export async function recordCallback(deps: Deps, r: TaskResultRow, cb: ParsedCallback): Promise<TaskResultRow> {
  const open = ['pending', 'running'];
  if (!open.includes(r.status)) throw conflict(`task result ${r.id} is ${r.status} already: a final result cannot be updated`);
  const now = rfc3339(deps.clock.now());
  const final = cb.status !== 'running';
  await inTransaction(deps.db, async (tx) => {
    const ok = await updateResultIf(tx, r.id, open, {
      status: cb.status,
      ...(cb.message !== undefined ? { message: cb.message } : {}),
      ...(cb.url !== undefined ? { url: cb.url } : {}),
      status_timestamps: r.status === cb.status ? r.status_timestamps : withTimestamp(r.status_timestamps, `${cb.status}-at`, now),
      updated_at: now,
      ...(final ? { final_at: now } : {}),
    });
    if (!ok) throw conflict(`task result ${r.id} became final meanwhile: a final result cannot be updated`);
    if (cb.outcomes) {
      await replaceOutcomes(
        tx,
        r.id,
        cb.outcomes.map((o, i) => ({ ...o, id: newId('tro'), task_result_id: r.id, position: i, created_at: now })),
      );
    }
    if (final) await settleStage(tx, deps, r.task_stage_id);
  });
  deps.logger.info({ taskResult: r.id, status: cb.status }, 'run task callback');
  return (await getResult(deps.db, r.id))!;
}
