import { Hono, type Context } from 'hono';
import { raw } from 'hono/html';
import type { Deps } from '../deps.js';
import { unauthorized } from '../http/errors.js';
import { runWithTaskResults, workspaceRuns, type ResultView } from '../runs/reading.js';
import type { RunRow } from '../runs/store.js';
import type { OutcomeRow, TaskStageRow } from '../runs/task-store.js';
import { page } from './layout.js';
import { renderReadme } from './markdown.js';
import type { WebEnv } from './security.js';

const PAGE_SIZE = 30;
/**
 * Outcome bodies (Markdown, up to 1 MiB each) rendered on one run page, in characters: past this
 * the page says where to read the rest instead of growing without bound.
 */
const BODY_BUDGET_CHARS = 2 * 1024 * 1024;

function signedIn(c: Context<WebEnv>) {
  const p = c.get('principal');
  if (!p) throw unauthorized('sign in at /app/signin to see this page');
  return p;
}

function pageNumber(c: Context): number {
  const raw = c.req.query('page') ?? '1';
  return /^[1-9][0-9]{0,5}$/.test(raw) ? Number(raw) : 1;
}

const workspacePath = (org: string, ws: string) => `/app/organizations/${encodeURIComponent(org)}/workspaces/${encodeURIComponent(ws)}`;
const when = (t: string) => <time datetime={t}>{`${t.slice(0, 16).replace('T', ' ')} UTC`}</time>;

