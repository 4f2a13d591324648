import type { BlobStore } from './blobs/types.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Db, Store } from './db/index.js';
import type { Generations } from './db/generations.js';
import type { Logger } from './logger.js';
import type { DownloadCounter } from './registry/downloads.js';
import type { Secrets } from './secrets.js';

/** Everything a domain needs, built once in main.ts (or a test) and passed to createApp. */
export interface Deps {
  config: Config;
  store: Store;
  db: Db;
  blobs: BlobStore;
  clock: Clock;
  logger: Logger;
  secrets: Secrets;
  /** What in-memory caches are built from, kept in step with the store (db/generations.ts). */
  generations: Generations;
  /** Module downloads counted in memory and written in batches (src/registry/downloads.ts). */
  downloads: DownloadCounter;
}
