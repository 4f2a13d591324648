import { rfc3339 } from '../clock.js';
import { afterCommit, type Queryable } from '../db/index.js';
import type { VcsServiceProvider } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { ApiError, quoteValue, truncate } from '../http/errors.js';
import { newId } from '../ids.js';
import type { OrganizationRow } from '../organizations/access.js';
import type { FixedRetention } from '../organizations/retention-sweep.js';
import { insertVcsEvent, listOAuthClients, listVcsEvents, purgeVcsEvents, type VcsEventFilter, type VcsEventRow } from './store.js';

/** Messages are stored and shown as given, cut to this many characters. */
export const MAX_EVENT_MESSAGE_CHARS = 2000;

export interface VcsEventInput {
  organizationId: string;
  level: 'info' | 'error';
  message: string;
  suggestedAction?: string | null;
  oauthClientId?: string | null;
  oauthTokenId?: string | null;
}

/**
 * Appends one entry to the organization's VCS event log (at the injected clock's now). Callers
 * must not put a token or secret in the message: it is shown to every VCS manager. Given a
 * transaction, the entry commits with the change it explains, and is logged once that commit is done.
 */
export async function recordVcsEvent(deps: Deps, e: VcsEventInput, db: Queryable = deps.db): Promise<void> {
  const row = {
    id: newId('ve'),
    organization_id: e.organizationId,
    level: e.level,
    message: truncate(e.message, MAX_EVENT_MESSAGE_CHARS),
    suggested_action: e.suggestedAction ? truncate(e.suggestedAction, MAX_EVENT_MESSAGE_CHARS) : null,
    oauth_client_id: e.oauthClientId ?? null,
    oauth_token_id: e.oauthTokenId ?? null,
    created_at: rfc3339(deps.clock.now()),
  };
  await insertVcsEvent(db, row);
  const fields = { organization: e.organizationId, event: row.id, oauthClient: row.oauth_client_id, oauthToken: row.oauth_token_id };
  afterCommit(db, () => {
    if (e.level === 'error') deps.logger.warn(fields, `VCS event: ${row.message}`);
    else deps.logger.info(fields, `VCS event: ${row.message}`);
  });
}

// ---- the event log as the API lists it ----

/** Events are kept, and listed, for 10 days. */
export const VCS_EVENT_RETENTION_MS = 10 * 24 * 3600 * 1000;
export const VCS_EVENT_LEVELS = ['info', 'error'] as const;

export interface EventQuery {
  from?: string;
  to?: string;
  levels?: string[];
  oauthClientIds?: string[];
}

const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]00:00)$/i;
const OAUTH_CLIENT_ID = /^oc-[A-Za-z0-9]{1,64}$/;

/** An RFC 3339 UTC timestamp as milliseconds; 422 naming the parameter otherwise (impossible dates too). */
function parseInstant(raw: string, name: string): number {
  const m = RFC3339_UTC.exec(raw);
  const ms = m ? Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${(m[7] ?? '').slice(0, 4)}Z`) : NaN;
  // Date.parse rolls 2026-02-30 over to March: a round trip catches dates that do not exist.
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}`) {
    throw new ApiError(422, 'invalid filter', `${name} must be an RFC 3339 timestamp in UTC such as 2026-01-02T03:04:05Z, got ${quoteValue(raw)}`, { parameter: name });
  }
  return ms;
}

/** The store's filter for a query, with the defaults (the last 10 days, both levels) and the 10-day floor. */
export function eventFilter(now: Date, organizationId: string, q: EventQuery): VcsEventFilter {
  const nowMs = now.getTime();
  const floor = nowMs - VCS_EVENT_RETENTION_MS;
  const from = q.from === undefined ? floor : parseInstant(q.from, 'filter[from]');
  const to = q.to === undefined ? nowMs : parseInstant(q.to, 'filter[to]');
  if (from > to) throw new ApiError(422, 'invalid filter', `filter[from] (${q.from ?? 'default'}) must not be later than filter[to] (${q.to ?? 'now'})`, { parameter: 'filter[from]' });
  const levels = q.levels;
  const badLevel = levels?.find((l) => !(VCS_EVENT_LEVELS as readonly string[]).includes(l));
  if (badLevel !== undefined) {
    throw new ApiError(422, 'invalid filter', `filter[levels] accepts only info and error (comma-separated), got ${quoteValue(badLevel)}`, { parameter: 'filter[levels]' });
  }
  const ids = q.oauthClientIds;
  const badId = ids?.find((id) => !OAUTH_CLIENT_ID.test(id));
  if (badId !== undefined) {
    throw new ApiError(422, 'invalid filter', `filter[oauth_client_external_ids] must list OAuth client ids (oc-…), comma-separated, got ${quoteValue(badId)}`, {
      parameter: 'filter[oauth_client_external_ids]',
    });
  }
  if (ids && ids.length > 100) {
    throw new ApiError(422, 'invalid filter', `filter[oauth_client_external_ids] may list at most 100 ids, got ${ids.length}`, { parameter: 'filter[oauth_client_external_ids]' });
  }
  return {
    organizationId,
    // What is older than 10 days is never listed, even before the purge has removed it.
    from: rfc3339(Math.max(from, floor)),
    to: rfc3339(to),
    levels: levels as ('info' | 'error')[] | undefined,
    oauthClientIds: ids,
  };
}

/**
 * One page of an organization's event log, newest first, with the total the filter matches. Takes
 * what organizationForVcs returned: the caller has been let in already (the API and the web UI
 * both list through here, so they show the same events to the same people).
 */
export async function listEvents(deps: Deps, target: { org: OrganizationRow }, q: EventQuery, page: { limit: number; offset: number }): Promise<{ rows: VcsEventRow[]; total: number }> {
  return listVcsEvents(deps.db, eventFilter(deps.clock.now(), target.org.id, q), page);
}

/** What the event log shows of a connection (an OAuth client): never its secrets. */
export interface EventConnection {
  id: string;
  name: string | null;
  serviceProvider: VcsServiceProvider;
  httpUrl: string;
}

/** The organization's connections, oldest first, to name them beside events and filter by them. */
export async function eventConnections(deps: Deps, target: { org: OrganizationRow }): Promise<EventConnection[]> {
  const { rows } = await listOAuthClients(deps.db, target.org.id);
  return rows.map((r) => ({ id: r.id, name: r.name, serviceProvider: r.service_provider, httpUrl: r.http_url }));
}

/**
 * Removes events past the 10 days they are kept, in batches, until none are left. Runs at the
 * start of every data retention sweep (a recurring, leased job), whatever the policies say.
 */
export const vcsEventsRetention: FixedRetention = {
  name: 'vcs-events',
  async purge(deps) {
    const cutoff = rfc3339(deps.clock.now().getTime() - VCS_EVENT_RETENTION_MS);
    let removed = 0;
    for (;;) {
      const n = await purgeVcsEvents(deps.db, cutoff, deps.config.retentionBatchSize);
      removed += n;
      if (n < deps.config.retentionBatchSize) break;
    }
    if (removed > 0) deps.logger.info({ removed, createdBefore: cutoff }, 'VCS events older than 10 days removed');
  },
};
