// Air-gap bundles: one tar file holding module archives, their metadata and a manifest with a
// sha256 per archive (and a checksum of the manifest itself). Export reads through the API and
// the registry protocol; import verifies everything before it publishes anything.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import semver from 'semver';
import * as tar from 'tar';
import { validateArchive } from '../registry/archive.js';
import { fetchRetrying, type Api } from './client.js';
import { list, str, type Command, type Ctx } from './command.js';
import { versionMatcher } from './constraints.js';
import { CliError, EXIT, usageError } from './errors.js';
import { describeResult, findVersionOrNone, modulePath, publishArchive, type PublishResult } from './publish.js';
import { allPages, mib, table } from './ui.js';

const FORMAT = 'terrace-bundle';
const FORMAT_VERSION = 1;
const seg = encodeURIComponent;

export interface ManifestVersion {
  version: string;
  description: string | null;
  'commit-sha': string | null;
  'published-at': string | null;
  size: number;
  sha256: string;
  archive: string;
}
export interface ManifestModule { namespace: string; name: string; provider: string; versions: ManifestVersion[] }
export interface Manifest { format: string; 'format-version': number; 'created-at': string; source: string; modules: ManifestModule[] }

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Streams a response body to a file, answering its size and sha256. */
async function download(res: Response, file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
    new Transform({ transform(c: Buffer, _e, cb) { hash.update(c); size += c.length; cb(null, c); } }),
    fs.createWriteStream(file),
  );
  return { size, sha256: hash.digest('hex') };
}

