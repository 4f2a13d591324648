// `terrace publish <dir>` and `terrace publish --all <root>`.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { canonicalPublishVersion } from '../registry/names.js';
import type { Api } from './client.js';
import { bool, str, type Command, type Ctx, type Parsed } from './command.js';
import { CliError, EXIT, usageError } from './errors.js';
import { packModule } from './pack.js';
import { describeResult, findVersionOrNone, publishArchive, type ModuleRef, type PublishResult } from './publish.js';

const SKIP_DIRS = new Set(['.git', '.terraform', 'node_modules']);

interface Marker { name?: string; provider?: string; version?: string }

function readMarker(file: string): Marker {
  const text = fs.readFileSync(file, 'utf8');
  if (text.trim() === '') return {};
  try {
    const v = JSON.parse(text) as Marker;
    return typeof v === 'object' && v !== null ? v : {};
  } catch (err) {
    throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`, EXIT.usage, 'a marker file is empty or holds {"name": …, "provider": …, "version": …}');
  }
}

/** name and provider from `terraform-<provider>-<name>`, Terraform's repository naming convention. */
function fromDirName(dir: string): { name?: string; provider?: string } {
  const base = path.basename(dir);
  const m = /^terraform-([a-z0-9]+)-(.+)$/.exec(base);
  return m ? { provider: m[1], name: m[2] } : { name: base };
}

interface Found { dir: string; rel: string; name: string; provider: string; marker: Marker }

function segmentRegex(seg: string): RegExp {
  let re = '^';
  for (const part of seg.split(/(\{name\}|\{provider\}|\*)/)) {
    if (part === '{name}') re += '(?<name>[^/]+?)';
    else if (part === '{provider}') re += '(?<provider>[^/]+?)';
    else if (part === '*') re += '[^/]*';
    else re += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`${re}$`);
}

/** Module directories under root: those holding the marker file, or matching --pattern. */
export function findModules(root: string, opts: { marker: string; pattern?: string; provider?: string }): Found[] {
  const found: Array<{ dir: string; captured: Record<string, string> }> = [];
  const subdirs = (abs: string) =>
    fs.readdirSync(abs, { withFileTypes: true }).filter((d) => d.isDirectory() && !SKIP_DIRS.has(d.name)).map((d) => d.name).sort();
  if (opts.pattern) {
    const segs = opts.pattern.split('/').filter((s) => s && s !== '.').map(segmentRegex);
    const match = (abs: string, i: number, captured: Record<string, string>) => {
      if (i === segs.length) return void found.push({ dir: abs, captured });
      for (const name of subdirs(abs)) {
        const m = segs[i]!.exec(name);
        if (m) match(path.join(abs, name), i + 1, { ...captured, ...(m.groups ?? {}) });
      }
    };
    match(root, 0, {});
  } else {
    const walk = (abs: string) => {
      if (fs.existsSync(path.join(abs, opts.marker))) found.push({ dir: abs, captured: {} });
      for (const name of subdirs(abs)) walk(path.join(abs, name));
    };
    walk(root);
  }
  return found.map(({ dir, captured }) => {
    const marker = fs.existsSync(path.join(dir, opts.marker)) ? readMarker(path.join(dir, opts.marker)) : {};
    const guess = fromDirName(dir);
    const name = marker.name ?? captured.name ?? guess.name!;
    const provider = marker.provider ?? captured.provider ?? guess.provider ?? opts.provider;
    const rel = path.relative(root, dir) || '.';
    if (!provider) {
      throw usageError(`no provider for the module in ${rel}`, `set "provider" in its ${opts.marker}, use {provider} in --pattern, or pass --provider`);
    }
    return { dir, rel, name, provider, marker };
  });
}

function git(cwd: string, args: string[]): string {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (r.error) throw new CliError(`git is needed for --version-from tags: ${r.error.message}`, EXIT.usage);
  if (r.status !== 0) throw new CliError(`git ${args.join(' ')} failed in ${cwd}: ${r.stderr.trim()}`, EXIT.failed);
  return r.stdout;
}

/** The module's tree at a tag, extracted to a temporary directory. */
async function checkoutAt(top: string, tag: string, relToTop: string): Promise<string> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-tag-'));
  const child = spawn('git', ['archive', '--format=tar', `${tag}:${relToTop}`], { cwd: top, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  await new Promise<void>((resolve, reject) => {
    const x = tar.x({ cwd: tmp });
    x.on('finish', resolve);
    x.on('error', reject);
    child.stdout.pipe(x);
  });
  if ((await exited) !== 0) throw new CliError(`git archive ${tag}:${relToTop} failed: ${stderr.trim()}`, EXIT.failed);
  return tmp;
}

interface Job { ref: ModuleRef; version: string; found: Found; tag?: string; relToTop?: string; skip?: string }

async function pool<T, R>(items: T[], n: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, items.length)) }, worker));
  return out;
}

async function publishDir(ctx: Ctx, api: Api, ref: ModuleRef, version: string, dir: string, mode: 'auto' | 'lines' | 'none', timeout?: number): Promise<PublishResult> {
  const packed = await packModule(dir);
  try {
    return await publishArchive(ctx, api, ref, version, packed, { progress: mode, timeoutSeconds: timeout });
  } finally {
    packed.cleanup();
  }
}

async function publishAll(ctx: Ctx, p: Parsed, root: string): Promise<number> {
  const org = str(p, 'org')!;
  const from = str(p, 'version-from') ?? 'file';
  if (from !== 'file' && from !== 'tags') throw usageError(`--version-from must be "file" or "tags", not "${from}"`);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) throw usageError(`${root} is not a directory`);
  const modules = findModules(root, { marker: str(p, 'marker') ?? 'terrace-module.json', pattern: str(p, 'pattern'), provider: str(p, 'provider') });
  if (modules.length === 0) {
    throw new CliError(`no modules found under ${root}`, EXIT.failed, str(p, 'pattern') ? 'check --pattern' : `add a ${str(p, 'marker') ?? 'terrace-module.json'} file to each module directory, or pass --pattern`);
  }
  const jobs: Job[] = [];
  const problems: string[] = [];
  if (from === 'file') {
    const versionFile = str(p, 'version-file') ?? 'VERSION';
    for (const f of modules) {
      let raw = f.marker.version;
      if (raw === undefined && fs.existsSync(path.join(f.dir, versionFile))) raw = fs.readFileSync(path.join(f.dir, versionFile), 'utf8').trim();
      if (raw === undefined) problems.push(`${f.rel}: no version (set "version" in its marker file or write a ${versionFile} file)`);
      else if (!canonicalPublishVersion(raw)) problems.push(`${f.rel}: version "${raw}" is not a semantic version`);
      else jobs.push({ ref: { org, name: f.name, provider: f.provider }, version: canonicalPublishVersion(raw)!, found: f });
    }
  } else {
    const top = git(root, ['rev-parse', '--show-toplevel']).trim();
    const tags = git(top, ['tag', '--list']).split('\n').map((t) => t.trim()).filter(Boolean);
    const template = str(p, 'tag-prefix') ?? '{name}/v';
    for (const f of modules) {
      const prefix = template.replaceAll('{name}', f.name).replaceAll('{provider}', f.provider).replaceAll('{dir}', f.rel);
      const relToTop = path.relative(top, fs.realpathSync(f.dir)).split(path.sep).join('/');
      for (const tag of tags) {
        if (!tag.startsWith(prefix)) continue;
        const v = canonicalPublishVersion(tag.slice(prefix.length));
        if (v) jobs.push({ ref: { org, name: f.name, provider: f.provider }, version: v, found: f, tag, relToTop });
      }
    }
  }
  const api = await ctx.api();
  // Skip what the server already has (and publish again what errored).
  await pool(jobs, 8, async (j) => {
    const v = await findVersionOrNone(api, j.ref, j.version);
    const status = v?.attributes?.status;
    if (status && status !== 'errored') j.skip = status;
  });
  const todo = jobs.filter((j) => !j.skip);
  const skipped: PublishResult[] = jobs
    .filter((j) => j.skip)
    .map((j) => ({ namespace: org, name: j.ref.name, provider: j.ref.provider, version: j.version, status: 'skipped', error: null, size: null, sha256: null, source: `${api.target.host}/${org}/${j.ref.name}/${j.ref.provider}`, warnings: [] }));
  if (bool(p, 'dry-run')) {
    const plan = [...todo.map((j) => ({ ...j.ref, version: j.version, dir: j.found.rel, tag: j.tag ?? null, action: 'publish' })), ...skipped.map((s) => ({ org, name: s.name, provider: s.provider, version: s.version, action: 'skip' }))];
    ctx.emit({ plan, problems }, () => {
      for (const x of plan) ctx.out(`${x.action === 'skip' ? 'skip   ' : 'publish'} ${x.org}/${x.name}/${x.provider} ${x.version}`);
      for (const pr of problems) ctx.err(`error: ${pr}`);
    });
    return problems.length ? EXIT.failed : EXIT.ok;
  }
  const mode = ctx.json ? 'none' : 'lines';
  const concurrency = Number(str(p, 'concurrency') ?? '4');
  if (!Number.isInteger(concurrency) || concurrency < 1) throw usageError('--concurrency must be a whole number of at least 1');
  const published = await pool(todo, concurrency, async (j): Promise<PublishResult> => {
    let dir = j.found.dir;
    let tmp: string | undefined;
    try {
      if (j.tag !== undefined) dir = tmp = await checkoutAt(git(root, ['rev-parse', '--show-toplevel']).trim(), j.tag, j.relToTop ?? '');
      return await publishDir(ctx, api, j.ref, j.version, dir, mode);
    } catch (err) {
      if (!(err instanceof CliError) || err.exitCode === EXIT.auth) throw err;
      return { namespace: org, name: j.ref.name, provider: j.ref.provider, version: j.version, status: 'errored', error: err.message, size: null, sha256: null, source: '', warnings: [] };
    } finally {
      if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
  const results = [...published, ...skipped];
  const failed = results.filter((r) => r.status === 'errored').length + problems.length;
  ctx.emit({ results, problems }, () => {
    for (const r of results) describeResult(ctx, r, false);
    for (const pr of problems) ctx.err(`error: ${pr}`);
    ctx.out(`published ${published.filter((r) => r.status === 'ok').length}, skipped ${skipped.length}, failed ${failed}`);
  });
  return failed ? EXIT.failed : EXIT.ok;
}

export const publishCommand: Command = {
  name: 'publish',
  summary: 'Pack a module directory and publish it as a version (or every module under a tree with --all)',
  args: '<dir>',
  maxArgs: 1,
  options: {
    org: { type: 'string', value: '<org>', description: 'organization (the namespace) to publish into (required)' },
    name: { type: 'string', value: '<name>', description: 'module name (default: from terraform-<provider>-<name>, else the directory name)' },
    provider: { type: 'string', value: '<provider>', description: 'module provider, e.g. aws (default: from terraform-<provider>-<name>)' },
    version: { type: 'string', value: '<version>', description: 'semantic version to publish, e.g. 1.2.0 (required without --all)' },
    description: { type: 'string', value: '<text>', description: 'version description (default: the README\'s first paragraph)' },
    all: { type: 'string', value: '<root>', description: 'publish every module found under <root> that is not published yet' },
    marker: { type: 'string', value: '<file>', description: 'with --all: the file that marks a module directory (default terrace-module.json)' },
    pattern: { type: 'string', value: '<glob>', description: 'with --all: module directories by path instead of markers, e.g. "modules/{provider}/{name}"' },
    'version-from': { type: 'string', value: '<file|tags>', choices: ['file', 'tags'], description: 'with --all: versions from a version file (default) or from git tags' },
    'version-file': { type: 'string', value: '<file>', description: 'with --all: the version file in each module directory (default VERSION)' },
    'tag-prefix': { type: 'string', value: '<template>', description: 'with --version-from tags: tag prefix before the version (default "{name}/v"; {name}, {provider}, {dir})' },
    concurrency: { type: 'string', value: '<n>', description: 'with --all: how many versions to publish at once (default 4)' },
    'dry-run': { type: 'boolean', description: 'with --all: show what would be published and skipped, publish nothing' },
    progress: { type: 'string', value: '<auto|lines|none>', choices: ['auto', 'lines', 'none'], description: 'upload progress: a bar on a terminal, plain lines otherwise (default auto)' },
    timeout: { type: 'string', value: '<seconds>', description: 'how long to wait for the server to finish publishing (default 300)' },
  },
  details: `Packs <dir> as Terraform would (honouring .terraformignore; .git and .terraform are
left out; links must stay inside the directory), creates the module if needed, creates the
version, uploads it (retrying transient failures), waits until the server has published or
refused it, and prints the source/version snippet or the reasons.

Examples:
  terrace publish ./terraform-aws-network --org acme --version 1.2.0
  terrace publish --all . --org acme                      # terrace-module.json + VERSION files
  terrace publish --all . --org acme --pattern 'modules/{name}' --provider aws --version-from tags`,
  async run(ctx, p) {
    const org = str(p, 'org');
    if (!org) throw usageError('--org is required', 'name the organization to publish into: --org <org>');
    const root = str(p, 'all');
    if (root !== undefined) {
      if (p.positionals.length) throw usageError('give either <dir> or --all <root>, not both');
      return publishAll(ctx, p, root);
    }
    const dir = p.positionals[0];
    if (!dir) throw usageError('the module directory is missing', 'terrace publish <dir> --org <org> --version <version>');
    const version = str(p, 'version');
    if (!version) throw usageError('--version is required', 'for example --version 1.0.0');
    if (!canonicalPublishVersion(version)) throw usageError(`"${version}" is not a semantic version`, 'for example 1.2.0 or v1.2.0-rc.1');
    const marker = fs.existsSync(path.join(dir, 'terrace-module.json')) ? readMarker(path.join(dir, 'terrace-module.json')) : {};
    const guess = fromDirName(path.resolve(dir));
    const name = str(p, 'name') ?? marker.name ?? guess.name!;
    const provider = str(p, 'provider') ?? marker.provider ?? guess.provider;
    if (!provider) throw usageError(`no provider for ${dir}`, 'pass --provider <provider> (for example aws), or name the directory terraform-<provider>-<name>');
    const mode = (str(p, 'progress') ?? 'auto') as 'auto' | 'lines' | 'none';
    if (!['auto', 'lines', 'none'].includes(mode)) throw usageError('--progress must be auto, lines or none');
    const timeout = str(p, 'timeout') ? Number(str(p, 'timeout')) : undefined;
    if (timeout !== undefined && !(timeout > 0)) throw usageError('--timeout must be a number of seconds above 0');
    const packed = await packModule(dir);
    try {
      const api = await ctx.api();
      const result = await publishArchive(ctx, api, { org, name, provider }, version, packed, {
        description: str(p, 'description'),
        progress: ctx.json ? 'none' : mode,
        timeoutSeconds: timeout,
      });
      ctx.emit(result, () => describeResult(ctx, result, true));
      return result.status === 'ok' ? EXIT.ok : EXIT.failed;
    } finally {
      packed.cleanup();
    }
  },
};

