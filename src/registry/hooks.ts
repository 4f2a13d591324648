import type { Tx } from '../db/index.js';
import type { Deps } from '../deps.js';

/**
 * How another publisher (VCS) takes part in the registry's modules without the registry
 * importing it: registered in domains.ts at start-up.
 */

/** What a publisher adds to a module's HCP rendering. */
export interface ModulePublisherView {
  status: 'pending' | 'no_version_tags' | 'setup_failed' | 'setup_complete';
  publishingMechanism: 'git_tag' | 'branch';
  vcsRepo: Record<string, unknown>;
  canResync: boolean;
  canRetry: boolean;
}

export type ModuleViewReader = (deps: Deps, moduleIds: string[]) => Promise<Map<string, ModulePublisherView>>;

/** Runs inside the transaction that deletes modules, before their rows go. */
export type ModuleDeleteHook = (tx: Tx, deps: Deps, moduleIds: string[]) => Promise<void>;

const readers = new Set<ModuleViewReader>();
const deleteHooks = new Set<ModuleDeleteHook>();

export function registerModuleViewReader(fn: ModuleViewReader): void {
  readers.add(fn);
}

export function registerModuleDeleteHook(fn: ModuleDeleteHook): void {
  deleteHooks.add(fn);
}

export async function modulePublisherViews(deps: Deps, moduleIds: string[]): Promise<Map<string, ModulePublisherView>> {
  const out = new Map<string, ModulePublisherView>();
  if (moduleIds.length === 0) return out;
  for (const read of readers) for (const [id, v] of await read(deps, moduleIds)) out.set(id, v);
  return out;
}

export async function runModuleDeleteHooks(tx: Tx, deps: Deps, moduleIds: string[]): Promise<void> {
  for (const hook of deleteHooks) await hook(tx, deps, moduleIds);
}
