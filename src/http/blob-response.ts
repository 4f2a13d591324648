import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { SealedBlobError } from '../blobs/sealed-format.js';
import { BlobNotFoundError, type ByteRange } from '../blobs/types.js';
import type { Deps } from '../deps.js';
import { ApiError } from './errors.js';

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

export interface SendBlobOptions {
  contentType: string;
  /** Answer Range requests with 206 (and advertise Accept-Ranges). */
  ranges: boolean;
  /** The error for a blob that is gone: capability URLs answer the same for every refusal. */
  refuse: () => ApiError;
}

/**
 * Streams a blob as the response with an exact Content-Length and no Content-Encoding. HEAD
 * (which Hono routes through GET) gets the headers without a stream being opened.
 */
export async function sendBlob(c: Context, deps: Deps, key: string, opts: SendBlobOptions): Promise<Response> {
  try {
    return await streamBlob(c, deps, key, opts);
  } catch (err) {
    if (!(err instanceof SealedBlobError)) throw err;
    throw unreadable(c, deps, key, err);
  }
}

/**
 * A stored blob that fails its integrity check is a server-side fault, never the caller's: 500,
 * logged with the blob key for an operator, and not one byte of it served. (Past the first chunk,
 * headers are already out: the failing chunk is held back and the response aborted instead.)
 */
function unreadable(c: Context, deps: Deps, key: string, err: SealedBlobError): ApiError {
  const reqId = c.get('requestId') as string | undefined;
  deps.logger.error({ reqId, blobKey: key, err: err.message }, 'a stored blob failed its integrity check and was not served');
  return new ApiError(
    500,
    'stored data unreadable',
    `the stored file failed its integrity check (it was altered, truncated or sealed with a key this server lacks) and was not served; an operator must restore it${reqId ? `: quote request id ${reqId}` : ''}`,
  );
}

async function streamBlob(c: Context, deps: Deps, key: string, opts: SendBlobOptions): Promise<Response> {
  const stat = await deps.blobs.stat(key);
  if (!stat) throw opts.refuse();
  const headers: Record<string, string> = { 'Content-Type': opts.contentType, 'Cache-Control': 'private, no-store' };
  let range: ByteRange | null = null;
  if (opts.ranges) {
    headers['Accept-Ranges'] = 'bytes';
    const parsed = parseRange(c.req.header('range'), stat.size);
    if (parsed === 'unsatisfiable') {
      // An error like any other 4xx (in the surface's format, saying what to change), plus the
      // Content-Range that RFC 9110 gives a 416.
      throw new ApiError(
        416,
        'range not satisfiable',
        stat.size === 0
          ? 'the file is empty: request it without a Range header'
          : `the requested range lies outside the file's ${stat.size} bytes: ask for bytes within 0-${stat.size - 1}, or omit the Range header`,
        undefined,
        { 'Accept-Ranges': 'bytes', 'Content-Range': `bytes */${stat.size}` },
      );
    }
    range = parsed;
  }
  const status = range ? 206 : 200;
  headers['Content-Length'] = String(range ? range.end! - range.start + 1 : stat.size);
  if (range) headers['Content-Range'] = `bytes ${range.start}-${range.end}/${stat.size}`;
  if (c.req.method === 'HEAD') return c.body(null, status, headers);
  let stream: Readable;
  try {
    stream = await deps.blobs.get(key, range ?? undefined);
  } catch (err) {
    if (err instanceof BlobNotFoundError) throw opts.refuse();
    throw err;
  }
  stream.on('error', (err) => {
    if (err instanceof SealedBlobError) unreadable(c, deps, key, err);
  });
  return c.body(Readable.toWeb(stream) as ReadableStream, status, headers);
}
