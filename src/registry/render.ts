import type { Deps } from '../deps.js';
import type { ResourceObject } from '../http/jsonapi.js';
import { modulePublisherViews } from './hooks.js';
import { serializeModuleVersion, serializeRegistryModule } from './serialize.js';
import { listVersions, type ModuleWithOrg, type VersionRow } from './store.js';

/** A module as HCP renders it, with its versions and what its publisher (VCS) adds. */
export async function renderModule(deps: Deps, m: ModuleWithOrg, canManage: boolean): Promise<ResourceObject> {
  return serializeRegistryModule(m, await listVersions(deps.db, m.id), canManage, (await modulePublisherViews(deps, [m.id])).get(m.id));
}

export function renderVersion(m: ModuleWithOrg, v: VersionRow): ResourceObject {
  return serializeModuleVersion(m, v);
}
