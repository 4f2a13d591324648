import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { unauthorized } from '../http/errors.js';
import { visibleOrganization, visibleOrganizations } from '../organizations/service.js';
import { findModules, type ModuleSummary } from '../registry/catalog.js';
import { currentOutputs } from '../state/read.js';
import { workspaceByName, workspacesOf } from '../workspaces/service.js';
import { page } from './layout.js';
import { modulePage } from './module-page.js';
import { OrgNav } from './org-nav.js';
import type { WebEnv } from './security.js';

const PAGE_SIZE = 30;
const MAX_QUERY_CHARS = 200;

function signedIn(c: Context<WebEnv>) {
  const p = c.get('principal');
  if (!p) throw unauthorized('sign in at /app/signin to see this page');
  return p;
}

/** The page number from ?page= (1-based); anything that is not a small whole number is page 1. */
function pageNumber(c: Context): number {
  const raw = c.req.query('page') ?? '1';
  return /^[1-9][0-9]{0,5}$/.test(raw) ? Number(raw) : 1;
}

function ModuleList(props: { modules: ModuleSummary[]; empty: string }) {
  if (props.modules.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <ul class="cards">
      {props.modules.map(({ module: m, latest, downloads }) => (
        <li>
          <a href={`/app/modules/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.name)}/${encodeURIComponent(m.provider)}`}>
            <strong>{`${m.namespace}/${m.name}`}</strong> <span class="badge">{m.provider}</span>
          </a>
          <p>{latest?.description || m.description || 'No description.'}</p>
          <p>{`v${latest?.version ?? m.latest_version} · ${downloads} downloads`}</p>
        </li>
      ))}
    </ul>
  );
}

