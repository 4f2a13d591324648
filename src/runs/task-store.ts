import type { Selectable } from 'kysely';
import type { Queryable } from '../db/index.js';
import type { TaskResultOutcomesTable, TaskResultsTable, TaskStagesTable } from '../db/schema.js';

export type TaskStageRow = Selectable<TaskStagesTable>;
export type TaskResultRow = Selectable<TaskResultsTable>;
export type OutcomeRow = Selectable<TaskResultOutcomesTable>;

export const FINAL_RESULT_STATUSES = ['passed', 'failed', 'errored', 'unreachable', 'canceled'] as const;

export async function insertStage(db: Queryable, row: TaskStageRow): Promise<void> {
  await db.insertInto('task_stages').values(row).execute();
}

export async function insertResult(db: Queryable, row: TaskResultRow): Promise<void> {
  await db.insertInto('task_results').values(row).execute();
}

export async function stagesOfRun(db: Queryable, runId: string): Promise<TaskStageRow[]> {
  const rows = await db.selectFrom('task_stages').selectAll().where('run_id', '=', runId).execute();
  const order = ['pre_plan', 'post_plan', 'pre_apply', 'post_apply'];
  return rows.sort((a, b) => order.indexOf(a.stage) - order.indexOf(b.stage));
}

export async function getStage(db: Queryable, id: string): Promise<TaskStageRow | undefined> {
  return db.selectFrom('task_stages').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function resultsOfStages(db: Queryable, stageIds: string[]): Promise<TaskResultRow[]> {
  if (stageIds.length === 0) return [];
  return db.selectFrom('task_results').selectAll().where('task_stage_id', 'in', stageIds).orderBy('created_at').orderBy('id').execute();
}

export async function getResult(db: Queryable, id: string): Promise<TaskResultRow | undefined> {
  return db.selectFrom('task_results').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateStage(db: Queryable, id: string, changes: Partial<Pick<TaskStageRow, 'status' | 'status_timestamps' | 'updated_at'>>): Promise<void> {
  await db.updateTable('task_stages').set(changes).where('id', '=', id).execute();
}

/** Changes a result only while it is in one of the given statuses; false when it was not. */
export async function updateResultIf(
  db: Queryable,
  id: string,
  fromStatuses: readonly string[],
  changes: Partial<Omit<TaskResultRow, 'id' | 'task_stage_id' | 'run_id' | 'created_at'>>,
): Promise<boolean> {
  const res = await db.updateTable('task_results').set(changes).where('id', '=', id).where('status', 'in', [...fromStatuses]).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Marks a queued delivery sent (the outbox step), only if it is still queued: exactly once. */
export async function markDelivered(db: Queryable, id: string, changes: Pick<TaskResultRow, 'requested_at' | 'callback_deadline' | 'updated_at'>): Promise<boolean> {
  const res = await db
    .updateTable('task_results')
    .set({ ...changes, delivery_state: 'sent' })
    .where('id', '=', id)
    .where('delivery_state', '=', 'queued')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

// ---- outcomes ----

export async function replaceOutcomes(db: Queryable, resultId: string, rows: OutcomeRow[]): Promise<void> {
  await db.deleteFrom('task_result_outcomes').where('task_result_id', '=', resultId).execute();
  if (rows.length > 0) await db.insertInto('task_result_outcomes').values(rows).execute();
}

export async function listOutcomes(db: Queryable, resultId: string, page: { limit: number; offset: number }) {
  const base = db.selectFrom('task_result_outcomes').where('task_result_id', '=', resultId);
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const rows = await base.selectAll().orderBy('position').limit(page.limit).offset(page.offset).execute();
  return { rows, total: Number(n) };
}

export async function outcomeCounts(db: Queryable, resultIds: string[]): Promise<Map<string, number>> {
  if (resultIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('task_result_outcomes')
    .select(['task_result_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('task_result_id', 'in', resultIds)
    .groupBy('task_result_id')
    .execute();
  return new Map(rows.map((r) => [r.task_result_id, Number(r.n)]));
}

export async function getOutcome(db: Queryable, id: string): Promise<OutcomeRow | undefined> {
  return db.selectFrom('task_result_outcomes').selectAll().where('id', '=', id).executeTakeFirst();
}
