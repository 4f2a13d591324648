import type { Context } from 'hono';
import { ApiError, capErrorText } from './errors.js';
import { JSONAPI_MEDIA_TYPE, jsonApiErrorsBody } from './jsonapi.js';

/** Which error format a path speaks: the registry protocol's or JSON:API's. */
export function isRegistryPath(path: string): boolean {
  return path.startsWith('/v1/') || path === '/v1' || path.startsWith('/v2/') || path.startsWith('/.well-known/');
}

/** The registry protocol's error body: {"errors":["…"]}, strings only. */
export function registryError(c: Context, status: number, message: string, headers?: Record<string, string>): Response {
  return c.body(JSON.stringify({ errors: [capErrorText(message)] }), status as 400, { 'Content-Type': 'application/json', ...headers });
}

/** Renders an ApiError in the format of the surface the request fell under. */
export function renderError(c: Context, err: ApiError): Response {
  if (isRegistryPath(c.req.path)) return registryError(c, err.status, err.detail, err.headers);
  return c.body(JSON.stringify(jsonApiErrorsBody(err)), err.status as 400, {
    'Content-Type': JSONAPI_MEDIA_TYPE,
    ...err.headers,
  });
}
