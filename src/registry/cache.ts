import { GenerationCache, perServer } from '../db/generations.js';
import type { Deps } from '../deps.js';
import { findModule, getVersionForDownload, type ModuleWithOrg } from './store.js';

/**
 * What the registry protocol's hot reads come from, cached per instance under the registry
 * generation (db/generations.ts): any publish, version or module deletion, module change or
 * organization rename or deletion retires all of it, at once on the instance that made the
 * change and within TERRACE_CACHE_SYNC_MS on the others. Only reads use these; every write
 * reads the store.
 */
interface RegistryCaches {
  /** By lower-cased namespace, name and provider; null for "no such module". */
  modules: GenerationCache<string, ModuleWithOrg | null>;
  /** What a download needs of a version, by module id and version; null for "no such version". */
  downloads: GenerationCache<string, DownloadVersion | null>;
}

export type DownloadVersion = NonNullable<Awaited<ReturnType<typeof getVersionForDownload>>>;

const caches = perServer(
  (deps: Deps): RegistryCaches => ({
    modules: new GenerationCache(deps.generations, 'registry', deps.config.cacheMaxEntries),
    downloads: new GenerationCache(deps.generations, 'registry', deps.config.cacheMaxEntries),
  }),
);

const moduleKey = (namespace: string, name: string, provider: string) => `${namespace.toLowerCase()}\u0000${name.toLowerCase()}\u0000${provider}`;

/** The cached module row (null: cached as absent), or undefined when it is not cached. */
export function peekModule(deps: Deps, namespace: string, name: string, provider: string): ModuleWithOrg | null | undefined {
  return caches(deps).modules.get(moduleKey(namespace, name, provider));
}

/** The cached download lookup (null: cached as absent), or undefined when it is not cached. */
export function peekDownloadVersion(deps: Deps, moduleId: string, version: string): DownloadVersion | null | undefined {
  return caches(deps).downloads.get(`${moduleId}\u0000${version}`);
}

/** findModule for readers. The row is shared by every request that reads it: frozen. */
export async function cachedModule(deps: Deps, namespace: string, name: string, provider: string): Promise<ModuleWithOrg | undefined> {
  const { modules } = caches(deps);
  const key = moduleKey(namespace, name, provider);
  const hit = modules.get(key);
  if (hit !== undefined) return hit ?? undefined;
  const generation = modules.generation();
  const row = await findModule(deps.db, namespace, name, provider);
  modules.set(key, row ? Object.freeze(row) : null, generation);
  return row;
}

/** Rendered /versions documents, by the (frozen, cached) module row they were rendered from. */
const versionsBodies = new WeakMap<ModuleWithOrg, Uint8Array<ArrayBuffer>>();
const encoder = new TextEncoder();

/** The protocol's /versions answer for a module row, rendered once per cached row. */
export function versionsBody(m: ModuleWithOrg): Uint8Array<ArrayBuffer> {
  const hit = versionsBodies.get(m);
  if (hit) return hit;
  const source = JSON.stringify(`${m.namespace}/${m.name}/${m.provider}`);
  const body = encoder.encode(`{"modules":[{"source":${source},"versions":${m.versions_json}}]}`);
  if (Object.isFrozen(m)) versionsBodies.set(m, body);
  return body;
}

/** getVersionForDownload for readers. */
export async function cachedDownloadVersion(deps: Deps, moduleId: string, version: string): Promise<DownloadVersion | undefined> {
  const { downloads } = caches(deps);
  const key = `${moduleId}\u0000${version}`;
  const hit = downloads.get(key);
  if (hit !== undefined) return hit ?? undefined;
  const generation = downloads.generation();
  const row = await getVersionForDownload(deps.db, moduleId, version);
  downloads.set(key, row ? Object.freeze(row) : null, generation);
  return row;
}
