import { Readable } from 'node:stream';
import { Hono, type Context } from 'hono';
import { BlobNotFoundError, type ByteRange } from '../blobs/types.js';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import { notFound } from '../http/errors.js';
import type { ModuleWithOrg, VersionRow } from './store.js';

const PURPOSE = 'archive-url';

/**
 * The X-Terraform-Get value for a version. No credentials reach this URL (go-getter sends
 * none), so it is a capability: expiry and signature live in the path, bound to the version,
 * and the path ends in .tar.gz so go-getter unpacks it. With S3 it is a presigned URL instead.
 */
export async function archiveUrlFor(deps: Deps, module: ModuleWithOrg, version: Pick<VersionRow, 'id' | 'version' | 'blob_key'>): Promise<string> {
  const filename = `${module.name}-${module.provider}-${version.version}.tar.gz`;
  if (deps.blobs.driver === 's3' && !deps.config.s3.proxyDownloads && version.blob_key) {
    const direct = await deps.blobs.directUrl(version.blob_key, { expiresInSeconds: deps.config.archiveUrlTtlSeconds, filename });
    if (direct) return direct;
  }
  const expires = Math.floor(deps.clock.now().getTime() / 1000) + deps.config.archiveUrlTtlSeconds;
  const sig = deps.secrets.sign(PURPOSE, `${version.id}:${expires}`);
  // Relative with a leading "/": Terraform resolves it against the download URL it called.
  return `/archives/${version.id}/${expires}.${sig}/${encodeURIComponent(filename)}`;
}

/** Parses a single "bytes=" range; null means serve the whole body; 'unsatisfiable' means 416. */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // multi-range or malformed: RFC 9110 allows ignoring
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

export function archiveRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  async function serve(c: Context<AppEnv>, head: boolean): Promise<Response> {
    const { versionId, capability } = c.req.param() as { versionId: string; capability: string };
    // One answer for unknown, expired and tampered: the caller learns nothing about which.
    const refuse = () => notFound('this archive URL is invalid or has expired; ask the registry for a new one');
    const dot = capability.indexOf('.');
    const expires = Number(capability.slice(0, dot));
    const sig = capability.slice(dot + 1);
    if (dot < 1 || !Number.isSafeInteger(expires) || !deps.secrets.verify(PURPOSE, `${versionId}:${expires}`, sig)) throw refuse();
    if (expires * 1000 <= deps.clock.now().getTime()) throw refuse();
    const version = await deps.db
      .selectFrom('registry_module_versions')
      .select(['blob_key', 'status'])
      .where('id', '=', versionId)
      .executeTakeFirst();
    if (!version || version.status !== 'ok' || !version.blob_key) throw refuse();
    const stat = await deps.blobs.stat(version.blob_key);
    if (!stat) throw refuse();

    const headers: Record<string, string> = {
      'Content-Type': 'application/gzip',
      'Accept-Ranges': 'bytes',
      'Cache-Control': 'private, no-store',
    };
    const range = parseRange(c.req.header('range'), stat.size);
    if (range === 'unsatisfiable') {
      return c.body(null, 416, { ...headers, 'Content-Range': `bytes */${stat.size}` });
    }
    const status = range ? 206 : 200;
    const length = range ? range.end! - range.start + 1 : stat.size;
    headers['Content-Length'] = String(length);
    if (range) headers['Content-Range'] = `bytes ${range.start}-${range.end}/${stat.size}`;
    if (head) return c.body(null, status, headers);
    let stream: Readable;
    try {
      stream = await deps.blobs.get(version.blob_key, range ?? undefined);
    } catch (err) {
      if (err instanceof BlobNotFoundError) throw refuse();
      throw err;
    }
    return c.body(Readable.toWeb(stream) as ReadableStream, status, headers);
  }

  // Hono answers HEAD through the GET route; serve() then opens no stream.
  app.get('/archives/:versionId/:capability/:file', (c) => serve(c, c.req.method === 'HEAD'));
  return app;
}
