import fs from 'node:fs';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, rfc3339 } from '../../src/clock.js';
import { jobHandlers, recurringJobs } from '../../src/domains.js';
import { JobRunner } from '../../src/jobs/runner.js';
import { stateJobHandlers } from '../../src/state/processing.js';
import { createOrg, RFC3339 } from '../helpers/organizations.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace, jsonStateOutputs, lock, pushState, stateFixture } from '../helpers/state.js';

const DAY = 24 * 3600 * 1000;
const HOUR = 3600 * 1000;
const S1 = stateFixture('outputs-serial1.json');
const OUTPUTS_PER_VERSION = 13;

/** The fixture state with another serial (same lineage), so one workspace can hold many versions. */
function stateWithSerial(serial: number): Buffer {
  return Buffer.from(JSON.stringify({ ...JSON.parse(S1.toString('utf8')), serial }, null, 2));
}

const servers: TestServer[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const t of servers.splice(0)) await t.close({ keepData: true }).catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

interface LogLine {
  msg: string;
  level: number;
  [k: string]: any;
}

/** Starts a server (jobs driven by hand) on dir with clock, its info logs collected in lines. */
/**
 * The server's runner, less the registry's recurring repairs (registry.*) and VCS work (vcs.*,
 * the periodic tag rescan among it): they come due too as these tests move the clock by hours,
 * and the counts here are about retention.
 */
function runDue(t: TestServer): Promise<number> {
  const registry = (kind: string) => kind.startsWith('registry.') || kind.startsWith('vcs.');
  const handlers = Object.fromEntries(Object.entries(jobHandlers()).filter(([kind]) => !registry(kind)));
  const recurring = recurringJobs(t.running.deps.config).filter((r) => !registry(r.kind));
  return new JobRunner(t.running.deps, handlers, { recurring, leaseMs: t.running.deps.config.jobLeaseSeconds * 1000 }).runDue();
}

async function start(dir: string, clock: ManualClock, env: Record<string, string> = {}) {
  const t = await startTestServer({ TERRACE_JOBS: 'false', ...env }, { dataDir: dir, clock });
  servers.push(t);
  // Only the retention sweep is under test: the other recurring job (the web sweep, test/web/sweep.test.ts)
  // loses its row, so what runDue() counts and what the log says are the retention sweep's alone.
  await t.running.deps.db.deleteFrom('jobs').where('kind', '=', 'web.sweep').execute();
  const lines: LogLine[] = [];
  t.running.deps.logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { t, lines };
}

function freshDir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

async function setPolicy(t: TestServer, org: string, days: number | 'dont-delete') {
  const body =
    days === 'dont-delete'
      ? { data: { type: 'data-retention-policy-dont-deletes', attributes: {} } }
      : { data: { type: 'data-retention-policy-delete-olders', attributes: { 'delete-older-than-n-days': days } } };
  const r = await t.api('POST', `/api/v2/organizations/${org}/relationships/data-retention-policy`, { body });
  expect(r.status).toBe(201);
}

/** Pushes serial into the workspace at the clock's current time, with JSON outputs (a second blob), and processes it. */
async function push(t: TestServer, wsId: string, serial: number) {
  const state = stateWithSerial(serial);
  const r = await pushState(t, wsId, state, { 'json-state-outputs': Buffer.from(JSON.stringify(jsonStateOutputs(state))).toString('base64') });
  expect(r.status).toBe(201);
  // Only state processing: the sweep must not run while the history is being written.
  expect(await new JobRunner(t.running.deps, stateJobHandlers).runDue()).toBe(1);
  const shown = await t.api('GET', `/api/v2/state-versions/${r.json.data.id}`);
  expect(shown.json.data.attributes['resources-processed']).toBe(true);
  const output = shown.json.data.relationships.outputs.data[0].id as string;
  return { id: r.json.data.id as string, output, download: '' };
}

/**
 * Takes fresh download URLs (they expire) of the versions at the clock's current time, and
 * checks they work, so a 404 afterwards shows the version went rather than the URL expired.
 */
async function refreshDownloads(t: TestServer, versions: { id: string; download: string }[]) {
  for (const sv of versions) {
    const shown = await t.api('GET', `/api/v2/state-versions/${sv.id}`);
    expect(shown.status).toBe(200);
    sv.download = shown.json.data.attributes['hosted-state-download-url'];
    expect((await fetch(sv.download)).status).toBe(200);
  }
}

async function blobsOf(t: TestServer, svId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of t.running.deps.blobs.list('organizations/')) if (b.key.includes(`/${svId}`)) keys.push(b.key);
  return keys.sort();
}

