import path from 'node:path';
import { CompiledQuery } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite, type Store } from '../../src/db/index.js';
import { staleUploadsQuery } from '../../src/registry/store.js';
import { tempDir } from '../helpers/server.js';

// The registry upkeep runs on the thread that serves requests: on SQLite (synchronous) a scan of
// every version there stalled every request for as long as it took (180 ms at 100,000 versions,
// every 5 minutes), which no behaviour test sees. What it must do instead is use the partial index.
describe('the registry upkeep query on SQLite', () => {
  let store: Store;
  afterAll(() => store?.close());

  it('finds stale uploads through the unfinished-versions index, never by scanning every version', async () => {
    store = openSqlite(path.join(tempDir(), 'terrace.db'));
    await store.migrate();
    const q = staleUploadsQuery(store.db, '2026-11-25T00:00:00Z').compile();
    const plan = await store.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${q.sql}`, [...q.parameters]));
    const details = plan.rows.map((r) => r.detail);
    expect(details.some((d) => d.includes('USING INDEX registry_module_versions_unfinished')), details.join('; ')).toBe(true);
    expect(details.some((d) => /^SCAN registry_module_versions\b/.test(d)), details.join('; ')).toBe(false);
  });
});
