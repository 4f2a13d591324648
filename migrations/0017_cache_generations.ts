import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../src/db/dialect.js';

/**
 * Generation numbers for what instances cache in memory (src/db/generations.ts). Every write to
 * a table a cache is built from bumps its generation in the same transaction, by trigger, so no
 * code path (API, job, CLI, a later migration's data fix) can change cached truth without every
 * instance noticing. 'identity': who a token is and which organizations it may read.
 * 'registry': modules, their versions and their organizations' names.
 *
 * Columns that change on every request by design (a token's last_used_at, an upload's lease)
 * are left out, so hot paths do not invalidate what they read.
 */
const WATCHED: { table: string; generation: 'identity' | 'registry'; update?: string[]; insert: boolean }[] = [
  { table: 'tokens', generation: 'identity', update: ['kind', 'user_id', 'team_id', 'organization_id', 'token_hash', 'expired_at'], insert: false },
  { table: 'users', generation: 'identity', insert: false },
  { table: 'organizations', generation: 'identity', insert: false },
  { table: 'organization_memberships', generation: 'identity', insert: true },
  { table: 'organization_module_producers', generation: 'identity', insert: true },
  { table: 'teams', generation: 'identity', insert: false },
  { table: 'team_members', generation: 'identity', insert: true },
  { table: 'organizations', generation: 'registry', insert: false },
  { table: 'registry_modules', generation: 'registry', insert: true },
  {
    table: 'registry_module_versions',
    generation: 'registry',
    update: ['module_id', 'version', 'status', 'description', 'blob_key', 'sha256', 'published_at', 'contents'],
    insert: true,
  },
];

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cache_generations')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.insertInto('cache_generations').values([{ name: 'identity', value: 0 }, { name: 'registry', value: 0 }]).execute();

  const pg = isPostgres(db);
  if (pg) {
    await sql`create function terrace_bump_generation() returns trigger language plpgsql as $$
      begin
        update cache_generations set value = value + 1 where name = TG_ARGV[0];
        return null;
      end $$`.execute(db);
  }
  for (const w of WATCHED) {
    const events: [string, string][] = [
      ['delete', 'delete'],
      ['update', w.update ? `update of ${w.update.join(', ')}` : 'update'],
    ];
    if (w.insert) events.push(['insert', 'insert']);
    for (const [name, event] of events) {
      const trigger = sql.id(`${w.table}_${name}_bumps_${w.generation}`);
      const table = sql.id(w.table);
      if (pg) {
        await sql`create trigger ${trigger} after ${sql.raw(event)} on ${table} for each row execute function terrace_bump_generation(${sql.lit(w.generation)})`.execute(db);
      } else {
        await sql`create trigger ${trigger} after ${sql.raw(event)} on ${table} begin update cache_generations set value = value + 1 where name = ${sql.lit(w.generation)}; end`.execute(db);
      }
    }
  }
}
