import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { enqueue, JobRunner } from '../../src/jobs/runner.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Two runners on one store (as two instances would be): a runner whose lease lapsed while another
 * took its job over writes nothing about that job afterwards. Runs on SQLite and PostgreSQL.
 */

const servers: TestServer[] = [];
afterEach(async () => {
  for (const t of servers.splice(0)) await t.close();
});

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

async function setUp() {
  const clock = new ManualClock('2026-05-01T12:00:00.000Z');
  const t = await startTestServer({ TERRACE_JOBS: 'false' }, { clock });
  servers.push(t);
  const deps = t.running.deps;
  const row = async (id: string) => deps.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return { clock, deps, row };
}

describe('job leases are fenced', () => {
  it('refuses the completion of a runner whose lease lapsed and whose job another runner took over', async () => {
    const { clock, deps, row } = await setUp();
    const first = gate();
    const firstStarted = gate();
    let secondRuns = 0;
    const slow = new JobRunner(deps, { work: async () => (firstStarted.open(), first.opened) }, { leaseMs: 10_000, backoffMs: () => 60_000 });
    const fast = new JobRunner(
      deps,
      {
        work: async () => {
          secondRuns++;
          throw new Error('the second runner failed this attempt');
        },
      },
      { leaseMs: 10_000, backoffMs: () => 60_000 },
    );
    const id = await enqueue(deps.db, 'work', { n: 1 }, clock.now());

    const slowPass = slow.runDue();
    await firstStarted.opened;
    const held = await row(id);
    expect(held).toMatchObject({ attempts: 1, locked_until: '2026-05-01T12:00:10.000Z' });
    expect(held!.claim_token).toEqual(expect.any(String));

    // While the lease holds, nobody else may take the job.
    expect(await fast.runDue()).toBe(0);
    // The first runner stalls past its lease: the second takes the job over and fails it.
    clock.advance(10_001);
    expect(await fast.runDue()).toBe(1);
    expect(secondRuns).toBe(1);
    const afterSecond = await row(id);
    expect(afterSecond).toMatchObject({ attempts: 2, locked_until: null, last_error: 'the second runner failed this attempt', run_at: '2026-05-01T12:01:10.001Z' });

    // The first runner now finishes: its completion would delete the row (losing the retry).
    first.open();
    expect(await slowPass).toBe(1);
    expect(await row(id)).toEqual(afterSecond);
  });

  it('refuses the failure of a stale runner, so it cannot free a job another runner holds', async () => {
    const { clock, deps, row } = await setUp();
    const first = gate();
    const firstStarted = gate();
    const second = gate();
    const secondStarted = gate();
    const slow = new JobRunner(
      deps,
      {
        work: async () => {
          firstStarted.open();
          await first.opened;
          throw new Error('stale failure');
        },
      },
      { leaseMs: 10_000 },
    );
    const other = new JobRunner(deps, { work: async () => (secondStarted.open(), second.opened) }, { leaseMs: 10_000 });
    const id = await enqueue(deps.db, 'work', null, clock.now());
    const slowPass = slow.runDue();
    await firstStarted.opened;
    clock.advance(10_001);
    const otherPass = other.runDue();
    await secondStarted.opened;
    const heldBySecond = await row(id);
    expect(heldBySecond).toMatchObject({ attempts: 2, locked_until: '2026-05-01T12:00:20.001Z', last_error: null });

    // The stale runner's failure would clear the lease (letting a third runner in) and record its error.
    first.open();
    await slowPass;
    expect(await row(id)).toEqual(heldBySecond);

    // The holder finishes: the job is done and gone.
    second.open();
    expect(await otherPass).toBe(1);
    expect(await row(id)).toBeUndefined();
  });

  it('lets exactly one of many concurrent runners claim each job', async () => {
    const { clock, deps } = await setUp();
    const ran: string[] = [];
    const runners = Array.from({ length: 4 }, () => new JobRunner(deps, { work: async (_d, payload) => void ran.push(String(payload)) }));
    for (let i = 0; i < 20; i++) await enqueue(deps.db, 'work', `job-${i}`, clock.now());
    const counts = await Promise.all(runners.map((r) => r.runDue()));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(20);
    expect(ran.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `job-${i}`).sort());
    expect(await deps.db.selectFrom('jobs').select('id').where('kind', '=', 'work').execute()).toEqual([]);
  });
});
