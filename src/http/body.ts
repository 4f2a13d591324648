import type { IncomingMessage } from 'node:http';
import { Readable, Transform } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import type { Context } from 'hono';
import type { z } from 'zod';
import { assertMayReadBody } from './authorized.js';
import { ApiError, badRequest, quoteValue, unprocessable, unsupportedMediaType } from './errors.js';
import { ApiErrors } from './jsonapi.js';

const JSON_TYPES = ['application/vnd.api+json', 'application/json'];

/**
 * The body as text, for a handler that parses an optional or unusual body itself. Like every
 * reader here it refuses to run before the request is authorized (see authorized.ts).
 */
export async function readText(c: Context): Promise<string> {
  assertMayReadBody();
  return c.req.text();
}

/**
 * Reads a JSON body as application/vnd.api+json or application/json, on any method (go-tfe
 * sends bodies on DELETE). The size limit is enforced by the body-limit middleware in app.ts.
 */
export async function readJson(c: Context): Promise<unknown> {
  assertMayReadBody();
  const ct = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (ct !== '' && !JSON_TYPES.includes(ct)) {
    throw unsupportedMediaType(`Content-Type must be application/vnd.api+json or application/json, got ${quoteValue(ct)}`);
  }
  const text = await c.req.text();
  if (text.trim() === '') throw unprocessable('a JSON request body is required', '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw badRequest(`the request body is not valid JSON: ${(err as Error).message}`);
  }
  // In JSON text a NUL can only arrive escaped; most bodies are spared the walk.
  if (text.includes('\\u0000')) {
    const at = nulPointer(parsed);
    if (at !== null) throw unprocessable(`${at || 'the body'}: text must not contain a NUL character (\\u0000)`, at);
  }
  return parsed;
}

/**
 * The JSON pointer of the first string (member name or value) holding a NUL character, or null.
 * No text Terrace keeps may hold one: PostgreSQL cannot store it, so both stores refuse it alike.
 */
