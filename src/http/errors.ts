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
