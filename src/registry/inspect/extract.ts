import { emptyModule, type ModuleCall, type ModuleInfo, type ModuleInput, type ModuleOutput, type ProviderDependency } from './model.js';

/** hcl2json's rendering of one .tf file: blocks keyed by type, then labels, as arrays of bodies. */
export type ParsedFile = Record<string, unknown>;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const bodies = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : isObj(v) ? [v] : []);

/** hcl2json wraps expressions as "${…}"; the protocol wants the bare expression text. */
function unwrap(v: unknown): string {
  if (typeof v !== 'string') return v === undefined || v === null ? '' : JSON.stringify(v);
  const m = /^\$\{([\s\S]*)\}$/.exec(v);
  return m ? m[1]!.trim() : v;
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The literal text of a default: strings quoted, other values as JSON, expressions bare. */
function literal(v: unknown): string {
  if (typeof v === 'string') {
    const m = /^\$\{([\s\S]*)\}$/.exec(v);
    return m ? m[1]!.trim() : JSON.stringify(v);
  }
  return JSON.stringify(v);
}

/**
 * Builds one directory's interface from its parsed files. Malformed blocks are skipped and
 * reported through warn(); nothing here throws on hostile input.
 */
export function extractModule(path: string, files: ParsedFile[], readme: string, warn: (msg: string) => void): ModuleInfo {
  const info = emptyModule(path);
  info.readme = readme;
  info.empty = files.length === 0;
  const inputs = new Map<string, ModuleInput>();
  const outputs = new Map<string, ModuleOutput>();
  const providers = new Map<string, ProviderDependency>();
  const calls = new Map<string, ModuleCall>();
  const resources = new Map<string, { name: string; type: string }>();
  const where = path === '' ? 'the root module' : path;

  for (const file of files) {
    for (const [name, list] of Object.entries(isObj(file.variable) ? file.variable : {})) {
      const b = bodies(list)[0];
      if (!b) continue;
      const hasDefault = Object.prototype.hasOwnProperty.call(b, 'default');
      inputs.set(name, {
        name,
        type: b.type === undefined ? '' : unwrap(b.type),
        description: text(b.description),
        default: hasDefault ? literal(b.default) : '',
        required: !hasDefault,
        sensitive: b.sensitive === true,
      });
    }
    for (const [name, list] of Object.entries(isObj(file.output) ? file.output : {})) {
      const b = bodies(list)[0];
      if (!b) continue;
      outputs.set(name, { name, description: text(b.description), sensitive: b.sensitive === true });
    }
    for (const [name, list] of Object.entries(isObj(file.module) ? file.module : {})) {
      const b = bodies(list)[0];
      if (!b || typeof b.source !== 'string' || b.source.startsWith('${')) {
        warn(`${where}: module "${name}" has no literal source; it is left out of the dependencies`);
        continue;
      }
      calls.set(name, { name, source: b.source, version: typeof b.version === 'string' ? b.version : '' });
    }
    for (const kind of ['resource', 'data'] as const) {
      const blocks = file[kind];
      if (!isObj(blocks)) continue;
      for (const [type, byName] of Object.entries(blocks)) {
        if (!isObj(byName)) continue;
        for (const name of Object.keys(byName)) {
          const rtype = kind === 'data' ? `data.${type}` : type;
          resources.set(`${rtype}.${name}`, { name, type: rtype });
        }
      }
    }
    for (const tf of bodies(file.terraform)) {
      for (const rp of bodies(tf.required_providers)) {
        for (const [local, spec] of Object.entries(rp)) {
          if (typeof spec === 'string') {
            // Legacy form: required_providers { aws = ">= 3.0" }
            providers.set(local, { name: local, namespace: 'hashicorp', source: `hashicorp/${local}`, version: spec });
          } else if (isObj(spec)) {
            const source = typeof spec.source === 'string' ? spec.source : `hashicorp/${local}`;
            const parts = source.split('/');
            const namespace = parts.length >= 2 ? parts[parts.length - 2]! : 'hashicorp';
            providers.set(local, { name: local, namespace, source, version: typeof spec.version === 'string' ? spec.version : '' });
          } else {
            warn(`${where}: required_providers entry "${local}" is not a string or object`);
          }
        }
      }
    }
  }
  // Providers used by resources without a required_providers entry are implied by the type prefix.
  for (const r of resources.values()) {
    const local = r.type.replace(/^data\./, '').split('_')[0]!;
    if (local && !providers.has(local)) {
      providers.set(local, { name: local, namespace: 'hashicorp', source: `hashicorp/${local}`, version: '' });
    }
  }
  const byName = <T extends { name: string }>(m: Map<string, T>) => [...m.values()].sort((a, b) => a.name.localeCompare(b.name));
  info.inputs = byName(inputs);
  info.outputs = byName(outputs);
  info.provider_dependencies = byName(providers);
  info.dependencies = byName(calls);
  info.resources = [...resources.values()].sort((a, b) => `${a.type}.${a.name}`.localeCompare(`${b.type}.${b.name}`));
  return info;
}

/** The first paragraph of a README that is prose (not a heading, badge line or code). */
export function firstParagraph(readme: string, max = 500): string {
  const paragraphs = readme.replace(/\r\n/g, '\n').split(/\n\s*\n/);
  for (const p of paragraphs) {
    const t = p.trim();
    if (!t || t.startsWith('#') || t.startsWith('```') || t.startsWith('<') || /^(\[!\[|!\[)/.test(t) || t.startsWith('|')) continue;
    const plain = t.replace(/\s+/g, ' ').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[*_`]/g, '');
    return plain.length > max ? `${plain.slice(0, max - 1)}…` : plain;
  }
  return '';
}
