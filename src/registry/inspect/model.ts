/** What inspection records about one module directory (root, a submodule or an example). */
export interface ModuleInput {
  name: string;
  type: string;
  description: string;
  /** The default's literal text, as the protocol wants it ("\"us-east-1\""); "" when there is none. */
  default: string;
  required: boolean;
  sensitive: boolean;
}

export interface ModuleOutput {
  name: string;
  description: string;
  sensitive: boolean;
}

export interface ProviderDependency {
  name: string;
  namespace: string;
  source: string;
  version: string;
}

export interface ModuleCall {
  name: string;
  source: string;
  version: string;
}

export interface ModuleResource {
  name: string;
  type: string;
}

export interface ModuleInfo {
  path: string;
  readme: string;
  empty: boolean;
  inputs: ModuleInput[];
  outputs: ModuleOutput[];
  provider_dependencies: ProviderDependency[];
  dependencies: ModuleCall[];
  resources: ModuleResource[];
}

export interface ModuleContents {
  root: ModuleInfo;
  submodules: ModuleInfo[];
  examples: ModuleInfo[];
}

export function emptyModule(path: string): ModuleInfo {
  return { path, readme: '', empty: true, inputs: [], outputs: [], provider_dependencies: [], dependencies: [], resources: [] };
}

export function emptyContents(): ModuleContents {
  return { root: emptyModule(''), submodules: [], examples: [] };
}
