/** How much of a user-supplied value a message quotes back. */
export const MAX_QUOTED_CHARS = 100;
/** The longest detail (or other string member) an error body carries: the renderers' safety net. */
export const MAX_ERROR_DETAIL_CHARS = 2000;

/** Cuts a string to at most max characters, marking the cut with "…" (never splits a surrogate pair). */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max - 1;
  const code = s.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${s.slice(0, end)}…`;
}

/**
 * The one way a message quotes what the client sent: as a JSON string (quotes and control
 * characters escaped), cut to MAX_QUOTED_CHARS characters. A 500 KB name makes a short error.
 */
export function quoteValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(truncate(value, MAX_QUOTED_CHARS));
  // Numbers, booleans, null, arrays and objects as JSON: `got null`, `got 42`, `got {"a":…`.
  return truncate(JSON.stringify(value) ?? String(value), MAX_QUOTED_CHARS);
}

/** The safety net every error body passes through, so no message can echo unbounded input. */
export function capErrorText(s: string): string {
  return truncate(s, MAX_ERROR_DETAIL_CHARS);
}

/**
 * The one error type handlers throw. app.ts renders it in the format of the surface the
 * request fell under: JSON:API errors on /api/v2, {"errors":["…"]} on the registry protocol.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly source?: { pointer?: string; parameter?: string },
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
  }
}

export const badRequest = (detail: string, source?: ApiError['source']) =>
  new ApiError(400, 'bad request', detail, source);
export const unauthorized = (detail = 'a valid API token is required: send it as "Authorization: Bearer <token>"') =>
  new ApiError(401, 'unauthorized', detail);
export const notFound = (detail = 'the requested resource was not found, or you are not authorized to see it') =>
  new ApiError(404, 'not found', detail);
export const conflict = (detail: string, source?: ApiError['source']) => new ApiError(409, 'conflict', detail, source);
export const unprocessable = (detail: string, pointer?: string) =>
  new ApiError(422, 'invalid attribute', detail, pointer === undefined ? undefined : { pointer });
export const unsupportedMediaType = (detail: string) => new ApiError(415, 'unsupported media type', detail);
export const payloadTooLarge = (detail: string) => new ApiError(413, 'payload too large', detail);
export const serviceUnavailable = (detail: string, retryAfterSeconds?: number) =>
  new ApiError(
    503,
    'service unavailable',
    detail,
    undefined,
    retryAfterSeconds === undefined ? undefined : { 'Retry-After': String(retryAfterSeconds) },
  );
