import type { Context } from 'hono';
import { queryParams } from '../http/query.js';

/** include=a,b (go-tfe joins values with commas; it may also send include= empty). */
export function includeSet(c: Context): Set<string> {
  const raw = queryParams(c).getAll('include').join(',');
  return new Set(raw.split(',').map((s) => s.trim()).filter(Boolean));
}

/** A query parameter, or undefined when absent or empty. */
export function optionalParam(c: Context, name: string): string | undefined {
  const v = queryParams(c).get(name);
  return v === null || v === '' ? undefined : v;
}

/** A comma-separated filter value as a list, or undefined when absent or empty. */
export function listParam(c: Context, name: string): string[] | undefined {
  const v = optionalParam(c, name);
  if (v === undefined) return undefined;
  const items = v.split(',').map((s) => s.trim()).filter(Boolean);
  return items.length ? items : undefined;
}
