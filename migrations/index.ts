import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.js';
import * as m0002 from './0002_organizations.js';

/** Forward-only, applied in key order at start. Never edit a migration that has shipped: add one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_organizations': m0002,
};