function nulPointer(root: unknown): string | null {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\0')) return at;
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => stack.push([x, `${at}/${i}`]));
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        const here = `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        if (k.includes('\0')) return here;
        stack.push([x, here]);
      }
    }
  }
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Turns zod issues into JSON:API errors whose pointers name the offending member. */
export function zodToApiError(error: z.ZodError, basePointer: string): ApiError {
  const all = error.issues.map((issue) => {
    const ptr = [basePointer, ...issue.path.map(String)].join('/');
    const name = issue.path.length ? issue.path.map(String).join('.') : basePointer.split('/').pop() || 'body';
    return unprocessable(`${name}: ${issue.message}`, ptr);
  });
  return all.length === 1 ? all[0]! : new ApiErrors(all);
}

export interface ParsedResource<T> {
  id: string | undefined;
  attributes: T;
  relationships: Record<string, unknown>;
}

/**
 * Reads `{"data":{"type":<type>,"attributes":{…}}}` and validates attributes with schema.
 * data.id is optional (go-tfe omits it on PATCH); unknown attributes are ignored.
 */
export async function readResource<S extends z.ZodType>(
  c: Context,
  type: string,
  schema: S,
): Promise<ParsedResource<z.output<S>>> {
  const body = await readJson(c);
  if (!isObject(body)) throw unprocessable('the request body must be a JSON object with a "data" member', '');
  const data = body.data;
  if (!isObject(data)) throw unprocessable('"data" must be an object', '/data');
  if (data.type !== type) {
    throw unprocessable(`data.type must be ${quoteValue(type)}, got ${quoteValue(data.type ?? null)}`, '/data/type');
  }
  const attrs = data.attributes === undefined ? {} : data.attributes;
  if (!isObject(attrs)) throw unprocessable('"data.attributes" must be an object', '/data/attributes');
  const result = schema.safeParse(attrs);
  if (!result.success) throw zodToApiError(result.error, '/data/attributes');
  const rel = data.relationships === undefined ? {} : data.relationships;
  if (!isObject(rel)) throw unprocessable('"data.relationships" must be an object', '/data/relationships');
  return { id: typeof data.id === 'string' ? data.id : undefined, attributes: result.data, relationships: rel };
}

/**
 * The id of a to-one relationship in a request body, or undefined: go-tfe v1 sends a full node
 * (empty attributes and all), other clients a bare {type, id}; only the id is read.
 */
export function relationshipId(relationships: Record<string, unknown>, name: string): string | undefined {
  const data = (relationships[name] as { data?: { id?: unknown } } | undefined)?.data;
  return typeof data?.id === 'string' && data.id !== '' ? data.id : undefined;
}

/** Reads `{"data":[{"type":<type>,"id":"…"},…]}` (relationship bodies such as team membership). */
export async function readIdentifiers(c: Context, type: string): Promise<string[]> {
  const body = await readJson(c);
  if (!isObject(body)) throw unprocessable('the request body must be a JSON object with a "data" array', '');
  const data = body.data;
  if (!Array.isArray(data)) throw unprocessable('"data" must be an array of {"type","id"} objects', '/data');
  if (data.length === 0) throw unprocessable('"data" must list at least one item', '/data');
  return data.map((item, i) => {
    if (!isObject(item)) throw unprocessable(`data[${i}] must be an object`, `/data/${i}`);
    if (item.type !== type) {
      throw unprocessable(`data[${i}].type must be ${quoteValue(type)}, got ${quoteValue(item.type ?? null)}`, `/data/${i}/type`);
    }
    if (typeof item.id !== 'string' || item.id === '') {
      throw unprocessable(`data[${i}].id must be a non-empty string`, `/data/${i}/id`);
    }
    return item.id;
  });
}

// The request each streamed body belongs to, so a service can tell a client that went away
// from a store that failed without being handed the request.
const bodySignals = new WeakMap<Readable, AbortSignal>();

/**
 * The raw request body as a Node stream, for uploads that go straight to the blob store. Under
 * @hono/node-server it is Node's own request stream, so backpressure reaches the socket: the web
 * stream Hono would hand out (Readable.toWeb) queues chunks by count, and with a reader slower
 * than the network it ends up holding most of a large body in memory.
 */
export function requestBody(c: Context): Readable {
  assertMayReadBody();
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const body =
    incoming instanceof Readable && !incoming.readableDidRead
      ? incoming
      : c.req.raw.body
        ? Readable.fromWeb(c.req.raw.body as ReadableStream)
        : Readable.from([]);
  bodySignals.set(body, c.req.raw.signal);
  return body;
}

/**
 * The request body as a stream of at most max bytes, for bodies too large to hold: a declared
 * Content-Length over max is refused before a byte is read; a body that turns out longer (chunked,
 * or lying) fails the stream with the same error when it passes max.
 */
export function limitedBody(c: Context, max: number, tooLarge: () => ApiError): Readable {
  const declared = declaredLength(c);
  if (declared !== null && declared > max) throw tooLarge();
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      cb(seen > max ? tooLarge() : null, chunk);
    },
  });
  const body = requestBody(c);
  body.on('error', (err) => counted.destroy(err));
  const out = body.pipe(counted);
  // A client can go away before the service starts reading (while it claims the upload in the
  // store): the error then has no reader yet, and an 'error' nobody listens to would crash the
  // process. The stream keeps it (out.errored), so a later reader or pipeline still fails with it.
  out.on('error', () => {});
  bodySignals.set(out, c.req.raw.signal);
  return out;
}

/** Node's error on a request whose connection closed before its body was complete. */
function isIncomingAbort(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { code?: unknown; message?: unknown };
    if (x.code === 'ECONNRESET' && x.message === 'aborted') return true;
  }
  return false;
}

/** True when the client closed the connection before the request was complete: not a server error. */
export function clientClosed(c: Context, err?: unknown): boolean {
  return c.req.raw.signal.aborted || isIncomingAbort(err);
}

/** The same question about a body from requestBody(), for services that stream it. */
export function clientClosedBody(body: Readable, err?: unknown): boolean {
  return bodySignals.get(body)?.aborted === true || isIncomingAbort(err);
}

/** The Content-Length the client declared, or null when absent or not a number. */
export function declaredLength(c: Context): number | null {
  const raw = c.req.header('content-length');
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : null;
}
