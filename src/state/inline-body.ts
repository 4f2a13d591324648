import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import parser from 'stream-json/parser.js';
import type { Token } from 'stream-json/parser.js';
import { BlobTooLargeError } from '../blobs/types.js';
import type { Deps } from '../deps.js';
import { ApiError, badRequest, payloadTooLarge, quoteValue, unprocessable } from '../http/errors.js';

/** The attributes that carry whole documents (base64): streamed to the blob store, never held. */
export const STREAMED_ATTRIBUTES = ['state', 'json-state', 'json-state-outputs'] as const;
export type StreamedAttribute = (typeof STREAMED_ATTRIBUTES)[number];

export interface StreamedDocument {
  key: string;
  /** Decoded size and MD5 (hex), computed on the way in. */
  size: number;
  md5: string;
}

export interface InlineStateBody {
  /** The other attributes as sent (strings cut at MAX_SCALAR_CHARS); streamed ones as "" when sent as strings. */
  attributes: Record<string, unknown>;
  /** Documents decoded into the blob store, by attribute. The caller owns (and must remove) them. */
  documents: Partial<Record<StreamedAttribute, StreamedDocument>>;
}

/** Longest string kept of an attribute that is not a document (md5, lineage…): enough to refuse it. */
const MAX_SCALAR_CHARS = 4096;
/** The JSON:API envelope is four levels deep; anything much deeper is not a state-version body. */
const MAX_ENVELOPE_DEPTH = 64;
const ATTR = (k: string) => `/data/attributes/${k}`;

/**
 * Decodes base64 as it arrives in pieces of any length: whitespace is ignored (as before), the
 * alphabet is the standard one, padding only at the end, and the whole is a multiple of 4.
 */
class Base64Decoder {
  private carry = '';
  private padded = false;

  constructor(private readonly attr: string) {}

  private refuse(): never {
    throw unprocessable(`${this.attr} must be base64 (standard alphabet, padded)`, ATTR(this.attr));
  }

  push(piece: string): Buffer {
    const clean = piece.replace(/\s+/g, '');
    if (clean === '') return Buffer.alloc(0);
    if (this.padded && !/^=*$/.test(clean)) this.refuse();
    if (!/^[A-Za-z0-9+/]*=*$/.test(clean)) this.refuse();
    if (clean.includes('=')) this.padded = true;
    const all = this.carry + clean;
    const whole = all.length - (all.length % 4);
    this.carry = all.slice(whole);
    if (this.carry.length > 2 && this.carry.includes('=')) this.refuse();
    return Buffer.from(all.slice(0, whole), 'base64');
  }

  end(): void {
    if (this.carry !== '') this.refuse();
  }
}

/** One document attribute being decoded into its blob. */
class DocumentSink {
  private readonly decoder: Base64Decoder;
  private readonly pass = new PassThrough();
  private readonly hash = createHash('md5');
  private readonly put: Promise<unknown>;
  size = 0;

  constructor(
    deps: Deps,
    readonly attr: StreamedAttribute,
    readonly key: string,
    private readonly max: number,
  ) {
    this.decoder = new Base64Decoder(attr);
    this.put = deps.blobs.put(key, this.pass, { maxBytes: max, contentType: 'application/json' });
    // Observed here so a failure before end() (or an abort) is never unhandled.
    this.put.catch(() => undefined);
    this.pass.on('error', () => undefined);
  }

  private tooLarge(): ApiError {
    return payloadTooLarge(`${this.attr} is over the limit of ${this.max} bytes decoded (TERRACE_MAX_STATE_BYTES)`);
  }

  async write(piece: string): Promise<void> {
    const bytes = this.decoder.push(piece);
    if (bytes.length === 0) return;
    this.size += bytes.length;
    if (this.size > this.max) throw this.tooLarge();
    this.hash.update(bytes);
    if (!this.pass.write(bytes)) await once(this.pass, 'drain');
  }

