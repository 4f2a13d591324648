import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_STATE_VERSION } from '../../src/state/processing.js';
import { forward, spawnServer, startRoundRobin, type RoundRobin, type ServerProcess } from '../helpers/instances.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { startS3Fake, type S3Fake } from '../helpers/s3.js';
import { callApi, tempDir } from '../helpers/server.js';
import { jsonStateOutputs, stateFixture, stateVersionBody } from '../helpers/state.js';
import { postgresAdminUrl, testStore } from '../helpers/store.js';

/**
 * A job claimed by an instance that then dies (SIGKILL, no goodbye) is finished by another
 * instance once the claim's lease lapses, and its work is done once. Two Terrace processes on one
 * PostgreSQL database and one S3 store; each reaches the store through its own gate, which holds
 * reads of state files while closed, so the instance that claims the processing job is seen (its
 * read arrives at its gate) and kept inside the job until it is killed. postgres project only.
 */

/**
 * A pass-through to the S3 store that, while closed, holds reads of a state file (not the JSON
 * ones) after its first: the first is the creating request's own check of the file, before the
 * version and its processing job are committed; a later one is the job's. read is shared by the
 * gates, as the request and the job may be on different instances.
 */
interface Gate {
  url: string;
  /** State file reads waiting at the gate (their paths). */
  held: string[];
  open(): void;
  close(): Promise<void>;
}

const STATE_FILE = /\/state-versions\/[^/]+(?<!-json-state|-json-outputs)\.json(\.sealed)?$/;

