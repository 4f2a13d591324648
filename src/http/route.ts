import type { Context } from 'hono';
import { matchedRoutes } from 'hono/route';

/**
 * The route pattern a request is known by in metrics and caches, never the raw path (capability
 * URLs carry secrets and ids would explode cardinality): the handler that answered or, when a
 * middleware answered first (a 401, say), the handler that would have; "unmatched" when no
 * handler matched.
 */
export function routeLabel(c: Context): string {
  const routes = matchedRoutes(c);
  const answered = routes[c.req.routeIndex];
  if (answered && answered.method !== 'ALL') return answered.path;
  const handler = routes.find((r) => r.method !== 'ALL');
  if (handler) return handler.path;
  return c.res.status === 404 ? 'unmatched' : (routes.at(-1)?.path ?? '');
}

/** The path and query of a request URL ("/v1/modules/search?q=vpc"), as the client sent them. */
export function requestTarget(url: string): string {
  const scheme = url.indexOf('://');
  const slash = url.indexOf('/', scheme === -1 ? 0 : scheme + 3);
  return slash === -1 ? '/' : url.slice(slash);
}
