import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.js';

/** Forward-only, applied in key order at start. Never edit a migration that has shipped: add one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
};