async function outputsOf(t: TestServer, svId: string): Promise<number> {
  const r = await t.running.deps.db
    .selectFrom('state_version_outputs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state_version_id', '=', svId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

async function sweepRows(t: TestServer) {
  return t.running.deps.db.selectFrom('jobs').selectAll().where('kind', '=', 'retention.sweep').execute();
}

async function listed(t: TestServer, org: string, ws: string): Promise<string[]> {
  const r = await t.api('GET', `/api/v2/state-versions?filter%5Borganization%5D%5Bname%5D=${org}&filter%5Bworkspace%5D%5Bname%5D=${ws}`);
  expect(r.status).toBe(200);
  return r.json.data.map((d: any) => d.id);
}

/** Asserts the version is gone everywhere: row, outputs, blobs, API show, download URL. */
async function expectRemoved(t: TestServer, sv: { id: string; output: string; download: string }) {
  expect(await t.running.deps.db.selectFrom('state_versions').select('id').where('id', '=', sv.id).executeTakeFirst()).toBeUndefined();
  expect(await outputsOf(t, sv.id)).toBe(0);
  expect(await blobsOf(t, sv.id)).toEqual([]);
  const show = await t.api('GET', `/api/v2/state-versions/${sv.id}`);
  expect(show.status).toBe(404);
  expect(show.json.errors[0].detail).toBe(`state version "${sv.id}" not found, or you are not authorized to see it`);
  expect((await t.api('GET', `/api/v2/state-versions/${sv.id}/outputs`)).status).toBe(404);
  expect((await t.api('GET', `/api/v2/state-version-outputs/${sv.output}`)).status).toBe(404);
  expect((await fetch(sv.download)).status).toBe(404);
}

/** Asserts the version is all there: outputs, both blobs, API show, download. */
async function expectKept(t: TestServer, sv: { id: string; output: string; download: string }) {
  expect(await outputsOf(t, sv.id)).toBe(OUTPUTS_PER_VERSION);
  expect(await blobsOf(t, sv.id)).toHaveLength(2);
  const shown = await t.api('GET', `/api/v2/state-versions/${sv.id}`);
  expect(shown.status).toBe(200);
  expect((await t.api('GET', `/api/v2/state-version-outputs/${sv.output}`)).status).toBe(200);
  const dl = await fetch(shown.json.data.attributes['hosted-state-download-url']);
  expect(dl.status).toBe(200);
  expect(JSON.parse(await dl.text()).lineage).toBe(JSON.parse(S1.toString('utf8')).lineage);
}

const retentionLogs = (lines: LogLine[]) => lines.filter((l) => l.msg === 'data retention: removed data older than the policy keeps');

describe('data retention sweep', () => {
  /**
   * Each organization gets the same history, relative to the sweep at S: workspace "app" with
   * versions 40, 11 and 9 days old and a current one a day old; workspace "old" whose only
   * (current) version is 40 days old.
   */
  async function history(t: TestServer, clock: ManualClock, org: string, S: number) {
    await createOrg(t, org);
    const app = await createWorkspace(t, org, 'app');
    const old = await createWorkspace(t, org, 'old');
    await lock(t, app.id);
    await lock(t, old.id);
    const at = async (ago: number, wsId: string, serial: number) => {
      clock.set(new Date(S - ago));
      return push(t, wsId, serial);
    };
    return {
      oldCurrent: await at(40 * DAY, old.id, 1),
      d40: await at(40 * DAY, app.id, 1),
      d11: await at(11 * DAY, app.id, 2),
      d9: await at(9 * DAY, app.id, 3),
      current: await at(1 * DAY, app.id, 4),
    };
  }

  it('applies each organization its effective policy: its own, else the installation default; dont-delete keeps all', async () => {
    const S = Date.parse('2026-06-01T12:00:00.000Z');
    const clock = new ManualClock(new Date(S - 50 * DAY));
    const { t, lines } = await start(freshDir(), clock, { TERRACE_DATA_RETENTION_DAYS: '5' });
    const acme = await history(t, clock, 'acme', S);
    const hooli = await history(t, clock, 'hooli', S);
    // initech has no policy of its own: the installation default (5 days) governs it.
    const initech = await history(t, clock, 'initech', S);
    await setPolicy(t, 'acme', 10);
    await setPolicy(t, 'hooli', 'dont-delete');

    clock.set(new Date(S));
    await refreshDownloads(t, [acme, initech, hooli].flatMap((h) => Object.values(h)));
    expect(await runDue(t)).toBe(1);

    // 10 days: the 40- and 11-day-old versions go, the 9-day-old and both current ones stay.
    for (const sv of [acme.d40, acme.d11]) await expectRemoved(t, sv);
    for (const sv of [acme.d9, acme.current, acme.oldCurrent]) await expectKept(t, sv);
    expect(await listed(t, 'acme', 'app')).toEqual([acme.current.id, acme.d9.id]);
    expect(await listed(t, 'acme', 'old')).toEqual([acme.oldCurrent.id]);
    const current = await t.api('GET', `/api/v2/workspaces/${(await createdWs(t, 'acme', 'old')).id}/current-state-version`);
    expect(current.json.data.id).toBe(acme.oldCurrent.id);

    // The 5-day installation default also takes the 9-day-old one.
    for (const sv of [initech.d40, initech.d11, initech.d9]) await expectRemoved(t, sv);
    for (const sv of [initech.current, initech.oldCurrent]) await expectKept(t, sv);

    // dont-delete: everything stays, however old.
    for (const sv of Object.values(hooli)) await expectKept(t, sv);
    expect(await listed(t, 'hooli', 'app')).toHaveLength(4);

    // Logged once per organization that lost something, with counts and the ids.
    const logs = retentionLogs(lines);
    expect(logs.map((l) => l.organization)).toEqual([await orgId(t, 'acme'), await orgId(t, 'initech')].sort());
    const byOrg = Object.fromEntries(logs.map((l) => [l.organization, l]));
    expect(byOrg[await orgId(t, 'acme')]).toMatchObject({
      level: 30,
      olderThanDays: 10,
      createdBefore: rfc3339(S - 10 * DAY),
      removed: { 'state-versions': 2, 'state-version-outputs': 2 * OUTPUTS_PER_VERSION },
    });
    expect([...byOrg[await orgId(t, 'acme')].sample].sort()).toEqual([acme.d40.id, acme.d11.id].sort());
    expect(byOrg[await orgId(t, 'initech')]).toMatchObject({
      olderThanDays: 5,
      removed: { 'state-versions': 3, 'state-version-outputs': 3 * OUTPUTS_PER_VERSION },
    });
    expect(lines.filter((l) => l.msg === 'data retention sweep finished').at(-1)).toMatchObject({
      organizations: 2,
      removed: { 'state-versions': 5, 'state-version-outputs': 5 * OUTPUTS_PER_VERSION },
    });
    expect(await t.running.deps.db.selectFrom('blob_deletions').selectAll().execute()).toEqual([]);
  });

  it('keeps everything of an organization without a policy when the installation sets no default', async () => {
    const S = Date.parse('2026-06-01T12:00:00.000Z');
    const clock = new ManualClock(new Date(S - 50 * DAY));
    const { t, lines } = await start(freshDir(), clock);
    const keep = await history(t, clock, 'keepall', S);
    const policed = await history(t, clock, 'policed', S);
    await setPolicy(t, 'policed', 10);
    clock.set(new Date(S));
    await refreshDownloads(t, [policed.d11]);
    expect(await runDue(t)).toBe(1);
    for (const sv of Object.values(keep)) await expectKept(t, sv);
    await expectRemoved(t, policed.d11);
    await expectKept(t, policed.d9);
    expect(retentionLogs(lines).map((l) => l.organization)).toEqual([await orgId(t, 'policed')]);
  });

  it('is one job row that re-enqueues itself every interval, across restarts', async () => {
    const dir = freshDir();
    const clock = new ManualClock('2026-06-01T12:00:00.000Z');
    const first = await start(dir, clock);
    const row = (await sweepRows(first.t))[0]!;
    expect(await sweepRows(first.t)).toHaveLength(1);
    // The first run is an interval after the very first start, so a start does no sweeping.
    expect(row).toMatchObject({ run_at: '2026-06-01T13:00:00.000Z', attempts: 0, locked_until: null, last_error: null, payload: '{"run":null}' });
    expect(await runDue(first.t)).toBe(0);
    // Several processes starting at once still leave one row.
    await Promise.all([first.t.running.jobs.ensureRecurring(), first.t.running.jobs.ensureRecurring()]);
    await first.t.close({ keepData: true });

    clock.advance(30 * 60_000);
    const second = await start(dir, clock);
    expect(await sweepRows(second.t)).toEqual([row]);
    clock.advance(30 * 60_000);
    expect(await runDue(second.t)).toBe(1);
    expect(await sweepRows(second.t)).toEqual([{ ...row, run_at: '2026-06-01T14:00:00.000Z' }]);
    expect(second.lines.filter((l) => l.msg === 'data retention sweep finished')).toHaveLength(1);
    expect(await runDue(second.t)).toBe(0);
    await second.t.close({ keepData: true });

    // A shorter interval configured later applies from the next start, not after the old one.
    const third = await start(dir, clock, { TERRACE_RETENTION_SWEEP_INTERVAL: '600' });
    const shortened = (await sweepRows(third.t))[0]!;
    expect(shortened).toMatchObject({ id: row.id, run_at: '2026-06-01T13:10:00.000Z' });
    expect(shortened.run_at).toMatch(RFC3339);
    clock.advance(10 * 60_000);
    expect(await runDue(third.t)).toBe(1);
    expect((await sweepRows(third.t))[0]!.run_at).toBe('2026-06-01T13:20:00.000Z');
  });

  it('resumes after a crash between batches: nothing points at a missing blob, every blob goes, the log counts the whole run', async () => {
    const dir = freshDir();
    const S = Date.parse('2026-06-01T12:00:00.000Z');
    const clock = new ManualClock(new Date(S - 30 * DAY));
    const a = await start(dir, clock, { TERRACE_RETENTION_BATCH_SIZE: '2' });
    const orgs = ['acme', 'zeta'];
    const old: Record<string, { id: string; output: string; download: string }[]> = {};
    const kept: { id: string; output: string; download: string }[] = [];
    for (const org of orgs) {
      await createOrg(a.t, org);
      await setPolicy(a.t, org, 10);
      const ws = await createWorkspace(a.t, org, 'app');
      await lock(a.t, ws.id);
      old[org] = [];
      clock.set(new Date(S - 30 * DAY));
      for (let serial = 1; serial <= 5; serial++) old[org].push(await push(a.t, ws.id, serial));
      clock.set(new Date(S - 1 * DAY));
      kept.push(await push(a.t, ws.id, 6));
    }
    // An organization walked in id order comes first; its versions are cut short by the crash.
    const [firstOrg, secondOrg] = (await Promise.all(orgs.map(async (o) => [await orgId(a.t, o), o] as const))).sort();
    const firstVersions = old[firstOrg![1]]!;

    clock.set(new Date(S));
    await refreshDownloads(a.t, Object.values(old).flat());
    // The process dies during the blob deletes of the second batch: the first blob delete of that
    // batch never returns, and the process is gone.
    let deletes = 0;
    let reached!: () => void;
    const crashed = new Promise<void>((r) => (reached = r));
    const blobs = a.t.running.deps.blobs;
    const realDelete = blobs.delete.bind(blobs);
    blobs.delete = (key: string) => {
      deletes++;
      if (deletes <= 4) return realDelete(key);
      reached();
      return new Promise<void>(() => undefined);
    };
    void runDue(a.t);
    await crashed;

    // Two batches' rows are gone (with their outputs); the second batch's blobs are still there, recorded for deletion.
    const db = a.t.running.deps.db;
    const remaining = await db.selectFrom('state_versions').select('id').where('id', 'in', firstVersions.map((v) => v.id)).execute();
    expect(remaining).toHaveLength(1);
    const recorded = (await db.selectFrom('blob_deletions').select('key').execute()).map((r) => r.key).sort();
    expect(recorded).toHaveLength(4);
    for (const key of recorded) expect(await blobs.stat(key)).not.toBeNull();
    // No row points at a blob that is gone.
    for (const sv of await db.selectFrom('state_versions').selectAll().execute()) {
      for (const key of [sv.blob_key, sv.json_outputs_blob_key]) expect(await blobs.stat(key!)).not.toBeNull();
    }
    const held = (await sweepRows(a.t))[0]!;
    expect(held.locked_until).not.toBeNull();
    expect(JSON.parse(held.payload).run.org).toMatchObject({ id: firstOrg![0], removed: { 'state-versions': 4 } });
    expect(retentionLogs(a.lines)).toEqual([]);
    await a.t.close({ keepData: true });

    // The next process waits for the dead one's lease, then takes the run over from where it stopped.
    const b = await start(dir, clock, { TERRACE_RETENTION_BATCH_SIZE: '2' });
    expect(await runDue(b.t)).toBe(0);
    clock.advance(61_000);
    expect(await runDue(b.t)).toBe(1);
    // The same download URLs, now served by the new process.
    for (const sv of Object.values(old).flat()) sv.download = sv.download.replace(a.t.url, b.t.url);
    for (const org of orgs) for (const sv of old[org]!) await expectRemoved(b.t, sv);
    for (const sv of kept) await expectKept(b.t, sv);
    for (const key of recorded) expect(await b.t.running.deps.blobs.stat(key)).toBeNull();
    expect(await b.t.running.deps.db.selectFrom('blob_deletions').selectAll().execute()).toEqual([]);

    // Each organization logged once, the crashed one with everything the run removed from it.
    const logs = retentionLogs(b.lines);
    expect(logs.map((l) => l.organization)).toEqual([firstOrg![0], secondOrg![0]]);
    for (const l of logs) {
      expect(l.removed).toEqual({ 'state-versions': 5, 'state-version-outputs': 5 * OUTPUTS_PER_VERSION });
    }
    expect([...logs[0]!.sample].sort()).toEqual(firstVersions.map((v) => v.id).sort());
    const [done] = await sweepRows(b.t);
    expect(done).toMatchObject({ id: held.id, attempts: 0, locked_until: null, last_error: null, payload: '{"run":null}', run_at: rfc3339(clock.now().getTime() + HOUR) });
  });

  it('retries a failing blob store with backoff and, failing for good, resumes at the next interval instead of giving up', async () => {
    const S = Date.parse('2026-06-01T12:00:00.000Z');
    const clock = new ManualClock(new Date(S - 30 * DAY));
    const { t, lines } = await start(freshDir(), clock);
    await createOrg(t, 'acme');
    await setPolicy(t, 'acme', 10);
    const ws = await createWorkspace(t, 'acme', 'app');
    await lock(t, ws.id);
    const doomed = await push(t, ws.id, 1);
    clock.set(new Date(S - DAY));
    const current = await push(t, ws.id, 2);

    clock.set(new Date(S));
    await refreshDownloads(t, [doomed]);
    const blobs = t.running.deps.blobs;
    const realDelete = blobs.delete.bind(blobs);
    blobs.delete = async () => {
      throw new Error('blob store unavailable');
    };
    expect(await runDue(t)).toBe(1);
    // The rows went with the transaction; their blobs wait, recorded.
    const show = await t.api('GET', `/api/v2/state-versions/${doomed.id}`);
    expect(show.status).toBe(404);
    expect(await blobsOf(t, doomed.id)).toHaveLength(2);
    expect(await t.running.deps.db.selectFrom('blob_deletions').selectAll().execute()).toHaveLength(2);
    const [retrying] = await sweepRows(t);
    expect(retrying).toMatchObject({ attempts: 1, last_error: 'blob store unavailable', locked_until: null, run_at: rfc3339(S + 1000) });

    // Every further attempt fails too; after the last one the sweep is rescheduled, not parked.
    for (let i = 0; i < 7; i++) {
      clock.advance(11 * 60_000);
      expect(await runDue(t)).toBe(1);
    }
    const rescheduled = (await sweepRows(t))[0]!;
    expect(rescheduled).toMatchObject({ attempts: 0, last_error: 'blob store unavailable', locked_until: null, run_at: rfc3339(clock.now().getTime() + HOUR) });
    expect(JSON.parse(rescheduled.payload).run.org).toMatchObject({ removed: { 'state-versions': 1 } });
    expect(retentionLogs(lines)).toEqual([]);
    expect(lines.some((l) => l.msg === 'recurring job failed for good this time; its next run resumes it' && l.level === 50)).toBe(true);

    // With the blob store back, the next run finishes what the failed ones recorded.
    blobs.delete = realDelete;
    clock.advance(HOUR);
    expect(await runDue(t)).toBe(1);
    await expectRemoved(t, doomed);
    await expectKept(t, current);
    expect(await t.running.deps.db.selectFrom('blob_deletions').selectAll().execute()).toEqual([]);
    expect((await sweepRows(t))[0]).toMatchObject({ attempts: 0, last_error: null, payload: '{"run":null}' });
    // The resumed run logs what the failed attempts removed.
    expect(retentionLogs(lines)).toEqual([
      expect.objectContaining({ removed: { 'state-versions': 1, 'state-version-outputs': OUTPUTS_PER_VERSION }, sample: [doomed.id] }),
    ]);
  });
});

/** The internal id (the API addresses organizations by name); logs name organizations by it. */
async function orgId(t: TestServer, name: string): Promise<string> {
  const r = await t.running.deps.db.selectFrom('organizations').select('id').where('name', '=', name).executeTakeFirstOrThrow();
  return r.id;
}

async function createdWs(t: TestServer, org: string, name: string) {
  const r = await t.api('GET', `/api/v2/organizations/${org}/workspaces/${name}`);
  return r.json.data;
}
