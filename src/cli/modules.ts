// `terrace modules …`: read through the registry protocol (what Terraform sees), change through the API.
import type { Api } from './client.js';
import { bool, str, type Command } from './command.js';
import { usageError } from './errors.js';
import { modulePath } from './publish.js';
import { confirm, parseAddress, table } from './ui.js';

const seg = encodeURIComponent;

/** Every page of a registry protocol listing (offset/limit, meta.next_offset). */
async function protocolPages(api: Api, rel: string, what: string): Promise<any[]> {
  const out: any[] = [];
  for (let offset = 0; ; ) {
    const sep = rel.includes('?') ? '&' : '?';
    const res = await api.registry(`${rel}${sep}offset=${offset}&limit=100`, what);
    const mods = Array.isArray(res.json?.modules) ? res.json.modules : [];
    out.push(...mods);
    const next = res.json?.meta?.next_offset;
    if (typeof next !== 'number' || mods.length === 0) return out;
    offset = next;
  }
}

const row = (m: any) => ({ module: `${m.namespace}/${m.name}/${m.provider}`, latest: m.version, published: m.published_at, downloads: m.downloads, description: m.description });

export const moduleCommands: Command[] = [
  {
    name: 'modules list',
    summary: 'List modules (latest version of each), optionally in one organization',
    options: {
      org: { type: 'string', value: '<org>', description: 'only this organization\'s modules' },
      provider: { type: 'string', value: '<provider>', description: 'only modules for this provider' },
    },
    async run(ctx, p) {
      const api = await ctx.api();
      const q = str(p, 'provider') ? `?provider=${seg(str(p, 'provider')!)}` : '';
      const mods = await protocolPages(api, `${str(p, 'org') ? `${seg(str(p, 'org')!)}` : ''}${q}`, 'listing modules');
      ctx.emit(mods, () => table(ctx, mods.map(row), ['module', 'latest', 'published', 'downloads'], 'no modules'));
    },
  },
  {
    name: 'modules search',
    summary: 'Search modules by name, provider, description, README, inputs and outputs',
    args: '<query>',
    minArgs: 1,
    maxArgs: 1,
    options: {
      org: { type: 'string', value: '<org>', description: 'only this organization (namespace)' },
      provider: { type: 'string', value: '<provider>', description: 'only this provider' },
    },
    async run(ctx, p) {
      const api = await ctx.api();
      let rel = `search?q=${seg(p.positionals[0]!)}`;
      if (str(p, 'org')) rel += `&namespace=${seg(str(p, 'org')!)}`;
      if (str(p, 'provider')) rel += `&provider=${seg(str(p, 'provider')!)}`;
      const mods = await protocolPages(api, rel, 'searching modules');
      ctx.emit(mods, () => table(ctx, mods.map(row), ['module', 'latest', 'description'], 'no matches'));
    },
  },
  {
    name: 'modules show',
    summary: 'Show a module version: description, inputs, outputs, submodules and all versions',
    args: '<org/name/provider>',
    minArgs: 1,
    maxArgs: 1,
    options: { version: { type: 'string', value: '<version>', description: 'this version (default: the latest)' } },
    async run(ctx, p) {
      const m = parseAddress(p.positionals[0]);
      const api = await ctx.api();
      const v = str(p, 'version');
      const res = await api.registry(`${seg(m.namespace)}/${seg(m.name)}/${seg(m.provider)}${v ? `/${seg(v)}` : ''}`, `reading ${p.positionals[0]}${v ? ` ${v}` : ''}`);
      const d = res.json;
      ctx.emit(d, () => {
        ctx.out(`${d.namespace}/${d.name}/${d.provider} ${d.version}`);
        if (d.description) ctx.out(d.description);
        ctx.out(`published ${d.published_at}; ${d.downloads} downloads`);
        ctx.out(`source: ${api.target.host}/${d.namespace}/${d.name}/${d.provider}`);
        ctx.out(`versions: ${(d.versions ?? []).join(', ')}`);
        const inputs = d.root?.inputs ?? [];
        const outputs = d.root?.outputs ?? [];
        ctx.out('');
        ctx.out('Inputs:');
        table(ctx, inputs.map((i: any) => ({ name: i.name, type: i.type, required: i.required, description: i.description })), ['name', 'type', 'required', 'description']);
        ctx.out('');
        ctx.out('Outputs:');
        table(ctx, outputs.map((o: any) => ({ name: o.name, description: o.description })), ['name', 'description']);
        const subs = (d.submodules ?? []).map((s: any) => s.path);
        if (subs.length) ctx.out(`\nSubmodules: ${subs.join(', ')}`);
      });
    },
  },
  {
    name: 'modules versions',
    summary: 'List every version of a module with its status (errored and pending ones too)',
    args: '<org/name/provider>',
    minArgs: 1,
    maxArgs: 1,
    async run(ctx, p) {
      const m = parseAddress(p.positionals[0]);
      const api = await ctx.api();
      const res = await api.api('GET', modulePath({ org: m.namespace, ...m }), undefined, `reading ${p.positionals[0]}`);
      const versions = (res.json.data.attributes['version-statuses'] ?? []) as Array<{ version: string; status: string; error: string }>;
      ctx.emit(versions, () => table(ctx, versions.map((v) => ({ ...v, error: v.error || null })), ['version', 'status', 'error'], 'no versions'));
    },
  },
  {
    name: 'modules delete-version',
    summary: 'Delete one version of a module and its archive',
    args: '<org/name/provider> <version>',
    minArgs: 2,
    maxArgs: 2,
    options: { yes: { type: 'boolean', short: 'y', description: 'do not ask for confirmation' } },
    async run(ctx, p) {
      const m = parseAddress(p.positionals[0]);
      const version = p.positionals[1]!;
      if (!version) throw usageError('the version is missing');
      await confirm(ctx, bool(p, 'yes'), `delete ${p.positionals[0]} ${version}`);
      const api = await ctx.api();
      await api.api('DELETE', `${modulePath({ org: m.namespace, ...m })}/${seg(version)}`, undefined, `deleting ${p.positionals[0]} ${version}`);
      ctx.emit({ deleted: { module: p.positionals[0], version } }, () => ctx.out(`deleted ${p.positionals[0]} ${version}`));
    },
  },
  {
    name: 'modules delete',
    summary: 'Delete a module (one provider) with all its versions',
    args: '<org/name/provider>',
    minArgs: 1,
    maxArgs: 1,
    options: { yes: { type: 'boolean', short: 'y', description: 'do not ask for confirmation' } },
    async run(ctx, p) {
      const m = parseAddress(p.positionals[0]);
      await confirm(ctx, bool(p, 'yes'), `delete ${p.positionals[0]} and all its versions`);
      const api = await ctx.api();
      await api.api('DELETE', modulePath({ org: m.namespace, ...m }), undefined, `deleting ${p.positionals[0]}`);
      ctx.emit({ deleted: { module: p.positionals[0] } }, () => ctx.out(`deleted ${p.positionals[0]}`));
    },
  },
];
