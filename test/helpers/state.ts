import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestServer } from './server.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'state');

/** A Terraform state file from test/fixtures/state, as bytes exactly as on disk. */
export function stateFixture(name: string): Buffer {
  return fs.readFileSync(path.join(FIXTURES, name));
}

export const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');

/**
 * The body go-tfe's StateVersions.Create sends: serial, md5 (hex of the raw file), lineage, the
 * file base64-encoded, optionally json-state-outputs. Overrides replace attributes.
 */
export function stateVersionBody(state: Buffer, overrides: Record<string, unknown> = {}) {
  const parsed = JSON.parse(state.toString('utf8')) as { serial: number; lineage: string };
  return {
    data: {
      type: 'state-versions',
      attributes: {
        serial: parsed.serial,
        md5: md5(state),
        lineage: parsed.lineage,
        state: state.toString('base64'),
        ...overrides,
      },
    },
  };
}

/** json-state-outputs as Terraform renders it (jsonstate outputs: sensitive, value, type). */
export function jsonStateOutputs(state: Buffer): Record<string, unknown> {
  const parsed = JSON.parse(state.toString('utf8')) as { outputs: Record<string, { value: unknown; type: unknown; sensitive?: boolean }> };
  return Object.fromEntries(
    Object.entries(parsed.outputs).map(([k, o]) => [k, { sensitive: o.sensitive === true, value: o.value, type: o.type }]),
  );
}

export async function createWorkspace(t: TestServer, org: string, name: string, token = t.adminToken, attributes: Record<string, unknown> = {}) {
  const r = await t.api('POST', `/api/v2/organizations/${org}/workspaces`, { token, body: { data: { type: 'workspaces', attributes: { name, ...attributes } } } });
  if (r.status !== 201) throw new Error(`create workspace ${name}: ${r.status} ${r.text}`);
  return r.json.data as { id: string; attributes: Record<string, any>; relationships: Record<string, any> };
}

export async function lock(t: TestServer, workspaceId: string, token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/workspaces/${workspaceId}/actions/lock`, { token, body: { reason: 'Locked by Terraform' } });
  if (r.status !== 200) throw new Error(`lock ${workspaceId}: ${r.status} ${r.text}`);
}

/** Creates a state version inline (go-tfe's Create); returns the response. */
export function pushState(t: TestServer, workspaceId: string, state: Buffer, overrides: Record<string, unknown> = {}, token = t.adminToken) {
  return t.api('POST', `/api/v2/workspaces/${workspaceId}/state-versions`, { token, body: stateVersionBody(state, overrides) });
}

/** Rows of the tables the state domain writes, and every blob under organizations/. */
export async function stateSnapshot(t: TestServer) {
  const db = t.running.deps.db;
  const count = async (table: 'state_versions' | 'state_version_outputs') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  const blobs: string[] = [];
  for await (const b of t.running.deps.blobs.list('organizations/')) blobs.push(b.key);
  // Recurring jobs (the retention sweep) are one standing row each, not work a request left.
  const jobs = await db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('unique_key', 'is', null).executeTakeFirstOrThrow();
  return { stateVersions: await count('state_versions'), outputs: await count('state_version_outputs'), jobs: Number(jobs.n), blobs: blobs.sort() };
}