  async end(): Promise<StreamedDocument> {
    this.decoder.end();
    this.pass.end();
    try {
      await this.put;
    } catch (err) {
      if (err instanceof BlobTooLargeError) throw this.tooLarge();
      throw err;
    }
    return { key: this.key, size: this.size, md5: this.hash.digest('hex') };
  }

  /** Stops the write; resolves once the store has let go of it (the caller then deletes the key). */
  async abort(): Promise<void> {
    this.pass.destroy(new Error('the request body was refused'));
    await this.put.catch(() => undefined);
  }
}

type Frame = { kind: 'object'; key: string | null } | { kind: 'array' };

/**
 * Reads POST /workspaces/:id/state-versions without holding it: the JSON:API envelope and the
 * small attributes are parsed as they stream by, and the base64 documents (state, json-state,
 * json-state-outputs) are decoded straight into their blobs, MD5 and size computed on the way.
 * Memory per request stays a few buffers, whatever the body. Refuses what readResource refuses,
 * with the same messages; on any refusal the blobs written so far are removed.
 */
export async function readInlineStateBody(
  deps: Deps,
  body: Readable,
  contentType: string | undefined,
  keys: Record<StreamedAttribute, string>,
): Promise<InlineStateBody> {
  const ct = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (ct !== '' && ct !== 'application/vnd.api+json' && ct !== 'application/json') {
    body.resume();
    throw new ApiError(415, 'unsupported media type', `Content-Type must be application/vnd.api+json or application/json, got ${quoteValue(ct)}`);
  }
  const max = deps.config.maxStateBytes;
  const result: InlineStateBody = { attributes: {}, documents: {} };
  const stack: Frame[] = [];
  let sawRoot = false;
  let sawData = false;
  let dataType: unknown;
  let attributesShape: 'object' | 'other' | undefined;
  let relationshipsShape: 'object' | 'other' | undefined;
  // The string being read: into a document sink, or collected (capped) for a small attribute.
  let sink: DocumentSink | null = null;
  let collecting: { set: (v: string) => void; text: string } | null = null;

  const p = parser.asStream({ packKeys: true, packNumbers: true, packStrings: false, streamKeys: false, streamNumbers: false, streamStrings: true });
  body.on('error', (err) => p.destroy(err));
  // Whether anything but whitespace arrived: an empty body is "required", not "not JSON".
  let blank = true;
  const watchBlank = (chunk: Buffer) => {
    if (/\S/.test(chunk.toString('latin1'))) {
      blank = false;
      body.off('data', watchBlank);
    }
  };
  body.on('data', watchBlank);
  body.pipe(p);

  const where = (): string[] => stack.map((f) => (f.kind === 'object' ? (f.key ?? '') : '[]'));
  const scalarOf = (t: Token): unknown =>
    t.name === 'numberValue' ? Number(t.value) : t.name === 'nullValue' ? null : t.name === 'trueValue' ? true : t.name === 'falseValue' ? false : undefined;

  try {
    for await (const t of p as AsyncIterable<Token>) {
      if (sink) {
        if (t.name === 'stringChunk') await sink.write(t.value as string);
        else if (t.name === 'endString') {
          result.documents[sink.attr] = await sink.end();
          sink = null;
        }
        continue;
      }
      if (collecting) {
        if (t.name === 'stringChunk') {
          if (collecting.text.length < MAX_SCALAR_CHARS) collecting.text += (t.value as string).slice(0, MAX_SCALAR_CHARS - collecting.text.length);
        } else if (t.name === 'endString') {
          collecting.set(collecting.text);
          collecting = null;
        }
        continue;
      }
      if (t.name === 'keyValue') {
        const top = stack[stack.length - 1];
        if (top?.kind === 'object') top.key = t.value as string;
        continue;
      }
      if (t.name === 'endObject' || t.name === 'endArray') {
        stack.pop();
        continue;
      }
      if (t.name !== 'startObject' && t.name !== 'startArray' && t.name !== 'startString' && scalarOf(t) === undefined) continue;

      // A value begins: where?
      const path = where();
      const container = t.name === 'startObject' ? 'object' : t.name === 'startArray' ? 'array' : null;
      if (path.length === 0) {
        sawRoot = true;
        if (container !== 'object') throw unprocessable('the request body must be a JSON object with a "data" member', '');
      } else if (path.length === 1 && path[0] === 'data') {
        sawData = true;
        if (container !== 'object') throw unprocessable('"data" must be an object', '/data');
      } else if (path.length === 2 && path[0] === 'data') {
        const key = path[1];
        if (key === 'type') {
          if (t.name === 'startString') collecting = { text: '', set: (v) => (dataType = v) };
          else dataType = container ? `(an ${container})` : scalarOf(t);
        } else if (key === 'attributes') attributesShape = container === 'object' || t.name === 'nullValue' ? 'object' : 'other';
        else if (key === 'relationships') relationshipsShape = container === 'object' || t.name === 'nullValue' ? 'object' : 'other';
      } else if (path.length === 3 && path[0] === 'data' && path[1] === 'attributes') {
        const key = path[2]!;
        const streamed = (STREAMED_ATTRIBUTES as readonly string[]).includes(key) ? (key as StreamedAttribute) : null;
        if (streamed && t.name === 'startString') {
          // A repeated member replaces the earlier one, as JSON.parse would.
          const earlier = result.documents[streamed];
          if (earlier) await deps.blobs.delete(earlier.key);
          delete result.documents[streamed];
          sink = new DocumentSink(deps, streamed, keys[streamed], max);
          result.attributes[key] = '';
        } else if (t.name === 'startString') {
          collecting = { text: '', set: (v) => (result.attributes[key] = v) };
        } else if (container) {
          // Not a valid value for any attribute; the schema says what it must be.
          result.attributes[key] = container === 'object' ? {} : [];
        } else {
          result.attributes[key] = scalarOf(t);
        }
      }
      if (t.name === 'startString') {
        // A string nobody asked for (deeper, or an ignored member): skip its chunks.
        if (!sink && !collecting) collecting = { text: '', set: () => undefined };
      } else if (container) {
        if (stack.length >= MAX_ENVELOPE_DEPTH) throw unprocessable(`the request body nests deeper than ${MAX_ENVELOPE_DEPTH} levels`, '');
        stack.push(container === 'object' ? { kind: 'object', key: null } : { kind: 'array' });
      }
    }
    if (!sawRoot || blank) throw unprocessable('a JSON request body is required', '');
    if (!sawData) throw unprocessable('"data" must be an object', '/data');
    if (dataType !== 'state-versions') throw unprocessable(`data.type must be "state-versions", got ${quoteValue(dataType ?? null)}`, '/data/type');
    if (attributesShape === 'other') throw unprocessable('"data.attributes" must be an object', '/data/attributes');
    if (relationshipsShape === 'other') throw unprocessable('"data.relationships" must be an object', '/data/relationships');
    return result;
  } catch (err) {
    await sink?.abort();
    body.unpipe(p);
    body.resume();
    await removeDocuments(deps, result);
    if (sink) await deps.blobs.delete(sink.key).catch(() => undefined);
    if (err instanceof ApiError) throw err;
    // The parser's complaints: the body is not JSON (the answers readJson gives).
    if (err instanceof Error && /^Parser /.test(err.message)) {
      if (blank) throw unprocessable('a JSON request body is required', '');
      throw badRequest(`the request body is not valid JSON: ${err.message}`);
    }
    throw err;
  }
}

/** Removes what readInlineStateBody wrote (refused afterwards, or failed half-way). */
export async function removeDocuments(deps: Deps, body: Pick<InlineStateBody, 'documents'>): Promise<void> {
  for (const doc of Object.values(body.documents)) {
    if (doc) await deps.blobs.delete(doc.key).catch((err) => deps.logger.warn({ err, key: doc.key }, 'could not remove a state blob'));
  }
}
