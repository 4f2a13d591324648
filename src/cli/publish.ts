// One publish path for a directory, a monorepo's modules and a bundle's archives: make sure the
// module exists, create the version, upload, then wait until the server says ok or errored.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Api } from './client.js';
import type { Ctx } from './command.js';
import { CliError, EXIT } from './errors.js';
import { progress, uploadArchive } from './upload.js';

export interface ModuleRef { org: string; name: string; provider: string }
export interface PublishResult {
  namespace: string;
  name: string;
  provider: string;
  version: string;
  status: 'ok' | 'errored' | 'skipped';
  error: string | null;
  size: number | null;
  sha256: string | null;
  source: string;
  warnings: string[];
}

const seg = encodeURIComponent;
export const modulePath = (m: ModuleRef) => `organizations/${seg(m.org)}/registry-modules/private/${seg(m.org)}/${seg(m.name)}/${seg(m.provider)}`;
export const sourceOf = (api: Api, m: ModuleRef) => `${api.target.host}/${m.org}/${m.name}/${m.provider}`;

/** The version's resource, or undefined when the module or version does not exist. */
export async function findVersion(api: Api, m: ModuleRef, version: string): Promise<any | undefined> {
  const res = await api.api('GET', `${modulePath(m)}/version?module_version=${seg(version)}`, undefined, `reading ${m.org}/${m.name}/${m.provider} ${version}`);
  return res.json?.data;
}

export async function findVersionOrNone(api: Api, m: ModuleRef, version: string): Promise<any | undefined> {
  try {
    return await findVersion(api, m, version);
  } catch (err) {
    if (err instanceof CliError && err.exitCode === EXIT.notFound) return undefined;
    throw err;
  }
}

/** Creates the module unless it exists (another publisher may create it at the same moment). */
export async function ensureModule(api: Api, m: ModuleRef): Promise<void> {
  const what = `creating module ${m.org}/${m.name}/${m.provider}`;
  const existing = await api.api('GET', modulePath(m), undefined, what).catch((err: unknown) => {
    if (err instanceof CliError && err.exitCode === EXIT.notFound) return undefined;
    throw err;
  });
  if (existing) return;
  const res = await api.call(
    'POST',
    new URL(`organizations/${seg(m.org)}/registry-modules`, api.target.tfe),
    { data: { type: 'registry-modules', attributes: { name: m.name, provider: m.provider, 'registry-name': 'private' } } },
    what,
    [201, 404, 422],
  );
  if (res.status === 404) {
    throw new CliError(
      `${what}: organization ${m.org} does not exist on ${api.target.host}, or your token may not publish in it`,
      EXIT.notFound,
      `check the name; an owner can create it with \`terrace orgs create ${m.org} --email <address>\` or give you a team with manage-modules`,
    );
  }
  if (res.status === 422 && !/already exists/.test(JSON.stringify(res.json))) throw api.failure(res, what);
}

export interface ArchiveInput { file: string; size: number; sha256: string }

export async function publishArchive(
  ctx: Ctx,
  api: Api,
  m: ModuleRef,
  version: string,
  archive: ArchiveInput,
  opts: { description?: string | null; commitSha?: string | null; progress: 'auto' | 'lines' | 'none'; timeoutSeconds?: number },
): Promise<PublishResult> {
  const label = `${m.org}/${m.name}/${m.provider} ${version}`;
  await ensureModule(api, m);
  const attributes: Record<string, unknown> = { version };
  if (opts.description) attributes.description = opts.description;
  if (opts.commitSha) attributes['commit-sha'] = opts.commitSha;
  const created = await api.api(
    'POST',
    `${modulePath(m)}/versions`,
    { data: { type: 'registry-module-versions', attributes } },
    `creating version ${label}`,
  );
  const canonical: string = created.json?.data?.attributes?.version ?? version;
  const uploadUrl: unknown = created.json?.data?.links?.upload;
  if (typeof uploadUrl !== 'string') throw new CliError(`creating version ${label}: the server gave no upload URL`, EXIT.failed);
  const bar = progress(ctx.stderr, `uploading ${label}`, archive.size, opts.progress);
  const up = await uploadArchive(uploadUrl, archive.file, archive.size, bar, (why) => {
    if (opts.progress !== 'none') ctx.err(`${label}: upload failed (${why}); retrying`);
  });
  // Ingestion may finish after the PUT answers: wait for the verdict the API reports.
  const deadline = Date.now() + (opts.timeoutSeconds ?? 300) * 1000;
  let v: any;
  for (let delay = 200; ; delay = Math.min(delay * 2, 2000)) {
    v = await findVersion(api, m, canonical);
    const status = v?.attributes?.status;
    if (status === 'ok' || status === 'errored') break;
    if (!up.ok && status === 'pending') break;
    if (Date.now() > deadline) throw new CliError(`${label} is still ${status} after ${opts.timeoutSeconds ?? 300} s`, EXIT.unavailable, 'check it later with `terrace modules versions`');
    await sleep(delay);
  }
  const a = v?.attributes ?? {};
  const ok = a.status === 'ok';
  return {
    namespace: m.org,
    name: m.name,
    provider: m.provider,
    version: canonical,
    status: ok ? 'ok' : 'errored',
    error: ok ? null : (a.error || (up.ok ? null : up.error) || 'the server gave no reason'),
    size: a.size ?? null,
    sha256: a.sha256 ?? null,
    source: sourceOf(api, m),
    warnings: Array.isArray(a.warnings) ? a.warnings : [],
  };
}

/** The snippet users paste, or the reason it failed. */
export function describeResult(ctx: Ctx, r: PublishResult, snippet: boolean): void {
  const label = `${r.namespace}/${r.name}/${r.provider} ${r.version}`;
  if (r.status === 'skipped') return ctx.out(`${label}: already published, skipped`);
  if (r.status === 'errored') return ctx.err(`error: ${label}: publishing failed: ${r.error}`);
  ctx.out(`${label}: published (${r.size} bytes, sha256 ${r.sha256})`);
  for (const w of r.warnings) ctx.err(`${label}: warning: ${w}`);
  if (snippet) {
    ctx.out('');
    ctx.out(`module "${r.name.replace(/[^A-Za-z0-9_-]/g, '_')}" {`);
    ctx.out(`  source  = "${r.source}"`);
    ctx.out(`  version = "${r.version}"`);
    ctx.out('}');
  }
}
