import { createHash } from 'node:crypto';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type { BlobStore } from '../../src/blobs/types.js';

/**
 * What "nothing changed" compares: a hash of every row of every table (read through a separate
 * read-only connection, so the check shares nothing with the code under test) and every blob
 * key with its size and a hash of its bytes.
 */
export interface StoreSnapshot {
  tables: Record<string, string>;
  blobs: Record<string, string>;
}

export class StoreWatcher {
  private readonly sqlite: SQLite.Database;
  private readonly tables: { name: string; select: SQLite.Statement }[];

  constructor(
    dataDir: string,
    private readonly blobStore: BlobStore,
  ) {
    this.sqlite = new SQLite(path.join(dataDir, 'terrace.db'), { readonly: true, fileMustExist: true });
    const names = this.sqlite
      .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name")
      .pluck()
      .all() as string[];
    // Every column, in a stable order: a row's identity is its whole content.
    this.tables = names.map((name) => ({ name, select: this.sqlite.prepare(`select * from "${name.replace(/"/g, '""')}"`).raw(true) }));
  }

  tableNames(): string[] {
    return this.tables.map((t) => t.name);
  }

  async take(): Promise<StoreSnapshot> {
    const tables: Record<string, string> = {};
    for (const t of this.tables) {
      const rows = (t.select.all() as unknown[][]).map((r) => JSON.stringify(r, (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v)));
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

  close(): void {
    this.sqlite.close();
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
