import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * The sealed-blob format (version 1), a chunked AES-256-GCM stream in the manner of STREAM:
 *
 *   header  (40 bytes): "TRSEALD" 0x01 | data key id, ASCII, NUL-padded to 24 | nonce prefix (8 random)
 *   chunks: ciphertext of up to 64 KiB plaintext, then its 16-byte tag; at least one (the final)
 *
 * Chunk i is sealed with nonce = prefix ‖ uint32be(i) and AAD = header ‖ uint32be(i) ‖ final flag,
 * so altering, reordering, dropping (truncation) or appending chunks fails authentication, and a
 * header cannot be moved onto another blob's chunks. Each chunk is authenticated before any of
 * its plaintext is emitted. Fixed sizes make the plaintext length and any byte's chunk computable
 * from the stored length alone (for stat and ranges).
 */
export const MAGIC = Buffer.from('TRSEALD\x01', 'latin1');
export const HEADER_BYTES = 40;
export const CHUNK_BYTES = 64 * 1024;
export const TAG_BYTES = 16;
export const FRAME_BYTES = CHUNK_BYTES + TAG_BYTES;
const ID_BYTES = 24;

/** The stored bytes cannot be opened: altered, truncated, not sealed, or sealed with a key we lack. */
export class SealedBlobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedBlobError';
  }
}

export interface SealedHeader {
  raw: Buffer;
  dataKeyId: string;
  prefix: Buffer;
}

export function buildHeader(dataKeyId: string): SealedHeader {
  if (dataKeyId.length > ID_BYTES || !/^[\x21-\x7e]+$/.test(dataKeyId)) throw new Error(`bad data key id ${dataKeyId}`);
  const prefix = randomBytes(8);
  const raw = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(raw, 0);
  raw.write(dataKeyId, MAGIC.length, 'latin1');
  prefix.copy(raw, MAGIC.length + ID_BYTES);
  return { raw, dataKeyId, prefix };
}

export function isSealed(head: Buffer): boolean {
  return head.length >= MAGIC.length && head.subarray(0, MAGIC.length).equals(MAGIC);
}

export function parseHeader(raw: Buffer): SealedHeader {
  if (raw.length < HEADER_BYTES || !isSealed(raw)) throw new SealedBlobError('the stored blob does not start with a sealed-blob header');
  const idField = raw.subarray(MAGIC.length, MAGIC.length + ID_BYTES);
  const end = idField.indexOf(0);
  const dataKeyId = idField.subarray(0, end < 0 ? ID_BYTES : end).toString('latin1');
  return { raw: Buffer.from(raw.subarray(0, HEADER_BYTES)), dataKeyId, prefix: Buffer.from(raw.subarray(MAGIC.length + ID_BYTES, HEADER_BYTES)) };
}

/** Chunks a sealed blob of sealedSize bytes holds (at least one). */
export function chunkCount(sealedSize: number): number {
  return Math.max(1, Math.ceil((sealedSize - HEADER_BYTES) / FRAME_BYTES));
}

/** The plaintext length of a sealed blob of sealedSize stored bytes. */
export function plaintextSize(sealedSize: number): number {
  if (sealedSize < HEADER_BYTES + TAG_BYTES) throw new SealedBlobError(`the stored blob is truncated (${sealedSize} bytes, less than a header and one chunk)`);
  return sealedSize - HEADER_BYTES - chunkCount(sealedSize) * TAG_BYTES;
}

function nonce(prefix: Buffer, index: number): Buffer {
  const n = Buffer.alloc(12);
  prefix.copy(n, 0);
  n.writeUInt32BE(index, 8);
  return n;
}

function aad(header: Buffer, index: number, final: boolean): Buffer {
  const tail = Buffer.alloc(5);
  tail.writeUInt32BE(index, 0);
  tail[4] = final ? 1 : 0;
  return Buffer.concat([header, tail]);
}

/** Plaintext in, sealed blob out; memory holds at most about two chunks. */
export class SealingStream extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private index = 0;
  private started = false;

  constructor(
    private readonly key: Buffer,
    private readonly header: SealedHeader,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.start();
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    // A chunk is sealed as non-final only once more bytes follow it.
    if (this.pendingBytes > CHUNK_BYTES) {
      let all = Buffer.concat(this.pending);
      while (all.length > CHUNK_BYTES) {
        this.push(this.seal(all.subarray(0, CHUNK_BYTES), false));
        all = all.subarray(CHUNK_BYTES);
      }
      this.pending = [all];
      this.pendingBytes = all.length;
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.start();
    this.push(this.seal(Buffer.concat(this.pending), true));
    this.pending = [];
    callback();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.push(this.header.raw);
  }

  private seal(plain: Buffer, final: boolean): Buffer {
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce(this.header.prefix, this.index));
    cipher.setAAD(aad(this.header.raw, this.index, final));
    this.index++;
    return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  }
}

export interface OpeningOptions {
  /** The data key for a data key id (throws SealedBlobError if there is none). */
  keyFor: (dataKeyId: string) => Buffer;
  /** For a ranged read: the header, read separately, and the chunk the stream starts at. */
  header?: SealedHeader;
  firstIndex?: number;
  /** For a ranged read: the index of the blob's final chunk (the stream may end before it). */
  finalIndex?: number;
}

/** Sealed blob (or a run of its chunks) in, plaintext out; each chunk verified before it is pushed. */
export class OpeningStream extends Transform {
  private header: SealedHeader | null;
  private key: Buffer | null = null;
  private buf: Buffer = Buffer.alloc(0);
  private index: number;
  private frames = 0;

  constructor(private readonly opts: OpeningOptions) {
    super();
    this.header = opts.header ?? null;
    this.index = opts.firstIndex ?? 0;
    if (this.header) this.key = opts.keyFor(this.header.dataKeyId);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    try {
      this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      if (!this.header) {
        if (this.buf.length < HEADER_BYTES) return callback();
        this.header = parseHeader(this.buf);
        this.key = this.opts.keyFor(this.header.dataKeyId);
        this.buf = this.buf.subarray(HEADER_BYTES);
      }
      // Hold a whole frame back until more follows: only then is it known not to be the last.
      while (this.buf.length > FRAME_BYTES) {
        this.push(this.open(this.buf.subarray(0, FRAME_BYTES), this.opts.finalIndex === this.index));
        this.buf = this.buf.subarray(FRAME_BYTES);
      }
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      if (!this.header) throw new SealedBlobError('the stored blob is truncated inside its header');
      if (this.buf.length > 0 || this.frames === 0) {
        const final = this.opts.finalIndex === undefined || this.opts.finalIndex === this.index;
        this.push(this.open(this.buf, final));
      }
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  private open(frame: Buffer, final: boolean): Buffer {
    if (frame.length < TAG_BYTES) throw new SealedBlobError(`the stored blob is truncated in chunk ${this.index}`);
    const decipher = createDecipheriv('aes-256-gcm', this.key!, nonce(this.header!.prefix, this.index));
    decipher.setAAD(aad(this.header!.raw, this.index, final));
    decipher.setAuthTag(frame.subarray(frame.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(frame.subarray(0, frame.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SealedBlobError(`chunk ${this.index} of the stored blob failed authentication: it was altered, truncated or extended`);
    }
    this.index++;
    this.frames++;
    return plain;
  }
}
