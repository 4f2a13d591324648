import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { ApiError } from '../http/errors.js';
import { parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { PROVIDER_DISPLAY_NAMES } from '../vcs/connection.js';
import { eventConnections, listEvents, VCS_EVENT_LEVELS, type EventConnection, type EventQuery } from '../vcs/events.js';
import { organizationForVcs } from '../vcs/access.js';
import type { VcsEventRow } from '../vcs/store.js';
import { page } from './layout.js';
import { OrgNav } from './org-nav.js';
import { httpUrl } from './run-pages.js';
import { requireSession, type WebEnv } from './security.js';

// The form's fields are the API's query parameters, so a page's address and the API call it makes read alike.
const FROM = 'filter[from]';
const TO = 'filter[to]';
const LEVELS = 'filter[levels]';
const CLIENTS = 'filter[oauth_client_external_ids]';

const DATETIME_LOCAL = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?$/;
const RFC3339_UTC = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?(Z|[+-]00:00)$/i;

/**
 * A time field as the API takes it. A datetime-local input sends no zone (and no seconds when they
 * are 0); the form asks for UTC, so that is what it means. Anything else goes to the API's check.
 */
function instant(raw: string | undefined): string | undefined {
  const v = (raw ?? '').trim();
  if (v === '') return undefined;
  if (!DATETIME_LOCAL.test(v)) return v;
  return v.length === 16 ? `${v}:00Z` : `${v}Z`;
}

/** What a datetime-local input can show of a time given in the address (it takes no zone). */
function localValue(raw: string | undefined): string | undefined {
  const v = (raw ?? '').trim();
  if (DATETIME_LOCAL.test(v)) return v;
  return RFC3339_UTC.exec(v)?.[1];
}

/** A repeatable, comma-separated parameter (checkboxes send one value each), or undefined for none. */
function listOf(q: URLSearchParams, name: string): string[] | undefined {
  const items = q.getAll(name).flatMap((v) => v.split(',')).map((s) => s.trim()).filter(Boolean);
  return items.length ? [...new Set(items)] : undefined;
}

const when = (t: string) => <time datetime={t}>{`${t.slice(0, 19).replace('T', ' ')} UTC`}</time>;

function Connection(props: { id: string | null; known: Map<string, EventConnection> }) {
  if (props.id === null) return <span class="muted">none</span>;
  const client = props.known.get(props.id);
  if (!client) return <><code>{props.id}</code> <span class="muted">(deleted)</span></>;
  // http-url is checked when the connection is made; it is linked only while it is http(s) all the same.
  const link = httpUrl(client.httpUrl);
  const label = client.name ?? client.id;
  return (
    <>
      {link ? <a href={link} rel="nofollow noopener noreferrer">{label}</a> : label}{' '}
      <span class="muted">{PROVIDER_DISPLAY_NAMES[client.serviceProvider]}</span>
    </>
  );
}

function EventTable(props: { rows: VcsEventRow[]; known: Map<string, EventConnection> }) {
  return (
    <table>
      <thead><tr><th scope="col">Time</th><th scope="col">Level</th><th scope="col">Message</th><th scope="col">Connection</th></tr></thead>
      <tbody>
        {props.rows.map((e) => (
          <tr>
            <td>{when(e.created_at)}</td>
            <td><span class={e.level === 'error' ? 'badge errored' : 'badge'}>{e.level}</span></td>
            <td>
              {e.message}
              {e.suggested_action ? <p class="muted">{`Suggested action: ${e.suggested_action}`}</p> : null}
            </td>
            <td><Connection id={e.oauth_client_id} known={props.known} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Filters(props: { action: string; q: URLSearchParams; connections: EventConnection[] }) {
  const { q } = props;
  const levels = new Set(listOf(q, LEVELS) ?? []);
  const clients = new Set(listOf(q, CLIENTS) ?? []);
  const size = q.get('page[size]');
  return (
    <form method="get" action={props.action} class="filters" aria-label="Filter events">
      <div>
        <label for="filter-from">From (UTC)</label>
        <input id="filter-from" name={FROM} type="datetime-local" step={1} value={localValue(q.get(FROM) ?? undefined)} aria-describedby="filter-times" />
      </div>
      <div>
        <label for="filter-to">To (UTC)</label>
        <input id="filter-to" name={TO} type="datetime-local" step={1} value={localValue(q.get(TO) ?? undefined)} aria-describedby="filter-times" />
      </div>
      <fieldset>
        <legend>Levels</legend>
        {VCS_EVENT_LEVELS.map((l) => (
          <label class="check"><input type="checkbox" name={LEVELS} value={l} checked={levels.has(l)} /> {l}</label>
        ))}
      </fieldset>
      {props.connections.length ? (
        <fieldset>
          <legend>Connections</legend>
          {props.connections.map((oc) => (
            <label class="check"><input type="checkbox" name={CLIENTS} value={oc.id} checked={clients.has(oc.id)} /> {oc.name ?? oc.id}</label>
          ))}
        </fieldset>
      ) : null}
      {size ? <input type="hidden" name="page[size]" value={size} /> : null}
      <div class="actions">
        <button type="submit">Filter</button> <a href={props.action}>Clear filters</a>
      </div>
      <p id="filter-times" class="muted">Times are UTC; without them the list covers the last 10 days, as long as events are kept. No box ticked means all.</p>
    </form>
  );
}

/** The address of another page of the same list: the filters kept, page[number] changed. */
function pageHref(action: string, q: URLSearchParams, n: number): string {
  const next = new URLSearchParams(q);
  next.set('page[number]', String(n));
  return `${action}?${next.toString()}`;
}

/** /app/organizations/:org/vcs-events: the VCS event log, for the callers the API shows it to. */
export function vcsPages(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();

  app.get('/app/organizations/:org/vcs-events', async (c) => {
    const target = await organizationForVcs(deps, requireSession(c).principal, c.req.param('org'));
    const { org, access } = target;
    const action = `/app/organizations/${encodeURIComponent(org.name)}/vcs-events`;
    const q = queryParams(c);
    const connections = await eventConnections(deps, target);
    let list: { rows: VcsEventRow[]; total: number; page: { number: number; size: number } } | undefined;
    let error: ApiError | undefined;
    try {
      const p = parsePage(c);
      const query: EventQuery = { from: instant(q.get(FROM) ?? undefined), to: instant(q.get(TO) ?? undefined), levels: listOf(q, LEVELS), oauthClientIds: listOf(q, CLIENTS) };
      const { rows, total } = await listEvents(deps, target, query, { limit: p.size, offset: p.offset });
      list = { rows, total, page: p };
    } catch (err) {
      // A filter the API refuses: the form stays, with the API's reason.
      if (!(err instanceof ApiError) || (err.status !== 400 && err.status !== 422)) throw err;
      error = err;
    }
    const known = new Map(connections.map((oc) => [oc.id, oc]));
    const pages = list ? Math.max(1, Math.ceil(list.total / list.page.size)) : 1;
    const filtered = [FROM, TO, LEVELS, CLIENTS].some((k) => (q.get(k) ?? '') !== '');
    return page(
      deps,
      c,
      {
        title: `${org.name} VCS events`,
        children: (
          <>
            <h1>{`${org.name}: VCS events`}</h1>
            <OrgNav org={org} access={access} current="vcs-events" />
            <p class="muted">What the VCS side did: connections made, tokens refused, webhooks, fetches, and tags published or skipped. Newest first; events are kept 10 days.</p>
            <Filters action={action} q={q} connections={connections} />
            {error ? <p class="notice error" role="alert">{error.detail}</p> : null}
            {list ? (
              <>
                <p class="muted" role="status">
                  {list.total === 0
                    ? filtered ? 'No VCS events match these filters.' : 'No VCS events in the last 10 days.'
                    : `${list.total} event${list.total === 1 ? '' : 's'}; page ${list.page.number} of ${pages}.`}
                </p>
                {list.rows.length ? <EventTable rows={list.rows} known={known} /> : null}
                {pages > 1 ? (
                  <nav aria-label="Pages">
                    <ul class="pager">
                      {list.page.number > 1 ? <li><a href={pageHref(action, q, Math.min(list.page.number - 1, pages))} rel="prev">Newer events</a></li> : null}
                      {list.page.number < pages ? <li><a href={pageHref(action, q, list.page.number + 1)} rel="next">Older events</a></li> : null}
                    </ul>
                  </nav>
                ) : null}
              </>
            ) : null}
          </>
        ),
      },
      error ? (error.status as 400 | 422) : 200,
    );
  });

  return app;
}
