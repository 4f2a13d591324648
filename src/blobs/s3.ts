import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { HashingMeter, assertValidKey, assertValidPrefix, assertValidRange } from './keys.js';
import {
  BlobNotFoundError,
  type BlobListing,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type DirectUrlOptions,
  type PutOptions,
  type PutResult,
} from './types.js';

export interface S3BlobStoreOptions {
  bucket: string;
  region: string;
  endpoint?: string | undefined;
  /** Key prefix inside the bucket, so several deployments can share one bucket. May be ''. */
  prefix: string;
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  forcePathStyle: boolean;
  /**
   * Only send/verify checksums when the operation requires them. Needed for S3-compatible
   * servers (s3rver, older MinIO) that do not understand the aws-chunked trailer encoding the
   * SDK otherwise uses for streamed bodies: they store the chunk framing as object bytes.
   */
  checksumWhenRequired: boolean;
  /** Multipart part size; lib-storage holds about queueSize × this in memory per put. */
  partSizeBytes?: number | undefined;
}

const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
/** Parts in flight per put: bounds memory at ~QUEUE_SIZE × partSize while keeping some overlap. */
const QUEUE_SIZE = 2;
/** Probe objects from checkWritable; list() hides them from orphan sweeps. */
const PROBE_DIR = '.probe/';

export class S3BlobStore implements BlobStore {
  readonly driver = 's3' as const;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly base: string;
  private readonly partSize: number;

  constructor(opts: S3BlobStoreOptions) {
    const config: S3ClientConfig = {
      region: opts.region,
      forcePathStyle: opts.forcePathStyle,
    };
    if (opts.endpoint) config.endpoint = opts.endpoint;
    // Without explicit keys the SDK's default chain applies (env, profile, instance role).
    if (opts.accessKeyId && opts.secretAccessKey) {
      config.credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
    }
    if (opts.checksumWhenRequired) {
      config.requestChecksumCalculation = 'WHEN_REQUIRED';
      config.responseChecksumValidation = 'WHEN_REQUIRED';
    }
    this.client = new S3Client(config);
    this.bucket = opts.bucket;
    this.base = opts.prefix === '' || opts.prefix.endsWith('/') ? opts.prefix : `${opts.prefix}/`;
    this.partSize = opts.partSizeBytes ?? DEFAULT_PART_SIZE;
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<PutResult> {
    const Key = this.objectKey(key);
    const meter = new HashingMeter(opts.maxBytes);
    // The root cause (source error, BlobTooLargeError) as the stream saw it: lib-storage may
    // report a different error, e.g. when its AbortMultipartUpload call itself fails.
    let streamError: unknown;
    const piped = pipeline(body, meter).catch((err: unknown) => {
      streamError = err;
    });
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key, Body: meter, ContentType: opts.contentType },
      partSize: this.partSize,
      queueSize: QUEUE_SIZE,
      // Default, stated because it is what keeps a failed put invisible: lib-storage aborts the
      // multipart upload itself, and an incomplete multipart upload is never readable.
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (err) {
      meter.destroy();
      await piped;
      if (streamError !== undefined && !isPrematureClose(streamError)) throw streamError;
      throw err;
    }
    await piped;
    if (streamError !== undefined) {
      // Cannot happen once the meter has ended cleanly, but never leave an object we reject.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
      throw streamError;
    }
    return { size: meter.bytes, sha256: meter.sha256() };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const Key = this.objectKey(key);
    assertValidRange(range);
    // "bytes=0-" is the whole object, but S3 answers it with 416 for an empty object.
    const whole = !range || (range.start === 0 && range.end === undefined);
    const Range = whole ? undefined : `bytes=${range.start}-${range.end ?? ''}`;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key, Range }));
      if (!(res.Body instanceof Readable)) throw new Error('S3 GetObject returned no Node stream');
      return res.Body;
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key);
      throw err;
    }
  }

  async stat(key: string): Promise<BlobStat | null> {
    const Key = this.objectKey(key);
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return { size: res.ContentLength ?? 0 };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.objectKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
  }

  async *list(prefix: string): AsyncIterable<BlobListing> {
    assertValidPrefix(prefix);
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.base + prefix, ContinuationToken }),
      );
      for (const obj of page.Contents ?? []) {
        if (obj.Key === undefined || !obj.Key.startsWith(this.base)) continue;
        const key = obj.Key.slice(this.base.length);
        if (key.startsWith(PROBE_DIR)) continue;
        yield { key, size: obj.Size ?? 0, lastModified: obj.LastModified ?? new Date(0) };
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async directUrl(key: string, opts: DirectUrlOptions): Promise<string | null> {
    const Key = this.objectKey(key);
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key,
      ResponseContentDisposition:
        opts.filename === undefined ? undefined : contentDisposition(opts.filename),
    });
    return getSignedUrl(this.client, command, { expiresIn: opts.expiresInSeconds });
  }

  async checkWritable(): Promise<void> {
    const Key = `${this.base}${PROBE_DIR}${randomUUID()}`;
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: 'probe' }));
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
  }

  /** Closes the client's pooled connections (shutdown, tests). */
  destroy(): void {
    this.client.destroy();
  }

  private objectKey(key: string): string {
    assertValidKey(key);
    return this.base + key;
  }
}

/**
 * attachment;filename="…" with quotes, backslashes and control characters replaced, plus the
 * RFC 6266 filename* form when the name is not plain ASCII. No spaces (the grammar needs none
 * around ";"): the value travels in a presigned query, and go-getter re-encodes that query
 * before fetching, turning a space into "+", which not every S3-compatible store reads back
 * as a space, so the signature would no longer match. Spaces in the name become "_".
 */
export function contentDisposition(filename: string): string {
  // eslint-disable-next-line no-control-regex
  const ascii = filename.replace(/[\u0000-\u001f\u007f"\\ ]/g, '_').replace(/[^\x20-\x7e]/g, '_');
  const header = `attachment;filename="${ascii}"`;
  if (ascii === filename) return header;
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${header};filename*=UTF-8''${encoded}`;
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  // A missing bucket is also a 404, but is a misconfiguration rather than an absent object.
  if (!e || e.name === 'NoSuchBucket') return false;
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

function isPrematureClose(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'ERR_STREAM_PREMATURE_CLOSE';
}