/** Browsing: organizations, modules with the registry's ranked search, module pages, workspace outputs. */
export function browsePages(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();

  app.get('/app/organizations', async (c) => {
    const { rows } = await visibleOrganizations(deps, signedIn(c), {});
    return page(deps, c, {
      title: 'Organizations',
      children: (
        <>
          <h1>Organizations</h1>
          {rows.length === 0 ? (
            <p class="muted">You are not a member of any organization yet.</p>
          ) : (
            <ul class="cards">
              {rows.map(({ org, access }) => (
                <li>
                  <a href={`/app/organizations/${encodeURIComponent(org.name)}`}><strong>{org.name}</strong></a>
                  <p>{access.owner ? 'Owner' : 'Member'}</p>
                </li>
              ))}
            </ul>
          )}
        </>
      ),
    });
  });

  app.get('/app/organizations/:org', async (c) => {
    const p = signedIn(c);
    const { org, access } = await visibleOrganization(deps, p, c.req.param('org'));
    const { modules, hasMore } = await findModules(deps, p, { namespace: org.name }, { offset: 0, limit: 100 });
    return page(deps, c, {
      title: org.name,
      children: (
        <>
          <h1>{org.name}</h1>
          <OrgNav org={org} access={access} current="modules" />
          <h2>Modules</h2>
          <ModuleList modules={modules} empty="This organization has published no modules yet." />
          {hasMore ? <p><a href={`/app/modules?namespace=${encodeURIComponent(org.name)}`}>All of {org.name}'s modules</a></p> : null}
        </>
      ),
    });
  });

  /** The search results: a whole page, or (for search as you type) just the list. */
  async function results(c: Context<WebEnv>) {
    const p = c.get('principal');
    const q = (c.req.query('q') ?? '').trim().slice(0, MAX_QUERY_CHARS);
    const namespace = (c.req.query('namespace') ?? '').trim().slice(0, MAX_QUERY_CHARS) || undefined;
    const n = pageNumber(c);
    const { modules, hasMore } = await findModules(deps, p, { q: q || undefined, namespace }, { offset: (n - 1) * PAGE_SIZE, limit: PAGE_SIZE });
    const more = new URLSearchParams({ ...(q ? { q } : {}), ...(namespace ? { namespace } : {}), page: String(n + 1) });
    return {
      q,
      namespace,
      list: (
        <>
          <p class="muted" role="status">{q ? `${modules.length}${hasMore ? '+' : ''} modules match "${q}".` : `${modules.length}${hasMore ? '+' : ''} modules.`}</p>
          <ModuleList modules={modules} empty={q ? 'No module matches; try fewer or shorter words.' : 'No modules yet.'} />
          {hasMore ? <p><a href={`/app/modules?${more}`}>Next page</a></p> : null}
        </>
      ),
    };
  }

  app.get('/app/modules', async (c) => {
    const r = await results(c);
    return page(deps, c, {
      title: r.q ? `Modules matching ${r.q}` : 'Modules',
      children: (
        <>
          <h1>Modules</h1>
          <form method="get" action="/app/modules" role="search" data-live-search="/app/modules/results">
            <label for="q">Search modules</label>
            <input id="q" name="q" type="search" value={r.q} placeholder="name, provider, description…" />
            {r.namespace ? <input type="hidden" name="namespace" value={r.namespace} /> : null}{' '}
            <button type="submit">Search</button>
          </form>
          <div id="results">{r.list}</div>
        </>
      ),
    });
  });

  app.get('/app/modules/results', async (c) => c.html((await results(c)).list));

  app.get('/app/modules/:namespace/:name/:provider', (c) => modulePage(deps, c));

  app.get('/app/organizations/:org/workspaces', async (c) => {
    const n = pageNumber(c);
    const { org, rows, total, current } = await workspacesOf(deps, signedIn(c), c.req.param('org'), new URLSearchParams(), { limit: PAGE_SIZE, offset: (n - 1) * PAGE_SIZE });
    return page(deps, c, {
      title: `${org.name} workspaces`,
      children: (
        <>
          <h1>{`${org.name}: workspaces`}</h1>
          {rows.length === 0 ? (
            <p class="muted">No workspaces.</p>
          ) : (
            <table>
              <thead><tr><th scope="col">Workspace</th><th scope="col">Current state</th></tr></thead>
              <tbody>
                {rows.map((ws) => (
                  <tr>
                    <td><a href={`/app/organizations/${encodeURIComponent(org.name)}/workspaces/${encodeURIComponent(ws.name)}`}>{ws.name}</a></td>
                    <td>{current.get(ws.id) ? `serial ${current.get(ws.id)!.serial}, ${current.get(ws.id)!.created_at.slice(0, 10)}` : 'none yet'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {total > n * PAGE_SIZE ? <p><a href={`?page=${n + 1}`}>Next page</a></p> : null}
        </>
      ),
    });
  });

  app.get('/app/organizations/:org/workspaces/:name', async (c) => {
    const p = signedIn(c);
    const { ws, org } = await workspaceByName(deps, p, c.req.param('org'), c.req.param('name'));
    const { sv, outputs } = await currentOutputs(deps, p, ws.id);
    return page(deps, c, {
      title: `${org.name}/${ws.name}`,
      children: (
        <>
          <h1>{`${org.name}/${ws.name}`}</h1>
          <p><a href={`/app/organizations/${encodeURIComponent(org.name)}/workspaces/${encodeURIComponent(ws.name)}/runs`}>Runs and run task results</a></p>
          <h2>Current outputs</h2>
          {!sv ? (
            <p class="muted">This workspace has no state yet.</p>
          ) : outputs.length === 0 ? (
            <p class="muted">{`State serial ${sv.serial} has no outputs.`}</p>
          ) : (
            <table>
              <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Value</th></tr></thead>
              <tbody>
                {outputs.map((o) => (
                  <tr>
                    <td><code>{o.name}</code></td>
                    <td><code>{o.type}</code></td>
                    <td>{o.sensitive === 1 ? <span class="badge">sensitive</span> : <code>{o.value}</code>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      ),
    });
  });

  return app;
}
