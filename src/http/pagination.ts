import type { Context } from 'hono';
import { MAX_QUERY_INTEGER, wholeNumberParam } from './numbers.js';
import { queryParams } from './query.js';

// ---- page[number] / page[size] (the /api/v2 style) ----

export interface PageRequest {
  number: number;
  size: number;
  /** False when neither page parameter was given (some endpoints then return everything). */
  explicit: boolean;
  offset: number;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export function parsePage(c: Context, defaultSize = DEFAULT_PAGE_SIZE, maxSize = MAX_PAGE_SIZE): PageRequest {
  const q = queryParams(c);
  const number = wholeNumberParam(q.get('page[number]'), 'page[number]', { min: 1, max: MAX_QUERY_INTEGER });
  // Larger page sizes are served as the maximum (the meta says which size applied).
  const size = wholeNumberParam(q.get('page[size]'), 'page[size]', { min: 1, max: maxSize, above: 'clamp' });
  const n = number ?? 1;
  const s = Math.min(size ?? defaultSize, maxSize);
  return { number: n, size: s, explicit: number !== undefined || size !== undefined, offset: (n - 1) * s };
}

function pageUrl(base: string, c: Context, number: number, size: number): string {
  const url = new URL(c.req.url);
  const q = new URLSearchParams(url.search);
  q.delete('page[number]');
  q.delete('page[size]');
  q.set('page[number]', String(number));
  q.set('page[size]', String(size));
  return `${base}${url.pathname}?${q.toString()}`;
}

/** links and meta.pagination for a page of a collection of totalCount items. */
export function pageLinksAndMeta(c: Context, publicUrl: string, page: PageRequest, totalCount: number) {
  const totalPages = Math.max(1, Math.ceil(totalCount / page.size));
  const prev = page.number > 1 ? page.number - 1 : null;
  const next = page.number < totalPages ? page.number + 1 : null;
  return {
    links: {
      self: pageUrl(publicUrl, c, page.number, page.size),
      first: pageUrl(publicUrl, c, 1, page.size),
      prev: prev === null ? null : pageUrl(publicUrl, c, prev, page.size),
      next: next === null ? null : pageUrl(publicUrl, c, next, page.size),
      last: pageUrl(publicUrl, c, totalPages, page.size),
    },
    meta: {
      pagination: {
        'current-page': page.number,
        'page-size': page.size,
        'prev-page': prev,
        'next-page': next,
        'total-pages': totalPages,
        'total-count': totalCount,
      },
    },
  };
}

// ---- offset / limit (the registry protocol style) ----

export interface OffsetRequest {
  offset: number;
  limit: number;
}

export const REGISTRY_DEFAULT_LIMIT = 15;
export const REGISTRY_MAX_LIMIT = 100;

export function parseOffsetLimit(c: Context, defaultLimit = REGISTRY_DEFAULT_LIMIT, maxLimit = REGISTRY_MAX_LIMIT): OffsetRequest {
  const q = queryParams(c);
  const offset = wholeNumberParam(q.get('offset'), 'offset', { min: 0, max: MAX_QUERY_INTEGER }) ?? 0;
  // The protocol's rule: a limit above the maximum is replaced by the maximum.
  const limit = wholeNumberParam(q.get('limit'), 'limit', { min: 1, max: maxLimit, above: 'clamp' }) ?? defaultLimit;
  return { offset, limit };
}

function withOffset(c: Context, offset: number): string {
  const url = new URL(c.req.url);
  const q = new URLSearchParams(url.search);
  if (offset === 0) q.delete('offset');
  else q.set('offset', String(offset));
  q.sort();
  const s = q.toString();
  return s ? `${url.pathname}?${s}` : url.pathname;
}

/** The registry's meta: next_offset only when more exist, prev_offset only when offset > 0. */
export function registryMeta(c: Context, req: OffsetRequest, returned: number, hasMore: boolean) {
  const meta: Record<string, unknown> = { limit: req.limit, current_offset: req.offset };
  if (hasMore) {
    meta.next_offset = req.offset + returned;
    meta.next_url = withOffset(c, req.offset + returned);
  }
  if (req.offset > 0) {
    const prev = Math.max(0, req.offset - req.limit);
    meta.prev_offset = prev;
    meta.prev_url = withOffset(c, prev);
  }
  return meta;
}
