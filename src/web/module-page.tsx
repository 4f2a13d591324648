import type { Context } from 'hono';
import semver from 'semver';
import type { Deps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { moduleDownloadSummary, moduleDownloadsByDay, publishedVersion, readableModule, versionsForPublishers } from '../registry/catalog.js';
import { normalizeRequestedVersion } from '../registry/names.js';
import { parseContents, type ModuleWithOrg } from '../registry/store.js';
import { DownloadChart } from './chart.js';
import { page } from './layout.js';
import { Directory, Inputs, Outputs, Providers, Readme, Resources, sectionAnchor } from './module-parts.js';
import type { WebEnv } from './security.js';

const CHART_DAYS = 30;

/** The host users put in module sources: TERRACE_PUBLIC_URL's, else the one the browser used. */
export function registryHost(deps: Deps, c: Context): string {
  const configured = new URL(deps.config.publicUrl).host;
  if (deps.config.publicUrlConfigured) return configured;
  const host = c.req.header('host') ?? '';
  return /^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(:\d{1,5})?$/.test(host) ? host : configured;
}

/** "~> 1.2.3" keeps to compatible releases from the one shown; a pre-release is pinned exactly. */
function constraintFor(version: string): string {
  return semver.prerelease(version) ? version : `~> ${version}`;
}

export function usageSnippet(host: string, m: ModuleWithOrg, version: string, required: string[]): string {
  const lines = [
    `module "${m.name.replace(/-/g, '_')}" {`,
    `  source  = "${host}/${m.namespace}/${m.name}/${m.provider}"`,
    `  version = "${constraintFor(version)}"`,
    ...(required.length ? ['', ...required.map((r) => `  ${r} = null # required`)] : []),
    '}',
  ];
  return lines.join('\n');
}

const date = (t: string | null) => (t ? t.slice(0, 10) : '');

export async function modulePage(deps: Deps, c: Context<WebEnv>): Promise<Response> {
  const { namespace, name, provider } = c.req.param() as Record<string, string>;
  const p = c.get('principal');
  const m = await readableModule(deps, p, namespace!, name!, provider!);
  const requested = c.req.query('version');
  const version = requested === undefined || requested === '' ? m.latest_version : normalizeRequestedVersion(requested);
  if (!version) throw notFound(`${m.namespace}/${m.name}/${m.provider} has no published version ${requested ?? ''}`.trim());
  const [detail, summary, days, all] = await Promise.all([
    publishedVersion(deps, m, version),
    moduleDownloadSummary(deps, m),
    moduleDownloadsByDay(deps, m, CHART_DAYS),
    versionsForPublishers(deps, p, m),
  ]);
  const contents = parseContents(detail.version);
  const sections = new Map([...contents.submodules, ...contents.examples].map((d) => [d.path, `#${sectionAnchor(d.path)}`]));
  const snippet = usageSnippet(registryHost(deps, c), m, version, contents.root.inputs.filter((i) => i.required).map((i) => i.name));
  const base = `/app/modules/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.name)}/${encodeURIComponent(m.provider)}`;
  const tabs = [
    ['readme', 'Readme'],
    ['inputs', `Inputs (${contents.root.inputs.length})`],
    ['outputs', `Outputs (${contents.root.outputs.length})`],
    ['resources', `Resources (${contents.root.resources.length})`],
    ['providers', 'Providers'],
    ['submodules', `Submodules (${contents.submodules.length})`],
    ['examples', `Examples (${contents.examples.length})`],
    ['versions', `Versions (${detail.versions.length})`],
    ['downloads', 'Downloads'],
  ];
  return page(deps, c, {
    title: `${m.namespace}/${m.name}/${m.provider} ${version}`,
    children: (
      <>
        <p><a href={`/app/organizations/${encodeURIComponent(m.namespace)}`}>{m.namespace}</a> / modules</p>
        <div class="module-head">
          <div>
            <h1>{`${m.namespace}/${m.name}/${m.provider}`}</h1>
            <p>{detail.version.description || m.description}</p>
            <p class="muted">Version {version}, published {date(detail.version.published_at)}; {detail.downloads} downloads.</p>
          </div>
          <form method="get" action={base}>
            <label for="version">Version</label>
            <select id="version" name="version" data-autosubmit="">
              {detail.versions.map((v) => (
                <option value={v} selected={v === version}>{v === m.latest_version ? `${v} (latest)` : v}</option>
              ))}
            </select>{' '}
            <button type="submit" class="secondary">Show</button>
          </form>
        </div>
        <h2 id="usage">Usage</h2>
        <pre id="snippet"><code>{snippet}</code></pre>
        <button type="button" class="secondary" data-copy="snippet" hidden>Copy</button>
        <nav class="tabs" aria-label="Module sections">
          <ul>
            {tabs.map(([id, label]) => (
              <li><a href={`#${id}`}>{label}</a></li>
            ))}
          </ul>
        </nav>
        <section id="readme" aria-labelledby="readme-h"><h2 id="readme-h">Readme</h2><Readme source={contents.root.readme} sections={sections} /></section>
        <section id="inputs" aria-labelledby="inputs-h"><h2 id="inputs-h">Inputs</h2><Inputs info={contents.root} /></section>
        <section id="outputs" aria-labelledby="outputs-h"><h2 id="outputs-h">Outputs</h2><Outputs info={contents.root} /></section>
        <section id="resources" aria-labelledby="resources-h"><h2 id="resources-h">Resources</h2><Resources info={contents.root} /></section>
        <section id="providers" aria-labelledby="providers-h"><h2 id="providers-h">Provider requirements</h2><Providers info={contents.root} /></section>
        <section id="submodules" aria-labelledby="submodules-h">
          <h2 id="submodules-h">Submodules</h2>
          {contents.submodules.length ? contents.submodules.map((s) => <Directory info={s} sections={sections} />) : <p class="muted">No submodules.</p>}
        </section>
        <section id="examples" aria-labelledby="examples-h">
          <h2 id="examples-h">Examples</h2>
          {contents.examples.length ? contents.examples.map((s) => <Directory info={s} sections={sections} />) : <p class="muted">No examples.</p>}
        </section>
        <section id="versions" aria-labelledby="versions-h">
          <h2 id="versions-h">Versions</h2>
          <table>
            <thead><tr><th scope="col">Version</th><th scope="col">Published</th><th scope="col">Description</th></tr></thead>
            <tbody>
              {detail.published.map((v) => (
                <tr>
                  <td>{v.version === version ? <strong>{v.version}</strong> : <a href={`${base}?version=${encodeURIComponent(v.version)}`}>{v.version}</a>}</td>
                  <td><time datetime={v.published_at ?? ''}>{date(v.published_at)}</time></td>
                  <td>{v.description}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {all ? <PublisherVersions versions={all} /> : null}
        </section>
        <section id="downloads" aria-labelledby="downloads-h">
          <h2 id="downloads-h">Downloads</h2>
          <p>Last 7 days: {summary.week}; last 30 days: {summary.month}; last year: {summary.year}; in all: {summary.total}.</p>
          <DownloadChart days={days} />
        </section>
      </>
    ),
  });
}

/** What publishers see besides: every version's status, and why one failed. */
function PublisherVersions(props: { versions: import('../registry/store.js').VersionRow[] }) {
  return (
    <>
      <h3>Publishing status</h3>
      <table>
        <thead><tr><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Error</th></tr></thead>
        <tbody>
          {props.versions.map((v) => (
            <tr>
              <td>{v.version}</td>
              <td><span class={`badge ${v.status}`}>{v.status}</span></td>
              <td>{date(v.created_at)}</td>
              <td>{v.error ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
