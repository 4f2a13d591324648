import { badRequest, quoteValue } from './errors.js';

/**
 * The largest offset or page number Terrace accepts: 2^31 - 1. An offset past every row is legal
 * (it answers an empty page), but a number with 20 or 400 digits must never reach SQL (SQLite
 * refuses integers past 2^63 and JavaScript loses precision past 2^53). With page sizes of at
 * most 100, (page[number] - 1) × page[size] stays below 2^38, far inside both.
 */
export const MAX_QUERY_INTEGER = 2 ** 31 - 1;

export interface WholeNumberBounds {
  min: number;
  max: number;
  /** 'clamp' replaces a value above max by max (the registry protocol's limit); default refuses. */
  above?: 'reject' | 'clamp';
}

/**
 * The one parser for a whole number a client sends in a query parameter or path segment: plain
 * decimal digits only (no sign, spaces, exponent or hex), within bounds. Absent or empty is
 * undefined; anything else out of range is a 400 naming the parameter and its range.
 */
export function wholeNumberParam(raw: string | null | undefined, name: string, bounds: WholeNumberBounds): number | undefined {
  if (raw === null || raw === undefined || raw === '') return undefined;
  const range = `a whole number from ${bounds.min} to ${bounds.max}`;
  if (!/^\d+$/.test(raw)) throw badRequest(`${name} must be ${range}, got ${quoteValue(raw)}`, { parameter: name });
  // Compare digit strings, not numbers: past 2^53 Number() rounds, and 400 digits is Infinity.
  const digits = raw.replace(/^0+(?=\d)/, '');
  const tooLarge = digits.length > String(bounds.max).length || (digits.length === String(bounds.max).length && digits > String(bounds.max));
  if (tooLarge) {
    if (bounds.above === 'clamp') return bounds.max;
    throw badRequest(`${name} must be ${range}, got ${quoteValue(raw)}`, { parameter: name });
  }
  const n = Number(digits);
  if (n < bounds.min) throw badRequest(`${name} must be ${range}, got ${quoteValue(raw)}`, { parameter: name });
  return n;
}
