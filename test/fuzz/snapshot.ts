import { createHash } from 'node:crypto';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { BlobStore } from '../../src/blobs/types.js';
import { storeEnv } from '../helpers/store.js';

/**
 * What "nothing changed" compares: a hash of every row of every table (read through a separate
 * read-only connection to the SQLite file or the PostgreSQL database, so the check shares nothing
 * with the code under test) and every blob key with its size and a hash of its bytes.
 */
export interface StoreSnapshot {
  tables: Record<string, string>;
  blobs: Record<string, string>;
}

/** Bookkeeping tables whose rows are not state a request may be said to change (see take()). */
const IGNORED_TABLES = new Set(['cache_generations']);

/** Every row of one table, each as an array of its column values in column order. */
type TableReader = { name: string; rows: () => Promise<unknown[][]> };

export class StoreWatcher {
  private constructor(
    private readonly tables: TableReader[],
    private readonly blobStore: BlobStore,
    private readonly release: () => Promise<void>,
  ) {}

  /** Watches the store of the test server on dataDir: its SQLite file, or its PostgreSQL database. */
  static async open(dataDir: string, blobStore: BlobStore): Promise<StoreWatcher> {
    const url = storeEnv(dataDir).TERRACE_DATABASE_URL;
    if (url) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
      await client.connect();
      await client.query('set default_transaction_read_only = on');
      const names = (
        await client.query<{ name: string }>(
          "select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name",
        )
      ).rows.map((r) => r.name);
      const tables = names.map((name) => ({
        name,
        rows: async () => (await client.query({ text: `select * from "${name.replace(/"/g, '""')}"`, rowMode: 'array' })).rows as unknown[][],
      }));
      return new StoreWatcher(tables, blobStore, () => client.end());
    }
    const sqlite = new SQLite(path.join(dataDir, 'terrace.db'), { readonly: true, fileMustExist: true });
    const names = sqlite.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name").pluck().all() as string[];
    // Every column, in a stable order: a row's identity is its whole content.
    const tables = names.map((name) => {
      const select = sqlite.prepare(`select * from "${name.replace(/"/g, '""')}"`).raw(true);
      return { name, rows: async () => select.all() as unknown[][] };
    });
    return new StoreWatcher(tables, blobStore, async () => void sqlite.close());
  }

  tableNames(): string[] {
    return this.tables.map((t) => t.name);
  }

  async take(): Promise<StoreSnapshot> {
    const tables: Record<string, string> = {};
    for (const t of this.tables) {
      // Counts writes, not state: a refused upload claims its version and releases it again (two
      // writes, no change), which moves the generation and only retires cached reads.
      if (IGNORED_TABLES.has(t.name)) continue;
      const rows = (await t.rows()).map((r) => JSON.stringify(r, (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v)));
      rows.sort();
      tables[t.name] = createHash('sha256').update(rows.join('\n')).digest('hex');
    }
    const blobs: Record<string, string> = {};
    for await (const b of this.blobStore.list('')) {
      const h = createHash('sha256');
      for await (const chunk of await this.blobStore.get(b.key)) h.update(chunk as Buffer);
      blobs[b.key] = `${b.size}:${h.digest('hex')}`;
    }
    return { tables, blobs };
  }

  async close(): Promise<void> {
    await this.release();
  }
}

/** What differs between two snapshots: table names, and blob keys as "blob:<key>". */
export function changes(before: StoreSnapshot, after: StoreSnapshot): string[] {
  const out: string[] = [];
  for (const name of new Set([...Object.keys(before.tables), ...Object.keys(after.tables)])) {
    if (before.tables[name] !== after.tables[name]) out.push(name);
  }
  for (const key of new Set([...Object.keys(before.blobs), ...Object.keys(after.blobs)])) {
    if (before.blobs[key] !== after.blobs[key]) out.push(`blob:${key}`);
  }
  return out.sort();
}
