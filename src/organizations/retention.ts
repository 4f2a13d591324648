import type { Config } from '../config.js';
import type { Queryable } from '../db/index.js';
import type { DataRetentionPolicyKind } from '../db/schema.js';
import { getDataRetentionPolicy } from './store.js';

/** The id the installation default is shown under (it has no row of its own). */
export const DEFAULT_POLICY_ID = 'drp-installation-default';

export interface EffectivePolicy {
  id: string;
  kind: DataRetentionPolicyKind;
  type: 'data-retention-policy-delete-olders' | 'data-retention-policy-dont-deletes';
  /** Days to keep; null for dont-delete. */
  days: number | null;
  /** False when this is the installation default (TERRACE_DATA_RETENTION_DAYS). */
  explicit: boolean;
}

/**
 * The policy that governs an organization: its explicit one, else the installation default,
 * else none. Purges of old data (state versions, configuration versions) read this.
 */
export async function effectiveDataRetentionPolicy(db: Queryable, config: Config, organizationId: string): Promise<EffectivePolicy | null> {
  const row = await getDataRetentionPolicy(db, organizationId);
  if (row) {
    return {
      id: row.id,
      kind: row.kind,
      type: row.kind === 'delete-older' ? 'data-retention-policy-delete-olders' : 'data-retention-policy-dont-deletes',
      days: row.kind === 'delete-older' ? row.delete_older_than_n_days : null,
      explicit: true,
    };
  }
  if (config.dataRetentionDays !== undefined) {
    return { id: DEFAULT_POLICY_ID, kind: 'delete-older', type: 'data-retention-policy-delete-olders', days: config.dataRetentionDays, explicit: false };
  }
  return null;
}
