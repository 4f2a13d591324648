import type { Generated } from 'kysely';

/** Table types. Times are RFC 3339 text, booleans 0/1 integers, JSON columns text. */
export interface SettingsTable {
  key: string;
  value: string;
}

export interface UsersTable {
  id: string;
  username: string;
  username_lower: string;
  email: string;
  email_lower: string;
  is_site_admin: number;
  is_service_account: number;
  created_at: string;
}

export interface OrganizationsTable {
  id: string;
  name: string;
  name_lower: string;
  email: string;
  attributes: Generated<string>;
  created_at: string;
}

export interface TeamsTable {
  id: string;
  organization_id: string;
  name: string;
  name_lower: string;
  is_owners: Generated<number>;
  visibility: Generated<string>;
  permissions: Generated<string>;
  created_at: string;
}

export interface OrganizationMembershipsTable {
  id: string;
  organization_id: string;
  user_id: string;
  status: 'invited' | 'active';
  created_at: string;
}

/** Memberships single sign-on's group mapping created: they end with the user's last team seat. */
export interface SsoMembershipsTable {
  membership_id: string;
  created_at: string;
}

export interface TeamMembersTable {
  team_id: string;
  user_id: string;
  created_at: string;
}

export type TokenKind = 'user' | 'team' | 'organization';

export interface TokensTable {
  id: string;
  kind: TokenKind;
  user_id: string | null;
  team_id: string | null;
  organization_id: string | null;
  description: string | null;
  token_hash: string;
  created_by: string | null;
  created_at: string;
  last_used_at: string | null;
  expired_at: string | null;
}

export interface JobsTable {
  id: string;
  kind: string;
  payload: string;
  run_at: string;
  attempts: Generated<number>;
  locked_until: string | null;
  last_error: string | null;
  created_at: string;
  /** Set on a job that exists at most once (a recurring one); null otherwise. */
  unique_key: string | null;
  /** Written by each claim: the fencing token of the runner holding the job (see jobs/runner.ts); null once it lets go. */
  claim_token: Generated<string | null>;
}

/** Bumped by triggers (migration 0017) whenever what an in-memory cache holds changes; see db/generations.ts. */
export interface CacheGenerationsTable {
  name: string;
  value: number | string;
}

/** Blobs whose rows are gone and whose deletion from the blob store is not yet confirmed. */
export interface BlobDeletionsTable {
  key: string;
  created_at: string;
}

