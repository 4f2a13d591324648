import type { Tx } from '../db/index.js';
import { organizationPrefixes } from '../blobs/layout.js';
import type { Deps } from '../deps.js';
import type { OrganizationRow } from './access.js';

/**
 * Runs inside the transaction that creates an organization, after its row and its creator's
 * membership are in: a throw rolls the creation back. Teams registers one that creates the owners
 * team with the creator in it, so this domain never imports teams.
 */
export type OrgCreateHook = (tx: Tx, deps: Deps, org: OrganizationRow, creatorUserId: string) => Promise<void>;

const createHooks: OrgCreateHook[] = [];

export function registerOrganizationCreateHook(fn: OrgCreateHook): void {
  if (!createHooks.includes(fn)) createHooks.push(fn);
}

export async function runOrganizationCreateHooks(tx: Tx, deps: Deps, org: OrganizationRow, creatorUserId: string): Promise<void> {
  for (const hook of createHooks) await hook(tx, deps, org, creatorUserId);
}

/**
 * Runs after an organization's rows are gone (the deletion has committed). Domains that keep
 * bytes or outside state for an organization register one at start-up, so this domain never
 * imports the domains that depend on it. Hooks are best-effort: a failure is logged and the
 * blob sweep catches what was left behind.
 */
export type OrgDeleteHook = (deps: Deps, org: OrganizationRow) => Promise<void>;

const deleteHooks: OrgDeleteHook[] = [];

export function registerOrganizationDeleteHook(fn: OrgDeleteHook): void {
  if (!deleteHooks.includes(fn)) deleteHooks.push(fn);
}

export async function runOrganizationDeleteHooks(deps: Deps, org: OrganizationRow): Promise<void> {
  for (const prefix of organizationPrefixes(org.id)) {
    try {
      for await (const b of deps.blobs.list(prefix)) await deps.blobs.delete(b.key);
    } catch (err) {
      deps.logger.warn({ err, organization: org.id, prefix }, 'could not remove the blobs of a deleted organization');
    }
  }
  for (const hook of deleteHooks) {
    try {
      await hook(deps, org);
    } catch (err) {
      deps.logger.warn({ err, organization: org.id }, 'an organization delete hook failed');
    }
  }
}