/** An integrator's URL as a link target only when it is http(s); anything else is not linked. */
export function httpUrl(u: string | null): string | null {
  if (!u) return null;
  try {
    const parsed = new URL(u);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}

const GOOD = new Set(['passed', 'applied', 'planned_and_finished']);
const BAD = new Set(['failed', 'errored', 'unreachable', 'canceled', 'discarded']);
function Status(props: { status: string }) {
  const tone = GOOD.has(props.status) ? 'ok' : BAD.has(props.status) ? 'errored' : 'pending';
  return <span class={`badge ${tone}`}>{props.status.replace(/_/g, ' ')}</span>;
}

const STAGE_NAMES: Record<string, string> = { pre_plan: 'Pre-plan', post_plan: 'Post-plan', pre_apply: 'Pre-apply', post_apply: 'Post-apply' };

function Outcome(props: { o: OutcomeRow; body: 'render' | 'over-budget' }) {
  const { o } = props;
  const link = httpUrl(o.url);
  let tags: [string, { label: string; level: string }[]][] = [];
  try {
    tags = Object.entries(JSON.parse(o.tags) as Record<string, { label: string; level: string }[]>);
  } catch {
    // Tags are validated when recorded; a row that does not parse shows none.
  }
  return (
    <li class="outcome">
      <p>
        <code>{o.outcome_id}</code> {o.description}
        {link ? <> · <a href={link} rel="nofollow noopener noreferrer">details at the integrator</a></> : null}
      </p>
      {tags.length ? (
        <p class="muted">
          {tags.map(([header, values]) => (
            <>
              {`${header}: `}
              {values.map((v) => <span class={`badge ${v.level === 'error' ? 'errored' : v.level === 'warning' ? 'pending' : ''}`}>{v.label}</span>)}{' '}
            </>
          ))}
        </p>
      ) : null}
      {o.body === null ? null : props.body === 'render' ? (
        // renderReadme escapes all HTML in the body and polices every URL (see markdown.ts).
        <div class="readme">{raw(renderReadme(o.body, new Map()))}</div>
      ) : (
        <p class="muted">{`This body is not shown here (the page has enough already): GET /api/v2/task-result-outcomes/${o.id}/body`}</p>
      )}
    </li>
  );
}

function Stage(props: { stage: TaskStageRow; results: ResultView[]; budget: { left: number } }) {
  const { stage, results } = props;
  const title = STAGE_NAMES[stage.stage] ?? stage.stage;
  return (
    <section aria-labelledby={`stage-${stage.id}`}>
      <h3 id={`stage-${stage.id}`}>
        {`${title} `}
        <Status status={stage.status} />
      </h3>
      <table>
        <thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Message</th><th scope="col">Enforcement</th><th scope="col">Details</th></tr></thead>
        <tbody>
          {results.map(({ result: r }) => {
            const link = httpUrl(r.url);
            return (
              <tr>
                <td>{r.task_name}</td>
                <td><Status status={r.status} /></td>
                <td>{r.message || <span class="muted">none</span>}</td>
                <td>{r.enforcement_level}</td>
                <td>{link ? <a href={link} rel="nofollow noopener noreferrer">{`${r.task_name} results`}</a> : <span class="muted">none</span>}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {results
        .filter((v) => v.outcomes.length > 0)
        .map(({ result: r, outcomes }) => (
          <>
            <h4>{`${r.task_name}: ${outcomes.length} outcome${outcomes.length === 1 ? '' : 's'}`}</h4>
            <ul class="outcomes">
              {outcomes.map((o) => {
                const size = o.body?.length ?? 0;
                const fits = size <= props.budget.left;
                if (fits) props.budget.left -= size;
                return <Outcome o={o} body={fits ? 'render' : 'over-budget'} />;
              })}
            </ul>
          </>
        ))}
    </section>
  );
}

function RunFacts(props: { run: RunRow }) {
  const { run } = props;
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd><Status status={run.status} /></dd>
      <dt>Message</dt>
      <dd>{run.message || <span class="muted">none</span>}</dd>
      <dt>Created</dt>
      <dd>{when(run.created_at)}</dd>
      {run.plan_only === 1 ? (<><dt>Kind</dt><dd>Speculative (plan only)</dd></>) : null}
      {run.error_message ? (<><dt>Error</dt><dd>{run.error_message}</dd></>) : null}
    </dl>
  );
}

/** A workspace's runs, and a run with its task stages, results and outcomes. */
export function runPages(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();

  app.get('/app/organizations/:org/workspaces/:name/runs', async (c) => {
    const n = pageNumber(c);
    const { org, ws, runs, total } = await workspaceRuns(deps, signedIn(c), c.req.param('org'), c.req.param('name'), { limit: PAGE_SIZE, offset: (n - 1) * PAGE_SIZE });
    const base = workspacePath(org.name, ws.name);
    return page(deps, c, {
      title: `${org.name}/${ws.name} runs`,
      children: (
        <>
          <h1>{`${org.name}/${ws.name}: runs`}</h1>
          <p><a href={base}>Current outputs</a></p>
          {runs.length === 0 ? (
            <p class="muted">This workspace has no runs yet.</p>
          ) : (
            <table>
              <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Message</th><th scope="col">Created</th></tr></thead>
              <tbody>
                {runs.map((r) => (
                  <tr>
                    <td><a href={`${base}/runs/${encodeURIComponent(r.id)}`}>{r.id}</a></td>
                    <td><Status status={r.status} /></td>
                    <td>{r.message || <span class="muted">none</span>}</td>
                    <td>{when(r.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {total > n * PAGE_SIZE ? <p><a href={`?page=${n + 1}`}>Older runs</a></p> : null}
        </>
      ),
    });
  });

  app.get('/app/organizations/:org/workspaces/:name/runs/:run', async (c) => {
    const v = await runWithTaskResults(deps, signedIn(c), c.req.param('org'), c.req.param('name'), c.req.param('run'));
    const base = workspacePath(v.org.name, v.ws.name);
    const budget = { left: BODY_BUDGET_CHARS };
    return page(deps, c, {
      title: `${v.run.id} · ${v.org.name}/${v.ws.name}`,
      children: (
        <>
          <p><a href={`${base}/runs`}>{`${v.org.name}/${v.ws.name}: runs`}</a></p>
          <h1>{`Run ${v.run.id}`}</h1>
          <RunFacts run={v.run} />
          <h2>Run tasks</h2>
          {v.stages.length === 0 ? (
            <p class="muted">No run tasks were attached to this workspace when the run started.</p>
          ) : (
            v.stages.map((s) => <Stage stage={s.stage} results={s.results} budget={budget} />)
          )}
        </>
      ),
    });
  });

  // The app URLs run task requests carry (run_app_url, workspace_app_url: HCP's shape) lead here.
  app.get('/app/:org/workspaces/:name', (c) => c.redirect(workspacePath(c.req.param('org'), c.req.param('name')), 302));
  app.get('/app/:org/workspaces/:name/runs/:run', (c) =>
    c.redirect(`${workspacePath(c.req.param('org'), c.req.param('name'))}/runs/${encodeURIComponent(c.req.param('run'))}`, 302),
  );

  return app;
}