export interface RegistryModulesTable {
  id: string;
  organization_id: string;
  name: string;
  name_lower: string;
  provider: string;
  description: string;
  versions_json: string;
  latest_version: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * pending: waiting for its archive; uploading: an upload URL is receiving it; cloning: a VCS
 * publisher is producing it; clone_failed: the publisher could not fetch it (error says why); ingesting: its bytes are stored and the registry.ingest job is
 * queued or running; ok: servable; errored: refused (error says why).
 */
export type ModuleVersionStatus = 'pending' | 'uploading' | 'cloning' | 'clone_failed' | 'ingesting' | 'ok' | 'errored';

export interface RegistryModuleVersionsTable {
  id: string;
  module_id: string;
  version: string;
  status: ModuleVersionStatus;
  error: string | null;
  description: string | null;
  commit_sha: string | null;
  blob_key: string | null;
  size: number | null;
  sha256: string | null;
  upload_token_hash: string | null;
  upload_expires_at: string | null;
  created_at: string;
  updated_at: string;
  published_at: string | null;
  /** JSON ModuleContents from inspection; null until inspected. */
  contents: string | null;
  /** JSON array of inspection warnings. */
  warnings: string;
  /** While uploading: until when the receiving request holds the upload (it renews the lease). */
  upload_lease_until: string | null;
}

export type VcsModuleStatus = 'pending' | 'no_version_tags' | 'setup_failed' | 'setup_complete';

/** A registry module published from a VCS repository (src/vcs/module-store.ts). */
export interface VcsModulesTable {
  module_id: string;
  organization_id: string;
  oauth_token_id: string | null;
  oauth_client_id: string | null;
  identifier: string;
  display_identifier: string;
  /** '' for tag-based publishing. */
  branch: string;
  tag_prefix: string | null;
  source_directory: string | null;
  ingress_submodules: number;
  service_provider: string;
  repository_http_url: string;
  webhook_uuid: string;
  /** Sealed with the server key. */
  webhook_secret_sealed: string;
  webhook_hook_id: string | null;
  webhook_error: string | null;
  status: VcsModuleStatus;
  status_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface VcsWebhookDeliveriesTable {
  module_id: string;
  delivery_id: string;
  received_at: string;
}

export interface RegistryModuleDownloadsTable {
  module_id: string;
  day: string;
  count: number;
}

export interface AgentPoolsTable {
  id: string;
  organization_id: string;
  name: string;
  name_lower: string;
  organization_scoped: number;
  created_at: string;
}

/** producer_id shares its private registry modules with organization_id (the consumer). */
export interface OrganizationModuleProducersTable {
  organization_id: string;
  producer_id: string;
  created_at: string;
}

export type DataRetentionPolicyKind = 'delete-older' | 'dont-delete';

export interface DataRetentionPoliciesTable {
  id: string;
  organization_id: string;
  kind: DataRetentionPolicyKind;
  delete_older_than_n_days: number | null;
  created_at: string;
  updated_at: string;
}

export interface WorkspacesTable {
  id: string;
  organization_id: string;
  name: string;
  name_lower: string;
  description: string;
  working_directory: string;
  /** null: follows the organization's default-execution-mode. */
  execution_mode: 'remote' | 'local' | 'agent' | null;
  agent_pool_id: string | null;
  auto_apply: number;
  terraform_version: string;
  /** JSON vcs-repo object, or null. */
  vcs_repo: string | null;
  /** JSON of stored-but-inert HCP settings. */
  attributes: string;
  locked: number;
  locked_by_kind: 'user' | 'team' | 'organization' | null;
  locked_by_id: string | null;
  lock_reason: string | null;
  current_state_version_id: string | null;
  /** The project holding the workspace (every workspace has one; see migration 0008). */
  project_id: string;
  created_at: string;
  updated_at: string;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  name: string;
  name_lower: string;
  description: string;
  is_default: number;
  created_at: string;
  updated_at: string;
}

export interface TagsTable {
  id: string;
  organization_id: string;
  name: string;
  created_at: string;
}

export interface WorkspaceTagsTable {
  workspace_id: string;
  tag_id: string;
  created_at: string;
}

/** A key/value tag on a workspace or (inherited by its workspaces) on a project: exactly one of the two ids is set. */
export interface TagBindingsTable {
  id: string;
  workspace_id: string | null;
  project_id: string | null;
  key: string;
  value: string;
  created_at: string;
}

export type StateVersionStatus = 'pending' | 'finalized';

export interface StateVersionsTable {
  id: string;
  workspace_id: string;
  serial: number;
  lineage: string | null;
  md5: string;
  force: number;
  status: StateVersionStatus;
  size: number | null;
  state_format_version: number | null;
  terraform_version: string | null;
  /** 0 while its processing job is pending, 1 once outputs are extracted, 2 when that failed for good. */
  resources_processed: number;
  resource_count: number | null;
  blob_key: string | null;
  json_state_blob_key: string | null;
  json_outputs_blob_key: string | null;
  upload_token_hash: string | null;
  json_upload_token_hash: string | null;
  upload_expires_at: string | null;
  created_by: string | null;
  created_at: string;
  finalized_at: string | null;
}

export interface StateVersionOutputsTable {
  id: string;
  state_version_id: string;
  position: number;
  name: string;
  sensitive: number;
  type: string;
  /** cty type JSON. */
  detailed_type: string;
  /** JSON text; encrypted with the server key when sensitive. */
  value: string;
}

/** A sealed blob's data key, wrapped by the server key key_id (see src/blobs/sealed.ts). */
export interface BlobDataKeysTable {
  id: string;
  blob_key: string;
  key_id: string;
  wrapped: string;
  created_at: string;
}

export interface RunTasksTable {
  id: string;
  organization_id: string;
  name: string;
  name_lower: string;
  url: string;
  description: string;
  category: string;
  enabled: number;
  /** Sealed with the server key; read and written only by runtasks/store.ts. */
  hmac_key_sealed: string | null;
  /** JSON {enabled, stages, enforcement-level}, or null. */
  global_configuration: string | null;
  created_at: string;
  updated_at: string;
}

export interface WorkspaceRunTasksTable {
  id: string;
  workspace_id: string;
  task_id: string;
  /** JSON array of stage names. */
  stages: string;
  enforcement_level: 'mandatory' | 'advisory';
  created_at: string;
  updated_at: string;
}

export interface ConfigurationVersionsTable {
  id: string;
  workspace_id: string;
  status: 'pending' | 'uploaded';
  source: string;
  speculative: number;
  provisional: number;
  auto_queue_runs: number;
  upload_token_hash: string | null;
  upload_expires_at: string | null;
  blob_key: string | null;
  size: number | null;
  status_timestamps: string;
  created_at: string;
}

export interface RunsTable {
  id: string;
  workspace_id: string;
  configuration_version_id: string;
  status: string;
  status_timestamps: string;
  message: string;
  is_destroy: number;
  plan_only: number;
  created_by: string;
  vcs: string;
  plan_json_blob_key: string | null;
  error_message: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaskStagesTable {
  id: string;
  run_id: string;
  stage: string;
  status: string;
  status_timestamps: string;
  created_at: string;
  updated_at: string;
}

export interface TaskResultsTable {
  id: string;
  task_stage_id: string;
  run_id: string;
  stage: string;
  task_id: string;
  task_name: string;
  task_url: string;
  workspace_task_id: string;
  enforcement_level: 'mandatory' | 'advisory';
  status: string;
  message: string | null;
  url: string | null;
  status_timestamps: string;
  delivery_state: 'none' | 'queued' | 'sent' | 'failed';
  access_token_hash: string | null;
  access_token_sealed: string | null;
  requested_at: string | null;
  callback_deadline: string | null;
  final_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaskResultOutcomesTable {
  id: string;
  task_result_id: string;
  position: number;
  outcome_id: string;
  description: string;
  body: string | null;
  url: string | null;
  tags: string;
  created_at: string;
}

export interface WebSessionsTable {
  id_hash: string;
  token_id: string;
  user_id: string;
  owns_token: number;
  created_at: string;
  expires_at: string;
}

export interface OauthCodesTable {
  code_hash: string;
  token_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  created_at: string;
  expires_at: string;
}

export type VcsServiceProvider = 'github' | 'github_enterprise' | 'gitlab_hosted' | 'gitlab_community_edition' | 'gitlab_enterprise_edition';

export interface OauthClientsTable {
  id: string;
  organization_id: string;
  name: string | null;
  service_provider: VcsServiceProvider;
  http_url: string;
  api_url: string;
  key: string | null;
  /** Sealed with the server key; read and written only by vcs/store.ts. */
  secret_sealed: string | null;
  rsa_public_key: string | null;
  organization_scoped: number;
  created_at: string;
  updated_at: string;
}

export interface OauthClientProjectsTable {
  oauth_client_id: string;
  project_id: string;
}

export interface OauthTokensTable {
  id: string;
  oauth_client_id: string;
  organization_id: string;
  /** The personal access token, sealed; read and written only by vcs/store.ts. */
  token_sealed: string;
  ssh_key_sealed: string | null;
  service_provider_user: string | null;
  uid: string;
  created_at: string;
  updated_at: string;
}

export interface VcsEventsTable {
  id: string;
  organization_id: string;
  level: 'info' | 'error';
  message: string;
  suggested_action: string | null;
  oauth_client_id: string | null;
  oauth_token_id: string | null;
  created_at: string;
}

export interface Database {
  settings: SettingsTable;
  users: UsersTable;
  organizations: OrganizationsTable;
  teams: TeamsTable;
  organization_memberships: OrganizationMembershipsTable;
  team_members: TeamMembersTable;
  sso_memberships: SsoMembershipsTable;
  tokens: TokensTable;
  jobs: JobsTable;
  blob_deletions: BlobDeletionsTable;
  cache_generations: CacheGenerationsTable;
  agent_pools: AgentPoolsTable;
  organization_module_producers: OrganizationModuleProducersTable;
  data_retention_policies: DataRetentionPoliciesTable;
  registry_modules: RegistryModulesTable;
  registry_module_versions: RegistryModuleVersionsTable;
  registry_module_downloads: RegistryModuleDownloadsTable;
  workspaces: WorkspacesTable;
  state_versions: StateVersionsTable;
  state_version_outputs: StateVersionOutputsTable;
  projects: ProjectsTable;
  tags: TagsTable;
  workspace_tags: WorkspaceTagsTable;
  tag_bindings: TagBindingsTable;
  blob_data_keys: BlobDataKeysTable;
  run_tasks: RunTasksTable;
  workspace_run_tasks: WorkspaceRunTasksTable;
  configuration_versions: ConfigurationVersionsTable;
  runs: RunsTable;
  task_stages: TaskStagesTable;
  task_results: TaskResultsTable;
  task_result_outcomes: TaskResultOutcomesTable;
  web_sessions: WebSessionsTable;
  oauth_codes: OauthCodesTable;
  vcs_modules: VcsModulesTable;
  vcs_webhook_deliveries: VcsWebhookDeliveriesTable;
  oauth_clients: OauthClientsTable;
  oauth_client_projects: OauthClientProjectsTable;
  oauth_tokens: OauthTokensTable;
  vcs_events: VcsEventsTable;
}
