import type { Context } from 'hono';
import { ApiError, capErrorText } from './errors.js';
import { JSONAPI_MEDIA_TYPE, jsonApiErrorsBody } from './jsonapi.js';

/**
 * Where the module registry protocol is served: the base discovery advertises, and HCP's
 * /api/registry/v1/modules/ (go-tfe's ReadTerraformRegistryModule reads there). Same handlers.
 */
export const MODULE_PROTOCOL_BASES = ['/v1/modules/', '/api/registry/v1/modules/'] as const;

/** Which error format a path speaks: the registry protocol's, JSON:API's or (isWebPath) HTML. */
export function isRegistryPath(path: string): boolean {
  return (
    path.startsWith('/v1/') ||
    path === '/v1' ||
    path.startsWith('/v2/') ||
    path.startsWith('/.well-known/') ||
    path.startsWith('/api/registry/') ||
    path === '/api/registry'
  );
}

/** The registry protocol's error body: {"errors":["…"]}, strings only. */
export function registryError(c: Context, status: number, message: string, headers?: Record<string, string>): Response {
  return c.body(JSON.stringify({ errors: [capErrorText(message)] }), status as 400, { 'Content-Type': 'application/json', ...headers });
}

/** The web UI: pages for people, whose errors are HTML pages (the root path redirects into it). */
export function isWebPath(path: string): boolean {
  return path === '/' || path === '/app' || path.startsWith('/app/');
}

/** Where Terraform exchanges a login code for a token: its errors are OAuth 2.0's JSON (RFC 6749 5.2). */
export const OAUTH_TOKEN_PATH = '/app/oauth/token';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** A small self-contained error page: it must render even when the page machinery failed. */
function webError(c: Context, err: ApiError): Response {
  const title = escapeHtml(`${err.status} ${err.title}`);
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · Terrace</title><link rel="stylesheet" href="/app/assets/terrace.css"></head><body><main id="main"><h1>${title}</h1><p role="alert">${escapeHtml(capErrorText(err.detail))}</p><p><a href="/app">Back to Terrace</a></p></main></body></html>`;
  return c.body(html, err.status as 400, { 'Content-Type': 'text/html; charset=UTF-8', ...err.headers });
}

function oauthError(c: Context, err: ApiError): Response {
  const error = /^[a-z_]+$/.test(err.title) ? err.title : 'invalid_request';
  return c.body(JSON.stringify({ error, error_description: capErrorText(err.detail) }), err.status as 400, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-store',
    ...err.headers,
  });
}

/** Renders an ApiError in the format of the surface the request fell under. */
export function renderError(c: Context, err: ApiError): Response {
  if (isRegistryPath(c.req.path)) return registryError(c, err.status, err.detail, err.headers);
  if (c.req.path === OAUTH_TOKEN_PATH) return oauthError(c, err);
  if (isWebPath(c.req.path)) return webError(c, err);
  return c.body(JSON.stringify(jsonApiErrorsBody(err)), err.status as 400, {
    'Content-Type': JSONAPI_MEDIA_TYPE,
    ...err.headers,
  });
}
