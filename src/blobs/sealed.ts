import { randomBytes } from 'node:crypto';
import { pipeline, Readable, Transform, type TransformCallback } from 'node:stream';
import { newId } from '../ids.js';
import type { Secrets } from '../secrets.js';
import { HashingMeter } from './keys.js';
import { isSensitiveBlobKey } from './layout.js';
import {
  buildHeader,
  CHUNK_BYTES,
  chunkCount,
  FRAME_BYTES,
  HEADER_BYTES,
  isSealed,
  MAGIC,
  OpeningStream,
  parseHeader,
  plaintextSize,
  SealedBlobError,
  SealingStream,
} from './sealed-format.js';
import { assertValidRange } from './keys.js';
import type { BlobListing, BlobStat, BlobStore, ByteRange, DirectUrlOptions, PutOptions, PutResult } from './types.js';

export { SealedBlobError } from './sealed-format.js';

export interface DataKeyRow {
  id: string;
  blob_key: string;
  key_id: string;
  wrapped: string;
}

/** Where wrapped data keys live: the database (src/encryption/store.ts), never the blob store. */
export interface DataKeyStore {
  insert(row: DataKeyRow): Promise<void>;
  forBlob(blobKey: string): Promise<DataKeyRow[]>;
  /** Removes the blob's data keys, all or all but keepId. */
  deleteForBlob(blobKey: string, keepId?: string): Promise<void>;
  /** Removes one data key (of a put that failed: the blob it was for was never stored). */
  remove(id: string): Promise<void>;
}

/**
 * The one seam for encryption at rest: a BlobStore that seals every sensitive key (layout.ts
 * says which) with its own random data key, wrapped by the current server key and kept in the
 * database, and opens them again transparently: callers put and get plaintext, see plaintext
 * sizes and hashes. Other keys (module archives) pass straight through, presigned URLs and all.
 * A sensitive key with no data key on record is a blob from before encryption: served as stored
 * until the upkeep job (src/encryption/upkeep.ts) seals it.
 */
export class SealedBlobStore implements BlobStore {
  constructor(
    readonly inner: BlobStore,
    private readonly secrets: Secrets,
    private readonly dataKeys: DataKeyStore,
    private readonly sensitive: (key: string) => boolean = isSensitiveBlobKey,
  ) {}

