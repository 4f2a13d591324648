import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { BlobTooLargeError, InvalidBlobKeyError, type ByteRange } from './types.js';

/** S3's own key limit; the fs driver shares it so keys stay portable between drivers. */
export const MAX_KEY_LENGTH = 1024;

/**
 * Rejects keys that could escape the store root (fs) or alias another key (".", "..", "//"
 * resolve to the same file on disk but are distinct S3 keys), so both drivers agree.
 */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new InvalidBlobKeyError(String(key));
  }
  if (key.startsWith('/') || key.includes('\\') || key.includes('\0')) {
    throw new InvalidBlobKeyError(key);
  }
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new InvalidBlobKeyError(key);
    }
  }
}

/**
 * list() prefixes are plain string prefixes (as in S3): they may be empty, end in "/" or stop
 * mid-segment ("modules/mod-"), but must not traverse or be absolute.
 */
export function assertValidPrefix(prefix: string): void {
  if (prefix === '') return;
  assertValidKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
}

/** Both drivers reject the same malformed ranges instead of S3 and fs disagreeing on them. */
export function assertValidRange(range: ByteRange | undefined): void {
  if (!range) return;
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || start < 0) {
    throw new RangeError(`invalid range start: ${start}`);
  }
  if (end !== undefined && (!Number.isSafeInteger(end) || end < start)) {
    throw new RangeError(`invalid range end: ${end}`);
  }
}

/**
 * Pass-through that hashes and counts what a put streams, failing the stream as soon as it
 * passes maxBytes so an oversized upload is cut off rather than read to the end.
 */
export class HashingMeter extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');

  constructor(private readonly maxBytes?: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.maxBytes !== undefined && this.bytes > this.maxBytes) {
      callback(new BlobTooLargeError(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  /** Only meaningful once the stream has finished. */
  sha256(): string {
    return this.hash.digest('hex');
  }
}
