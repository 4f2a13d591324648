import { raw } from 'hono/html';
import type { ModuleInfo } from '../registry/inspect/model.js';
import { renderReadme } from './markdown.js';

/** The anchor of a submodule's or example's section on the module page. */
export const sectionAnchor = (dir: string) => `dir-${dir.replace(/[^A-Za-z0-9_-]+/g, '-')}`;

export function Readme(props: { source: string; sections: Map<string, string> }) {
  if (!props.source.trim()) return <p class="muted">This module has no README.</p>;
  // renderReadme escapes all HTML in the source and polices every URL (see markdown.ts).
  return <div class="readme">{raw(renderReadme(props.source, props.sections))}</div>;
}

export function Inputs(props: { info: ModuleInfo }) {
  const { inputs } = props.info;
  if (inputs.length === 0) return <p class="muted">No inputs.</p>;
  return (
    <table>
      <thead>
        <tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Default</th><th scope="col">Required</th><th scope="col">Sensitive</th><th scope="col">Description</th></tr>
      </thead>
      <tbody>
        {inputs.map((i) => (
          <tr>
            <td><code>{i.name}</code></td>
            <td><code>{i.type || 'any'}</code></td>
            <td>{i.default ? <code>{i.default}</code> : <span class="muted">none</span>}</td>
            <td>{i.required ? 'yes' : 'no'}</td>
            <td>{i.sensitive ? 'yes' : 'no'}</td>
            <td>{i.description}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Outputs(props: { info: ModuleInfo }) {
  const { outputs } = props.info;
  if (outputs.length === 0) return <p class="muted">No outputs.</p>;
  return (
    <table>
      <thead>
        <tr><th scope="col">Name</th><th scope="col">Sensitive</th><th scope="col">Description</th></tr>
      </thead>
      <tbody>
        {outputs.map((o) => (
          <tr>
            <td><code>{o.name}</code></td>
            <td>{o.sensitive ? 'yes' : 'no'}</td>
            <td>{o.description}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Resources(props: { info: ModuleInfo }) {
  const { resources } = props.info;
  if (resources.length === 0) return <p class="muted">No resources.</p>;
  return (
    <ul>
      {resources.map((r) => (
        <li><code>{`${r.type}.${r.name}`}</code></li>
      ))}
    </ul>
  );
}

export function Providers(props: { info: ModuleInfo }) {
  const { provider_dependencies: deps, dependencies: calls } = props.info;
  return (
    <>
      {deps.length === 0 ? (
        <p class="muted">No provider requirements.</p>
      ) : (
        <table>
          <thead>
            <tr><th scope="col">Provider</th><th scope="col">Source</th><th scope="col">Version</th></tr>
          </thead>
          <tbody>
            {deps.map((d) => (
              <tr>
                <td><code>{d.name}</code></td>
                <td><code>{d.source || `${d.namespace}/${d.name}`}</code></td>
                <td>{d.version ? <code>{d.version}</code> : <span class="muted">any</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {calls.length ? (
        <>
          <h3>Module calls</h3>
          <ul>
            {calls.map((m) => (
              <li><code>{m.name}</code>: <code>{m.source}</code>{m.version ? <> ({m.version})</> : null}</li>
            ))}
          </ul>
        </>
      ) : null}
    </>
  );
}

/** A submodule or example: its own README, inputs, outputs, resources and requirements. */
export function Directory(props: { info: ModuleInfo; sections: Map<string, string> }) {
  const { info } = props;
  return (
    <details class="section" id={sectionAnchor(info.path)}>
      <summary>{info.path}</summary>
      <Readme source={info.readme} sections={props.sections} />
      <h4>Inputs</h4>
      <Inputs info={info} />
      <h4>Outputs</h4>
      <Outputs info={info} />
      <h4>Resources</h4>
      <Resources info={info} />
      <h4>Provider requirements</h4>
      <Providers info={info} />
    </details>
  );
}