  get driver() {
    return this.inner.driver;
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<PutResult> {
    if (!this.sensitive(key)) return this.inner.put(key, body, opts);
    const id = newId('dk');
    const dataKey = randomBytes(32);
    const { keyId, wrapped } = this.secrets.wrapDataKey(id, dataKey);
    // The row goes first: a blob whose key has a data key on record is never served as stored.
    await this.dataKeys.insert({ id, blob_key: key, key_id: keyId, wrapped });
    const meter = new HashingMeter(opts.maxBytes);
    let streamError: Error | undefined;
    const sealed = pipeline(body, meter, new SealingStream(dataKey, buildHeader(id)), (err) => {
      if (err) streamError ??= err;
    });
    try {
      await this.inner.put(key, sealed, { contentType: 'application/octet-stream' });
    } catch (err) {
      // Only this put's key: an object already under the key (an overwrite that failed) stays readable.
      await this.dataKeys.remove(id).catch(() => undefined);
      throw streamError ?? err;
    }
    // An overwritten blob's older data keys open nothing any more.
    await this.dataKeys.deleteForBlob(key, id);
    return { size: meter.bytes, sha256: meter.sha256() };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    if (!this.sensitive(key)) return this.inner.get(key, range);
    const rows = await this.dataKeys.forBlob(key);
    if (rows.length === 0) {
      await this.refuseSealedWithoutKey(key);
      return this.inner.get(key, range);
    }
    assertValidRange(range);
    const keyFor = (dataKeyId: string) => {
      const row = rows.find((r) => r.id === dataKeyId);
      if (!row) throw new SealedBlobError(`the stored blob names data key ${JSON.stringify(dataKeyId.slice(0, 24))}, which is not on record for it`);
      return this.secrets.unwrapDataKey(row.id, row.key_id, row.wrapped);
    };
    if (!range) return verifiedFirst(pipeline(await this.inner.get(key), new OpeningStream({ keyFor }), () => undefined));
    return this.getRange(key, range, keyFor);
  }

  /**
   * A blob from before encryption is served as stored; one that is sealed but has lost its data
   * key (an overwrite raced another) would be ciphertext served as content: refuse it. Plaintext
   * state is JSON and a configuration is gzip, so neither can start with the sealed header.
   */
  private async refuseSealedWithoutKey(key: string): Promise<void> {
    const stat = await this.inner.stat(key);
    if (!stat || stat.size < MAGIC.length) return;
    if (isSealed(await readAll(await this.inner.get(key, { start: 0, end: MAGIC.length - 1 })))) {
      throw new SealedBlobError('the stored blob is sealed but no data key is on record for it');
    }
  }

  /** Opens only the chunks that hold the range (the format's fixed sizes say which). */
  private async getRange(key: string, range: ByteRange, keyFor: (id: string) => Buffer): Promise<Readable> {
    const stat = await this.inner.stat(key);
    if (!stat) return this.inner.get(key, range); // throws BlobNotFoundError as the driver does
    const size = plaintextSize(stat.size);
    const end = Math.min(range.end ?? size - 1, size - 1);
    if (range.start > end) return Readable.from([]);
    const header = parseHeader(await readAll(await this.inner.get(key, { start: 0, end: HEADER_BYTES - 1 })));
    const first = Math.floor(range.start / CHUNK_BYTES);
    const last = Math.floor(end / CHUNK_BYTES);
    const raw = await this.inner.get(key, { start: HEADER_BYTES + first * FRAME_BYTES, end: Math.min(stat.size, HEADER_BYTES + (last + 1) * FRAME_BYTES) - 1 });
    const opening = new OpeningStream({ keyFor, header, firstIndex: first, finalIndex: chunkCount(stat.size) - 1 });
    const slice = new Slice(range.start - first * CHUNK_BYTES, end - range.start + 1);
    return verifiedFirst(pipeline(raw, opening, slice, () => undefined));
  }

  async stat(key: string): Promise<BlobStat | null> {
    const stat = await this.inner.stat(key);
    if (!stat || !this.sensitive(key)) return stat;
    const rows = await this.dataKeys.forBlob(key);
    return rows.length === 0 ? stat : { size: plaintextSize(stat.size) };
  }

  async delete(key: string): Promise<void> {
    await this.inner.delete(key);
    if (this.sensitive(key)) await this.dataKeys.deleteForBlob(key);
  }

  /** As stat does, a sealed blob is listed with its plaintext size. */
  async *list(prefix: string): AsyncIterable<BlobListing> {
    for await (const item of this.inner.list(prefix)) {
      const sealed = this.sensitive(item.key) && (await this.dataKeys.forBlob(item.key)).length > 0;
      yield sealed ? { ...item, size: plaintextSize(item.size) } : item;
    }
  }

  /** Never for a sensitive key: the store holds only ciphertext, so Terrace serves it. */
  async directUrl(key: string, opts: DirectUrlOptions): Promise<string | null> {
    return this.sensitive(key) ? null : this.inner.directUrl(key, opts);
  }

  checkWritable(): Promise<void> {
    return this.inner.checkWritable();
  }
}

/**
 * Waits for the first chunk to be authenticated before handing the stream over, so a blob that is
 * wholly bad (header, key, first chunk) fails before a response has sent its headers.
 */
async function verifiedFirst(stream: Readable): Promise<Readable> {
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let first: IteratorResult<Buffer>;
  try {
    first = await it.next();
  } catch (err) {
    stream.destroy();
    throw err;
  }
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      if (first.done) return;
      yield first.value;
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      stream.destroy();
    }
  }
  return Readable.from(rest(), { objectMode: false });
}

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** Passes on `length` bytes after skipping `skip`. */
class Slice extends Transform {
  constructor(
    private skip: number,
    private left: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    let c = chunk;
    if (this.skip > 0) {
      const n = Math.min(this.skip, c.length);
      this.skip -= n;
      c = c.subarray(n);
    }
    if (this.left > 0 && c.length > 0) {
      const out = c.subarray(0, this.left);
      this.left -= out.length;
      this.push(out);
    }
    callback();
  }
}
