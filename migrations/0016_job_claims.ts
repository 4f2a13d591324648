import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A random token written by each claim of a job: the runner's later writes about the job (done,
  // failed, a longer lease) require it, so a runner whose lease lapsed while another took the job
  // over writes nothing. attempts alone cannot serve: a recurring job starts again from 0.
  await db.schema.alterTable('jobs').addColumn('claim_token', 'text').execute();
}
