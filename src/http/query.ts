import type { Context } from 'hono';

/**
 * Query parameters as flat keys, decoded: `page%5Bnumber%5D` and `page[number]` both arrive as
 * "page[number]", and `q` and `q[name]` can co-exist (nested parsers choke on that).
 */
export function queryParams(c: Context): URLSearchParams {
  const url = c.req.url;
  const i = url.indexOf('?');
  return new URLSearchParams(i === -1 ? '' : url.slice(i + 1));
}
