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

const PAGING = ['page[number]', 'page[size]', 'offset', 'limit'];

function queryValues(target: string): [string, string][] {
  const i = target.indexOf('?');
  if (i === -1) return [];
  try {
    return [...new URLSearchParams(target.slice(i + 1))];
  } catch {
    return [];
  }
}

export const KNOWN_DEFECTS: { id: string; description: string; matches: (o: Observation) => boolean }[] = [
  {
    id: 'huge-page-number-500',
    description: 'page[number]/offset of 16+ digits reaches SQLite unbounded and answers 500',
    matches: (o) => o.failure === 'server-error' && o.status === 500 && queryValues(o.req.target).some(([k, v]) => PAGING.includes(k) && /^\d{16,}$/.test(v)),
  },
  {
    id: 'huge-input-echoed',
    description: 'a 4xx echoes a huge input value in full',
    matches: (o) => o.failure === 'oversized-error' && [400, 422].includes(o.status),
  },
  {
    id: 'state-json-upload-used-up',
    description: 'a refused PUT to a JSON state upload URL uses the one-time URL up',
    matches: (o) =>
      o.failure === 'changed' && o.req.routeKey === 'PUT /uploads/state-json/:token' && o.status >= 400 && o.status < 500 && o.changed.every((c) => c === 'state_versions'),
  },
  {
    id: 'head-counts-download',
    description: 'HEAD on a version download endpoint counts a download',
    matches: (o) =>
      o.failure === 'changed' &&
      o.req.method === 'HEAD' &&
      o.req.routeKey === 'GET /v1/modules/:namespace/:name/:provider/:version/download' &&
      o.changed.every((c) => c === 'registry_module_downloads'),
  },
];
