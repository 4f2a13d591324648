import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.js';
import * as m0002 from './0002_organizations.js';
import * as m0003 from './0003_registry.js';
import * as m0004 from './0004_module_contents.js';
import * as m0005 from './0005_workspaces_state.js';
import * as m0007 from './0007_retention.js';
import * as m0008 from './0008_workspace_tags_projects.js';
import * as m0009 from './0009_encryption.js';
import * as m0010 from './0010_runs_and_tasks.js';
import * as m0011 from './0011_web_sessions.js';
import * as m0012 from './0012_vcs.js';
import * as m0013 from './0013_registry_ingest.js';
import * as m0014 from './0014_vcs_modules.js';
import * as m0015 from './0015_sso_memberships.js';
import * as m0016 from './0016_job_claims.js';
import * as m0017 from './0017_cache_generations.js';

/** Forward-only, applied in key order at start. Never edit a migration that has shipped: add one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_organizations': m0002,
  '0003_registry': m0003,
  '0004_module_contents': m0004,
  '0005_workspaces_state': m0005,
  '0007_retention': m0007,
  '0008_workspace_tags_projects': m0008,
  '0009_encryption': m0009,
  '0010_runs_and_tasks': m0010,
  '0011_web_sessions': m0011,
  '0012_vcs': m0012,
  '0013_registry_ingest': m0013,
  '0014_vcs_modules': m0014,
  '0015_sso_memberships': m0015,
  '0016_job_claims': m0016,
  '0017_cache_generations': m0017,
};