async function exportBundle(ctx: Ctx, api: Api, file: string, orgs: string[], moduleFilter: string[], constraint: string | undefined): Promise<Manifest> {
  const matches = versionMatcher(constraint);
  const wanted = moduleFilter.map((m) => {
    const [name, provider, extra] = m.split('/');
    if (!name || extra !== undefined) throw usageError(`--module "${m}" should be <name> or <name>/<provider>`);
    return { name: name.toLowerCase(), provider };
  });
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-bundle-'));
  try {
    const manifest: Manifest = { format: FORMAT, 'format-version': FORMAT_VERSION, 'created-at': new Date().toISOString().replace(/\.\d+Z$/, 'Z'), source: api.target.host, modules: [] };
    for (const org of orgs) {
      const mods = await allPages(api, `organizations/${seg(org)}/registry-modules`, `listing modules of ${org}`);
      for (const m of mods) {
        const a = m.attributes;
        if (wanted.length && !wanted.some((w) => w.name === String(a.name).toLowerCase() && (!w.provider || w.provider === a.provider))) continue;
        const ref = { org: a.namespace as string, name: a.name as string, provider: a.provider as string };
        const versions = ((a['version-statuses'] ?? []) as Array<{ version: string; status: string }>)
          .filter((v) => v.status === 'ok' && matches(v.version))
          .map((v) => v.version)
          .sort(semver.compare);
        if (versions.length === 0) continue;
        const entry: ManifestModule = { namespace: ref.org, name: ref.name, provider: ref.provider, versions: [] };
        for (const version of versions) {
          const label = `${ref.org}/${ref.name}/${ref.provider} ${version}`;
          const meta = (await api.api('GET', `${modulePath(ref)}/version?module_version=${seg(version)}`, undefined, `reading ${label}`)).json.data.attributes;
          // The download endpoint hands out a signed archive URL, as Terraform gets it.
          const dl = await api.registry(`${seg(ref.org)}/${seg(ref.name)}/${seg(ref.provider)}/${seg(version)}/download`, `downloading ${label}`, { expect: [204, 200] });
          const location = dl.headers.get('x-terraform-get');
          if (!location) throw new CliError(`downloading ${label}: the server gave no X-Terraform-Get location`, EXIT.failed);
          const archiveUrl = getterUrl(new URL(location, new URL(`${seg(ref.org)}/${seg(ref.name)}/${seg(ref.provider)}/${seg(version)}/download`, api.target.modules)));
          const res = await fetchRetrying(archiveUrl, {}, { idempotent: true });
          if (res.status !== 200 || !res.body) throw new CliError(`downloading ${label}: the archive URL answered ${res.status}`, EXIT.failed);
          const rel = `archives/${ref.org}/${ref.name}/${ref.provider}/${version}.tar.gz`;
          fs.mkdirSync(path.dirname(path.join(staging, rel)), { recursive: true });
          const got = await download(res, path.join(staging, rel));
          if (meta.sha256 && got.sha256 !== meta.sha256) {
            throw new CliError(`downloading ${label}: the archive's sha256 ${got.sha256} differs from the registry's ${meta.sha256}`, EXIT.failed, 'export again; if it persists the stored archive is damaged');
          }
          entry.versions.push({ version, description: meta.description ?? null, 'commit-sha': meta['commit-sha'] ?? null, 'published-at': meta['published-at'] ?? null, size: got.size, sha256: got.sha256, archive: rel });
          if (!ctx.json) ctx.err(`exported ${label} (${mib(got.size)})`);
        }
        manifest.modules.push(entry);
      }
    }
    if (manifest.modules.length === 0) {
      throw new CliError('nothing matched: no published versions to export', EXIT.notFound, 'check --org, --module and --version');
    }
    const text = `${JSON.stringify(manifest, null, 2)}\n`;
    fs.writeFileSync(path.join(staging, 'manifest.json'), text);
    fs.writeFileSync(path.join(staging, 'manifest.json.sha256'), `${sha256(text)}  manifest.json\n`);
    const files = ['manifest.json', 'manifest.json.sha256', ...manifest.modules.flatMap((m) => m.versions.map((v) => v.archive))];
    const partial = `${file}.partial`;
    await tar.c({ cwd: staging, file: partial, portable: true, noDirRecurse: true }, files);
    fs.renameSync(partial, file);
    return manifest;
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * The URL a getter fetches for an X-Terraform-Get value: without go-getter's own parameters
 * (checksum, archive), which are instructions to the client, not part of the signed URL (a
 * presigned S3 URL refuses parameters it was not signed with). The other parameters keep their
 * bytes. The archive's sha256 is checked against the registry's after the download.
 */
export function getterUrl(url: URL): URL {
  const kept = url.search
    .slice(1)
    .split('&')
    .filter((part) => part !== '' && !['checksum', 'archive'].includes(part.split('=')[0]!));
  const out = new URL(url);
  out.search = kept.length ? `?${kept.join('&')}` : '';
  return out;
}

export interface VerifiedBundle { manifest: Manifest; dir: string; archives: Map<string, string>; cleanup(): void }

const ENTRY_RE = /^(manifest\.json|manifest\.json\.sha256|archives\/[^/]+\/[^/]+\/[^/]+\/[^/]+\.tar\.gz)$/;

/**
 * Reads the whole bundle, then checks it: the manifest against its checksum, every archive
 * against the manifest (size and sha256, none missing, none extra) and against the registry's
 * archive rules. Any problem refuses the whole bundle.
 */
export async function verifyBundle(file: string): Promise<VerifiedBundle> {
  if (!fs.existsSync(file)) throw usageError(`${file} does not exist`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-import-'));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  const problems: string[] = [];
  const seen = new Map<string, { file: string; size: number; sha256: string }>();
  let manifestText: Buffer | undefined;
  let manifestSum: string | undefined;
  try {
    let n = 0;
    const pending: Promise<void>[] = [];
    const parser = new tar.Parser({ strict: true });
    parser.on('entry', (entry: tar.ReadEntry) => {
      const name = entry.path.replace(/^\.\//, '');
      if (entry.type === 'Directory') return void entry.resume();
      if (entry.type !== 'File' || !ENTRY_RE.test(name) || name.split('/').includes('..') || seen.has(name)) {
        problems.push(`unexpected entry ${JSON.stringify(name)} (${entry.type})`);
        return void entry.resume();
      }
      const chunks: Buffer[] = [];
      const hash = createHash('sha256');
      let size = 0;
      const target = path.join(dir, `${n++}.tar.gz`);
      const out = name.startsWith('archives/') ? fs.createWriteStream(target) : undefined;
      pending.push(new Promise<void>((resolve, reject) => {
        entry.on('data', (c: Buffer) => {
          hash.update(c);
          size += c.length;
          if (out) out.write(c);
          else chunks.push(c);
        });
        entry.on('end', () => {
          if (name === 'manifest.json') manifestText = Buffer.concat(chunks);
          else if (name === 'manifest.json.sha256') manifestSum = Buffer.concat(chunks).toString('utf8').trim().split(/\s+/)[0];
          else seen.set(name, { file: target, size, sha256: hash.digest('hex') });
          if (out) out.end(() => resolve());
          else resolve();
        });
        entry.on('error', reject);
      }));
    });
    let parseError: Error | undefined;
    parser.on('error', (err: Error) => (parseError ??= err));
    const ended = new Promise<void>((resolve) => parser.on('end', () => resolve()));
    for await (const chunk of fs.createReadStream(file)) {
      if (parseError) break;
      parser.write(chunk as Buffer);
    }
    if (!parseError) parser.end();
    if (!parseError) await ended;
    await Promise.allSettled(pending);
    if (parseError) throw new CliError(`${file} is not a readable bundle: ${parseError.message}; nothing was imported`, EXIT.failed, 'export it again and copy it whole');
    if (!manifestText) throw new CliError(`${file} is not a Terrace bundle: it has no manifest.json`, EXIT.failed);
    if (!manifestSum) problems.push('manifest.json.sha256 is missing');
    else if (manifestSum !== sha256(manifestText)) problems.push('manifest.json does not match its checksum in manifest.json.sha256');
    let manifest: Manifest;
    try {
      manifest = JSON.parse(manifestText.toString('utf8')) as Manifest;
    } catch {
      throw new CliError(`${file}: manifest.json is not valid JSON; nothing was imported`, EXIT.failed);
    }
    if (manifest.format !== FORMAT || manifest['format-version'] !== FORMAT_VERSION || !Array.isArray(manifest.modules)) {
      throw new CliError(`${file}: manifest.json is not a Terrace bundle manifest of format version ${FORMAT_VERSION}; nothing was imported`, EXIT.failed);
    }
    const listed = new Set<string>();
    const archives = new Map<string, string>();
    for (const m of manifest.modules) {
      for (const v of m.versions ?? []) {
        const label = `${m.namespace}/${m.name}/${m.provider} ${v.version}`;
        listed.add(v.archive);
        const got = seen.get(v.archive);
        if (!got) { problems.push(`${label}: its archive ${v.archive} is missing`); continue; }
        if (got.size !== v.size || got.sha256 !== v.sha256) { problems.push(`${label}: ${v.archive} does not match its sha256 in the manifest`); continue; }
        try {
          await validateArchive(fs.createReadStream(got.file), { maxEntries: 10_000, maxUnpackedBytes: 2 * 1024 ** 3 });
        } catch (err) {
          problems.push(`${label}: ${(err as Error).message}`);
          continue;
        }
        archives.set(v.archive, got.file);
      }
    }
    for (const name of seen.keys()) if (!listed.has(name)) problems.push(`${name} is in the bundle but not in its manifest`);
    if (problems.length) {
      throw new CliError(`${file} failed verification, so nothing was imported:\n  ${problems.join('\n  ')}`, EXIT.failed, 'the bundle was changed or damaged after export: export it again');
    }
    return { manifest, dir, archives, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

async function importBundle(ctx: Ctx, api: Api, b: VerifiedBundle, orgOverride: string | undefined): Promise<PublishResult[]> {
  const results: PublishResult[] = [];
  for (const m of b.manifest.modules) {
    const ref = { org: orgOverride ?? m.namespace, name: m.name, provider: m.provider };
    // Oldest first, so each module's latest version is also the last one published.
    for (const v of [...m.versions].sort((x, y) => semver.compare(x.version, y.version))) {
      const existing = await findVersionOrNone(api, ref, v.version);
      const status = existing?.attributes?.status;
      if (status && status !== 'errored') {
        results.push({ namespace: ref.org, name: ref.name, provider: ref.provider, version: v.version, status: 'skipped', error: null, size: existing.attributes.size ?? null, sha256: existing.attributes.sha256 ?? null, source: '', warnings: [] });
        continue;
      }
      const r = await publishArchive(ctx, api, ref, v.version, { file: b.archives.get(v.archive)!, size: v.size, sha256: v.sha256 }, {
        description: v.description,
        commitSha: v['commit-sha'],
        progress: ctx.json ? 'none' : 'lines',
      });
      if (r.status === 'ok' && r.sha256 && r.sha256 !== v.sha256) {
        r.status = 'errored';
        r.error = `the registry stored sha256 ${r.sha256}, not the bundle's ${v.sha256}`;
      }
      results.push(r);
    }
  }
  return results;
}

export const bundleCommands: Command[] = [
  {
    name: 'bundle export',
    summary: 'Write chosen modules and versions, with checksums and a manifest, to one file',
    args: '<file>',
    minArgs: 1,
    maxArgs: 1,
    options: {
      org: { type: 'string', multiple: true, value: '<org>', description: 'export this organization\'s modules (repeatable; required)' },
      module: { type: 'string', multiple: true, value: '<name[/provider]>', description: 'only this module (repeatable)' },
      version: { type: 'string', value: '<constraint>', description: 'only versions matching a Terraform constraint, e.g. "~> 1.2" or ">= 1.0, < 2.0"' },
    },
    details: `The bundle is a tar file: manifest.json (every module version with its metadata, size and
sha256), manifest.json.sha256, and archives/<org>/<name>/<provider>/<version>.tar.gz.

  terrace bundle export acme.bundle --org acme --version ">= 1.0"`,
    async run(ctx, p) {
      const orgs = list(p, 'org');
      if (orgs.length === 0) throw usageError('--org is required', 'name at least one organization to export: --org <org>');
      const api = await ctx.api();
      const manifest = await exportBundle(ctx, api, p.positionals[0]!, orgs, list(p, 'module'), str(p, 'version'));
      const versions = manifest.modules.reduce((n, m) => n + m.versions.length, 0);
      const summary = { file: p.positionals[0], bytes: fs.statSync(p.positionals[0]!).size, modules: manifest.modules.length, versions, manifest };
      ctx.emit(summary, () => ctx.out(`wrote ${p.positionals[0]}: ${manifest.modules.length} modules, ${versions} versions, ${mib(summary.bytes)}`));
    },
  },
  {
    name: 'bundle verify',
    summary: 'Check a bundle\'s checksums and archives without importing it',
    args: '<file>',
    minArgs: 1,
    maxArgs: 1,
    async run(ctx, p) {
      const b = await verifyBundle(p.positionals[0]!);
      b.cleanup();
      const rows = b.manifest.modules.flatMap((m) => m.versions.map((v) => ({ module: `${m.namespace}/${m.name}/${m.provider}`, version: v.version, size: v.size, sha256: v.sha256 })));
      ctx.emit({ ok: true, source: b.manifest.source, 'created-at': b.manifest['created-at'], versions: rows }, () => {
        ctx.out(`${p.positionals[0]}: verified; exported from ${b.manifest.source} at ${b.manifest['created-at']}`);
        table(ctx, rows, ['module', 'version', 'size', 'sha256']);
      });
    },
  },
  {
    name: 'bundle import',
    summary: 'Verify a bundle completely, then publish what the registry lacks',
    args: '<file>',
    minArgs: 1,
    maxArgs: 1,
    options: { org: { type: 'string', value: '<org>', description: 'publish into this organization instead of the bundle\'s own' } },
    details: `Every checksum is verified before anything is published: a changed or damaged bundle is
refused whole. Versions the registry already has are skipped, so importing twice is safe.`,
    async run(ctx, p) {
      const b = await verifyBundle(p.positionals[0]!);
      try {
        const api = await ctx.api();
        const results = await importBundle(ctx, api, b, str(p, 'org'));
        const failed = results.filter((r) => r.status === 'errored').length;
        ctx.emit({ results }, () => {
          for (const r of results) describeResult(ctx, r, false);
          ctx.out(`imported ${results.filter((r) => r.status === 'ok').length}, skipped ${results.filter((r) => r.status === 'skipped').length}, failed ${failed}`);
        });
        return failed ? EXIT.failed : EXIT.ok;
      } finally {
        b.cleanup();
      }
    },
  },
];
