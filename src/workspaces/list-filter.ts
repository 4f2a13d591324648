import { badRequest, quoteValue } from '../http/errors.js';
import { wholeNumberParam } from '../http/numbers.js';
import type { WorkspaceFilter } from './store.js';

/** How many filter[tagged][i] pairs one list may give. */
const MAX_TAGGED = 50;
const commaList = (v: string | null) => (v ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');

/**
 * The workspace list's query: search[name] (or search[wildcard-name], "*" ignored), search[tags]
 * and search[exclude-tags] (comma-separated, all must hold), filter[project][id], and go-tfe's
 * filter[tagged][i][key] / filter[tagged][i][value] pairs (all must hold; no value, any value).
 */
export function listFilter(q: URLSearchParams, organizationId: string): WorkspaceFilter {
  const search = q.get('search[name]') || q.get('search[wildcard-name]')?.replace(/\*/g, '') || undefined;
  const tagged = new Map<number, { key?: string; value?: string }>();
  for (const [name, value] of q) {
    const m = /^filter\[tagged\]\[([^\]]*)\]\[(key|value)\]$/.exec(name);
    if (!m) continue;
    const i = wholeNumberParam(m[1], `filter[tagged][${m[1]}]`, { min: 0, max: MAX_TAGGED - 1 })!;
    const entry = tagged.get(i) ?? {};
    entry[m[2] as 'key' | 'value'] = value;
    tagged.set(i, entry);
  }
  const pairs = [...tagged].sort(([a], [b]) => a - b).map(([i, e]) => {
    if (!e.key) throw badRequest(`filter[tagged][${i}][key] is required when filter[tagged][${i}][value] is given, got ${quoteValue(e.key ?? '')}`, { parameter: `filter[tagged][${i}][key]` });
    return { key: e.key, value: e.value ? e.value : null };
  });
  const tags = commaList(q.get('search[tags]'));
  const excludeTags = commaList(q.get('search[exclude-tags]'));
  return {
    organizationId,
    search,
    tags: tags.length ? tags : undefined,
    excludeTags: excludeTags.length ? excludeTags : undefined,
    tagged: pairs.length ? pairs : undefined,
    projectId: q.get('filter[project][id]') || undefined,
  };
}
