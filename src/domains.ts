import type { Config } from './config.js';
import type { JobHandler, JobKind, RecurringJob } from './jobs/runner.js';
import { registerOrganizationCreateHook } from './organizations/hooks.js';
import { registerFixedRetention, retentionSweepJob, RETENTION_SWEEP, registerRetentionParticipant, sweepRetention } from './organizations/retention-sweep.js';
import { createDefaultProject } from './projects/service.js';
import { registryJobHandlers, registryRecurringJobs } from './registry/ingest.js';
import { stateJobHandlers } from './state/processing.js';
import { stateRetentionParticipant } from './state/retention.js';
import { deliveryJobHandlers } from './runs/delivery.js';
import { runRetentionParticipant } from './runs/retention.js';
import { createOwnersTeam } from './teams/service.js';
import { registerSealedBlobColumn, registerSealedColumn } from './encryption/registry.js';
import { ENCRYPTION_UPKEEP, runEncryptionUpkeep } from './encryption/upkeep.js';
import { registerModuleDeleteHook, registerModuleViewReader } from './registry/hooks.js';
import { onModulesDeleted, onOAuthTokenDeleted, vcsModuleJobHandlers, vcsRescanJob } from './vcs/module-jobs.js';
import { vcsModuleViews } from './vcs/module-service.js';
import { registerOAuthTokenDeletedHook } from './vcs/service.js';
import { sweepWebSessions, WEB_SWEEP, webSweepJob } from './web/sweep.js';
import { vcsEventsRetention } from './vcs/events.js';

/**
 * Where the domains meet, at start-up: how domains take part in each other's work, registered
 * once before any request or job runs, so organizations/ and jobs/ import none of the domains
 * that depend on them. Registering twice changes nothing.
 */
export function registerDomainHooks(): void {
  registerOrganizationCreateHook(createOwnersTeam);
  registerOrganizationCreateHook(createDefaultProject);
  registerRetentionParticipant(stateRetentionParticipant);
  // Encryption at rest: sensitive output values are sealed with secrets.encrypt(); state blobs
  // stored before encryption are sealed by the upkeep job. One line per column.
  registerSealedColumn({ table: 'state_version_outputs', idColumn: 'id', column: 'value' });
  registerSealedBlobColumn({ table: 'state_versions', idColumn: 'id', column: 'blob_key' });
  registerSealedBlobColumn({ table: 'state_versions', idColumn: 'id', column: 'json_state_blob_key' });
  registerSealedBlobColumn({ table: 'state_versions', idColumn: 'id', column: 'json_outputs_blob_key' });
  registerSealedColumn({ table: 'run_tasks', idColumn: 'id', column: 'hmac_key_sealed' });
  registerSealedColumn({ table: 'task_results', idColumn: 'id', column: 'access_token_sealed' });
  registerSealedBlobColumn({ table: 'configuration_versions', idColumn: 'id', column: 'blob_key' });
  registerSealedBlobColumn({ table: 'runs', idColumn: 'id', column: 'plan_json_blob_key' });
  registerRetentionParticipant(runRetentionParticipant);
  // VCS events are kept 10 days whatever the policy: purged at the start of every sweep.
  registerFixedRetention(vcsEventsRetention);
  // VCS connections: the personal access tokens, SSH keys and OAuth-app secrets.
  registerSealedColumn({ table: 'oauth_tokens', idColumn: 'id', column: 'token_sealed' });
  registerSealedColumn({ table: 'oauth_tokens', idColumn: 'id', column: 'ssh_key_sealed' });
  registerSealedColumn({ table: 'oauth_clients', idColumn: 'id', column: 'secret_sealed' });
  // VCS-backed modules: the registry renders their connection and tells them of deletions; a
  // deleted OAuth token stops their publishing. Each module's webhook secret is sealed.
  registerModuleViewReader(vcsModuleViews);
  registerModuleDeleteHook(onModulesDeleted);
  registerOAuthTokenDeletedHook(onOAuthTokenDeleted);
  registerSealedColumn({ table: 'vcs_modules', idColumn: 'module_id', column: 'webhook_secret_sealed' });
}

/** Every job kind this build knows, by domain. A runner claims only kinds listed here. */
export function jobHandlers(): Record<string, JobHandler | JobKind> {
  return { ...stateJobHandlers, ...registryJobHandlers, ...deliveryJobHandlers, [RETENTION_SWEEP]: sweepRetention, [ENCRYPTION_UPKEEP]: runEncryptionUpkeep, [WEB_SWEEP]: sweepWebSessions, ...vcsModuleJobHandlers };
}

/** The kinds that repeat, each one row that is rescheduled after every run. */
export function recurringJobs(config: Config): RecurringJob[] {
  return [retentionSweepJob(config.retentionSweepIntervalSeconds * 1000), webSweepJob(config.webSweepIntervalSeconds * 1000), ...registryRecurringJobs(config), vcsRescanJob(config.vcsRescanIntervalSeconds * 1000)];
}
