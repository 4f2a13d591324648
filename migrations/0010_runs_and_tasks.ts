import type { Kysely } from 'kysely';

// Run tasks, configuration versions, runs, task stages, task results and their outcomes.
// Portable types only (text, integer); times are RFC 3339 UTC text, booleans 0/1, JSON as text.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('run_tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_lower', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('category', 'text', (c) => c.notNull().defaultTo('task'))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    // The HMAC key, sealed with the server key (secrets.encrypt); null when the task has none.
    .addColumn('hmac_key_sealed', 'text')
    // JSON {enabled, stages, enforcement-level}, or null: only where global run tasks are entitled.
    .addColumn('global_configuration', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('run_tasks_org_name_unique', ['organization_id', 'name_lower'])
    .execute();

  await db.schema
    .createTable('workspace_run_tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    // A task attached to workspaces cannot be deleted (422), so no cascade here.
    .addColumn('task_id', 'text', (c) => c.notNull().references('run_tasks.id'))
    .addColumn('stages', 'text', (c) => c.notNull())
    .addColumn('enforcement_level', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('workspace_run_tasks_unique', ['workspace_id', 'task_id'])
    .execute();
  await db.schema.createIndex('workspace_run_tasks_task').on('workspace_run_tasks').column('task_id').execute();

  await db.schema
    .createTable('configuration_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull().defaultTo('tfe-api'))
    .addColumn('speculative', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('provisional', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('auto_queue_runs', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('upload_token_hash', 'text')
    .addColumn('upload_expires_at', 'text')
    .addColumn('blob_key', 'text')
    .addColumn('size', 'integer')
    .addColumn('status_timestamps', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('configuration_versions_workspace').on('configuration_versions').columns(['workspace_id', 'created_at']).execute();
  await db.schema.createIndex('configuration_versions_upload').on('configuration_versions').column('upload_token_hash').execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('configuration_version_id', 'text', (c) => c.notNull().references('configuration_versions.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_timestamps', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('is_destroy', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('plan_only', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by', 'text', (c) => c.notNull())
    // JSON {branch, commit-url, pull-request-url, repo-url}: what the run was triggered from.
    .addColumn('vcs', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('plan_json_blob_key', 'text')
    .addColumn('error_message', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('runs_workspace').on('runs').columns(['workspace_id', 'created_at']).execute();

  await db.schema
    .createTable('task_stages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('stage', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_timestamps', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('task_stages_run_stage', ['run_id', 'stage'])
    .execute();

  await db.schema
    .createTable('task_results')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_stage_id', 'text', (c) => c.notNull().references('task_stages.id').onDelete('cascade'))
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('stage', 'text', (c) => c.notNull())
    // Snapshots taken when the run was created: later edits of the task do not change a run.
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('task_name', 'text', (c) => c.notNull())
    .addColumn('task_url', 'text', (c) => c.notNull())
    .addColumn('workspace_task_id', 'text', (c) => c.notNull())
    .addColumn('enforcement_level', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('url', 'text')
    .addColumn('status_timestamps', 'text', (c) => c.notNull().defaultTo('{}'))
    // The outbox: none (stage not reached), queued, sent, failed (retries used up).
    .addColumn('delivery_state', 'text', (c) => c.notNull().defaultTo('none'))
    .addColumn('access_token_hash', 'text')
    // The same token sealed with the server key, so a retried request carries identical bytes.
    .addColumn('access_token_sealed', 'text')
    .addColumn('requested_at', 'text')
    .addColumn('callback_deadline', 'text')
    .addColumn('final_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('task_results_stage').on('task_results').column('task_stage_id').execute();
  await db.schema.createIndex('task_results_token').on('task_results').column('access_token_hash').execute();

  await db.schema
    .createTable('task_result_outcomes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_result_id', 'text', (c) => c.notNull().references('task_results.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('outcome_id', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('body', 'text')
    .addColumn('url', 'text')
    // JSON map {category: [{label, level}]}, as integrators send it (normalised).
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('task_result_outcomes_result').on('task_result_outcomes').columns(['task_result_id', 'position']).execute();
}
