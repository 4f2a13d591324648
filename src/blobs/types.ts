import type { Readable } from 'node:stream';

/**
 * The one place bytes live: module archives, state files, configuration versions, plan JSON.
 * Keys are relative slash-separated paths ("modules/mod-abc/1.0.0.tar.gz"); never absolute,
 * never containing "." or ".." segments (drivers reject them).
 */
export interface BlobStore {
  readonly driver: 'fs' | 's3';

  /**
   * Streams body into key. The object becomes visible only once complete: a failed or aborted
   * put leaves nothing under key. If maxBytes is given and the stream exceeds it, the put fails
   * with BlobTooLargeError and nothing is stored. Resolves with the size and sha256 (hex).
   */
  put(key: string, body: Readable, opts?: PutOptions): Promise<PutResult>;

  /** Streams the object, or the inclusive byte range. Throws BlobNotFoundError if absent. */
  get(key: string, range?: ByteRange): Promise<Readable>;

  /** Size of the object, or null if absent. */
  stat(key: string): Promise<BlobStat | null>;

  /** Removes the object; removing an absent key is not an error. */
  delete(key: string): Promise<void>;

  /** Every key under prefix, with size and modification time (for orphan sweeps). */
  list(prefix: string): AsyncIterable<BlobListing>;

  /**
   * A URL a client without credentials can GET the object from until expiry, when the driver
   * has one (S3 presigned URLs); null for drivers without (the fs driver: Terrace serves it).
   */
  directUrl(key: string, opts: DirectUrlOptions): Promise<string | null>;

  /** Throws if the store cannot currently be written (used by /readyz). */
  checkWritable(): Promise<void>;
}

export interface PutOptions {
  contentType?: string;
  maxBytes?: number;
}

export interface PutResult {
  size: number;
  sha256: string;
}

export interface ByteRange {
  start: number;
  /** Inclusive; omitted means to the end. */
  end?: number;
}

export interface BlobStat {
  size: number;
}

export interface BlobListing {
  key: string;
  size: number;
  lastModified: Date;
}

export interface DirectUrlOptions {
  expiresInSeconds: number;
  /** Suggested file name for Content-Disposition. */
  filename?: string;
}

export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`blob not found: ${key}`);
  }
}

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob exceeds the limit of ${maxBytes} bytes`);
  }
}

export class InvalidBlobKeyError extends Error {
  constructor(readonly key: string) {
    super(`invalid blob key: ${JSON.stringify(key)}`);
  }
}