async function startGate(s3Endpoint: string, read: Set<string>): Promise<Gate> {
  const target = new URL(s3Endpoint);
  let closed = true;
  const waiting: (() => void)[] = [];
  const held: string[] = [];
  const server = http.createServer((req, res) => {
    const pass = () => forward(req, res, target);
    const p = new URL(req.url ?? '/', 'http://gate').pathname;
    if (req.method === 'GET' && STATE_FILE.test(p) && read.has(p) && closed) {
      held.push(p);
      waiting.push(pass);
      return;
    }
    if (req.method === 'GET') read.add(p);
    pass();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    open() {
      closed = false;
      for (const pass of waiting.splice(0)) pass();
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Polls (bounded: about 30 s) until check returns something other than undefined. */
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The instance's JSON log lines. */
function logLines(p: ServerProcess): Record<string, unknown>[] {
  return p
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

let s3: S3Fake;
let db: { url: string; drop(): Promise<void> };
let sql: pg.Client;
let proxy: RoundRobin;
const gates: Gate[] = [];
const instances: ServerProcess[] = [];

describe.skipIf(testStore !== 'postgres')('a state processing job whose instance is killed while it holds the job', () => {
  beforeAll(async () => {
    s3 = await startS3Fake();
    db = await createTestDatabase(postgresAdminUrl());
    proxy = await startRoundRobin();
    const read = new Set<string>();
    for (let i = 0; i < 2; i++) gates.push(await startGate(s3.env.TERRACE_S3_ENDPOINT!, read));
    const env = {
      ...s3.env,
      TERRACE_DATABASE_URL: db.url,
      TERRACE_SECRET_KEY: 'one-key-shared-by-both-instances-0123456789',
      TERRACE_PUBLIC_URL: proxy.url,
      // The shortest lease: the survivor may take the job over 3 s after the holder's last heartbeat.
      TERRACE_JOB_LEASE_SECONDS: '3',
      // "job done" (with its attempt) is a debug line.
      TERRACE_LOG_LEVEL: 'debug',
    };
    for (const gate of gates) instances.push(await spawnServer(tempDir(), { ...env, TERRACE_S3_ENDPOINT: gate.url }));
    proxy.targets.push(...instances.map((i) => i.url));
    sql = new pg.Client({ connectionString: db.url, connectionTimeoutMillis: 10_000 });
    await sql.connect();
  }, 120_000);

  afterAll(async () => {
    for (const i of instances) await i.kill();
    await sql?.end();
    for (const g of gates) await g.close();
    await proxy?.close();
    await db?.drop();
    await s3?.close();
  });

  it('is finished by the other instance, once: processed with its outputs, one set of them, the job gone', async () => {
    const api = (method: string, p: string, body?: unknown) => callApi(proxy.url, method, p, { body });
    expect((await api('POST', '/api/v2/organizations', { data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@example.com' } } })).status).toBe(201);
    const ws = await api('POST', '/api/v2/organizations/acme/workspaces', { data: { type: 'workspaces', attributes: { name: 'prod' } } });
    expect(ws.status).toBe(201);
    const wsId = ws.json.data.id as string;
    expect((await api('POST', `/api/v2/workspaces/${wsId}/actions/lock`, { reason: 'Locked by Terraform' })).status).toBe(200);

    const state = stateFixture('outputs-serial1.json');
    const sv = await api('POST', `/api/v2/workspaces/${wsId}/state-versions`, stateVersionBody(state));
    expect(sv.status).toBe(201);
    const svId = sv.json.data.id as string;

    // One instance claims the job and reads the state file: its read waits at its gate.
    const holder = await until('an instance to claim the job and read the state', () => {
      const at = gates.findIndex((g) => g.held.length > 0);
      return at < 0 ? undefined : at;
    });
    const survivor = 1 - holder;
    expect(gates[holder]!.held).toHaveLength(1);
    expect(gates[holder]!.held[0]).toContain(svId);
    expect(gates[survivor]!.held).toEqual([]);
    const jobQuery = { text: 'select id, attempts, locked_until, claim_token, run_at, last_error from jobs where kind = $1', values: [PROCESS_STATE_VERSION] };
    const claimed = (await sql.query(jobQuery)).rows;
    expect(claimed).toHaveLength(1);
    expect(claimed[0]).toMatchObject({ attempts: 1, last_error: null });
    expect(claimed[0].claim_token).not.toBeNull();
    expect(claimed[0].locked_until).not.toBeNull();
    expect((await api('GET', `/api/v2/state-versions/${svId}`)).json.data.attributes['resources-processed']).toBe(false);

    await instances[holder]!.kill();
    proxy.targets.splice(0, proxy.targets.length, instances[survivor]!.url);
    gates[survivor]!.open();

    // The lease lapses (no heartbeat from the dead holder) and the survivor takes the job over.
    const done = await until('the survivor to process the state version', async () => {
      const r = await api('GET', `/api/v2/state-versions/${svId}`);
      return r.json.data.attributes['resources-processed'] === true ? r : undefined;
    });
    expect(done.json.data.attributes['resources-processed']).toBe(true);

    const expected = jsonStateOutputs(state) as Record<string, { value: unknown; type: unknown; sensitive: boolean }>;
    const outs = await api('GET', `/api/v2/state-versions/${svId}/outputs?page[size]=100`);
    expect(outs.status).toBe(200);
    const got = Object.fromEntries(outs.json.data.map((o: any) => [o.attributes.name, { sensitive: o.attributes.sensitive, value: o.attributes.value }]));
    expect(Object.keys(got).sort()).toEqual(Object.keys(expected).sort());
    for (const [name, o] of Object.entries(expected)) {
      expect(got[name]).toEqual({ sensitive: o.sensitive, value: o.sensitive ? null : o.value });
    }

    // Effects once: one set of output rows, the job row gone (done, not failed or waiting).
    const rows = (await sql.query('select name, count(*)::int as n from state_version_outputs where state_version_id = $1 group by name', [svId])).rows;
    expect(rows.map((r) => r.name).sort()).toEqual(Object.keys(expected).sort());
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect((await sql.query(jobQuery)).rows).toEqual([]);
    expect((await sql.query('select resources_processed from state_versions where id = $1', [svId])).rows).toEqual([{ resources_processed: 1 }]);

    // The dead holder processed nothing; the survivor did it once, as the job's second attempt.
    const processed = (p: ServerProcess) => logLines(p).filter((l) => l.msg === 'state version processed' && l.stateVersion === svId);
    expect(processed(instances[holder]!)).toEqual([]);
    expect(processed(instances[survivor]!)).toHaveLength(1);
    const finished = logLines(instances[survivor]!).filter((l) => l.msg === 'job done' && l.kind === PROCESS_STATE_VERSION);
    expect(finished.map((l) => l.attempt)).toEqual([2]);
    expect(logLines(instances[survivor]!).filter((l) => l.kind === PROCESS_STATE_VERSION && Number(l.level) >= 40)).toEqual([]);
  }, 90_000);
});
