import type { FuzzRequest } from './generators.js';

/**
 * EXPECTED FAILURES, to be emptied: defects of issue 15 that are being fixed elsewhere, each
 * matched as narrowly as the defect. An entry is removed when its fix lands; nothing else may
 * be added. FUZZ_STRICT=1 ignores the list (to see what still fails).
 */
export interface Observation {
  req: FuzzRequest;
  status: number;
  bodyLength: number;
  /** Changed tables, and blobs as "blob:<key>". */
  changed: string[];
  /** Which assertion failed. */
  failure: 'server-error' | 'refusal-status' | 'oversized-error' | 'changed';
}

export const KNOWN_DEFECTS: { id: string; description: string; matches: (o: Observation) => boolean }[] = [];
