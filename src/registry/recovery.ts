import type { Deps } from '../deps.js';
import { registryUpkeep } from './ingest.js';

/**
 * Start-up repair for a process that was killed mid-publish: the registry upkeep, run once before
 * serving (it also runs as a leased recurring job, so a crash is repaired without a restart).
 * Uploads whose lease lapsed go back to pending and lose their partial blob; unreferenced
 * archives older than the grace window are removed. Queued ingestions need nothing here: their
 * job rows resume them.
 */
export async function recoverRegistry(deps: Deps): Promise<{ resetUploads: number; orphansRemoved: number }> {
  return registryUpkeep(deps);
}
