import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../http/auth.js';
import { sendBlob } from '../http/blob-response.js';
import { notFound } from '../http/errors.js';
import { archiveBlob, type ModuleWithOrg, type VersionRow } from './store.js';

const PURPOSE = 'archive-url';

/**
 * The X-Terraform-Get value for a version. No credentials reach this URL (go-getter sends
 * none), so it is a capability: expiry and signature live in the path, bound to the version,
 * and the path ends in .tar.gz so go-getter unpacks it. With S3 it is a presigned URL instead.
 *
 * Both carry checksum=sha256:<hex> of the archive as stored at publish time, so go-getter
 * verifies the bytes before unpacking them. go-getter removes that parameter and re-encodes
 * the rest of the query before fetching: the Terrace signature is in the path (no query left),
 * and a presigned S3 query is signed over decoded values in canonical order, which survives
 * the re-encoding as long as no value holds a character Go escapes differently (see
 * contentDisposition). A version published before sha256 was stored gets no checksum.
 */
export async function archiveUrlFor(deps: Deps, module: ModuleWithOrg, version: Pick<VersionRow, 'id' | 'version' | 'blob_key' | 'sha256'>): Promise<string> {
  if (deps.blobs.driver === 's3' && !deps.config.s3.proxyDownloads && version.blob_key) {
    const direct = await deps.blobs.directUrl(version.blob_key, { expiresInSeconds: deps.config.archiveUrlTtlSeconds, filename: fileNameOf(module, version) });
    const checksum = checksumOf(version);
    if (direct) return checksum ? `${direct}${direct.includes('?') ? '&' : '?'}${checksum}` : direct;
  }
  return signedArchiveUrl(deps, module, version);
}

/** Whether archiveUrlFor answers with Terrace's own signed URL (no presigning, which is asynchronous). */
export const signsArchiveUrls = (deps: Deps): boolean => deps.blobs.driver !== 's3' || deps.config.s3.proxyDownloads;

type SignedVersion = Pick<VersionRow, 'id' | 'version' | 'sha256'>;

const checksumOf = (version: SignedVersion) => (version.sha256 ? `checksum=sha256:${version.sha256}` : '');
const fileNameOf = (module: ModuleWithOrg, version: SignedVersion) => `${module.name}-${module.provider}-${version.version}.tar.gz`;

/**
 * A signed URL's expiry is rounded down to a twentieth of TERRACE_ARCHIVE_URL_TTL (15 s of the
 * default 300 s), so it lives between 95% and 100% of the TTL, never longer, and a version's URL
 * is signed once per such step instead of once per download.
 */
const EXPIRY_STEPS_PER_TTL = 20;
const signedUrls = new WeakMap<SignedVersion, { module: ModuleWithOrg; expires: number; url: string }>();

/** Terrace's own signed archive URL (what archiveUrlFor gives unless S3 serves downloads). */
export function signedArchiveUrl(deps: Deps, module: ModuleWithOrg, version: SignedVersion): string {
  const ttl = deps.config.archiveUrlTtlSeconds;
  const step = Math.max(1, Math.floor(ttl / EXPIRY_STEPS_PER_TTL));
  const expires = Math.floor((deps.clock.now().getTime() / 1000 + ttl) / step) * step;
  // Rows from the registry caches are frozen and replaced on any change: their URL can be kept.
  const kept = signedUrls.get(version);
  if (kept && kept.expires === expires && kept.module === module) return kept.url;
  const capability = deps.secrets.capability(PURPOSE, version.id, new Date(expires * 1000));
  const checksum = checksumOf(version);
  // Relative with a leading "/": Terraform resolves it against the download URL it called.
  const url = `/archives/${version.id}/${capability}/${encodeURIComponent(fileNameOf(module, version))}${checksum ? `?${checksum}` : ''}`;
  if (Object.isFrozen(version)) signedUrls.set(version, { module, expires, url });
  return url;
}

export function archiveRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/archives/:versionId/:capability/:file', async (c) => {
    const { versionId, capability } = c.req.param();
    // One answer for unknown, expired and tampered: the caller learns nothing about which.
    const refuse = () => notFound('this archive URL is invalid or has expired; ask the registry for a new one');
    if (!deps.secrets.checkCapability(PURPOSE, versionId, capability, deps.clock.now())) throw refuse();
    const version = await archiveBlob(deps.db, versionId);
    if (!version || version.status !== 'ok' || !version.blob_key) throw refuse();
    return sendBlob(c, deps, version.blob_key, { contentType: 'application/gzip', ranges: true, refuse });
  });
  return app;
}
