import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { claimUpload } from '../../src/db/upload-claims.js';
import { hashToken } from '../../src/identity/tokens.js';
import { startServer } from '../../src/server.js';
import { createOrg } from '../helpers/organizations.js';
import { createModule, createVersion, moduleTarball, upload } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace, lock, md5, stateFixture, stateSnapshot } from '../helpers/state.js';
import { storeEnv } from '../helpers/store.js';

let t: TestServer;
const S1 = stateFixture('outputs-serial1.json');

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: '65536' });
  await createOrg(t, 'acme');
});

afterAll(async () => {
  await t?.close();
});

async function pendingVersion(name: string) {
  const ws = await createWorkspace(t, 'acme', name);
  await lock(t, ws.id);
  const s = JSON.parse(S1.toString('utf8'));
  const r = await t.api('POST', `/api/v2/workspaces/${ws.id}/state-versions`, {
    body: { data: { type: 'state-versions', attributes: { serial: s.serial, md5: md5(S1), lineage: s.lineage } } },
  });
  expect(r.status).toBe(201);
  return { wsId: ws.id, sv: r.json.data };
}

const jsonStateRow = async (id: string) =>
  t.running.deps.db.selectFrom('state_versions').select(['json_state_blob_key', 'json_upload_token_hash']).where('id', '=', id).executeTakeFirstOrThrow();

describe('a refused upload leaves its URL as it was', () => {
  it.each<[string, Buffer | string, number, RegExp]>([
    ['a body that is not one JSON object', '[1,2', 422, /the JSON state is not usable/],
    ['two JSON values', '{}{}', 422, /the JSON state is not usable/],
    ['a body over TERRACE_MAX_STATE_BYTES', Buffer.alloc(70_000, 32), 413, /over the limit of 65536 bytes/],
  ])('JSON state URL: refuses %s, stores nothing, and takes a good body on retry', async (_n, bad, status, detail) => {
    const { sv } = await pendingVersion(`json-${status}-${Math.random().toString(36).slice(2, 8)}`);
    const url = sv.attributes['hosted-json-state-upload-url'];
    const before = await stateSnapshot(t);
    const rowBefore = await jsonStateRow(sv.id);
    const r = await upload(url, bad);
    expect(r.status).toBe(status);
    expect(r.json.errors[0].detail).toMatch(detail);
    expect(await stateSnapshot(t)).toEqual(before);
    expect(await jsonStateRow(sv.id)).toEqual(rowBefore);

    const good = Buffer.from(JSON.stringify({ format_version: '1.0', values: { outputs: {} } }));
    const retry = await upload(url, good);
    expect(retry.status).toBe(200);
    expect(retry.json.data).toEqual({ id: sv.id, type: 'state-versions', attributes: { status: 'pending' } });
    expect((await jsonStateRow(sv.id)).json_upload_token_hash).toBeNull();
    // Used once accepted.
    expect((await upload(url, good)).status).toBe(404);
    expect((await upload(sv.attributes['hosted-state-upload-url'], S1)).status).toBe(200);
    const shown = await t.api('GET', `/api/v2/state-versions/${sv.id}`);
    const file = await fetch(shown.json.data.attributes['hosted-json-state-download-url']);
    expect(Buffer.from(await file.arrayBuffer()).equals(good)).toBe(true);
    await t.running.jobs.runDue();
  });

  it('a URL being uploaded is not usable by a second PUT at the same time, and is again once the first is refused', async () => {
    const { sv } = await pendingVersion('json-claimed');
    const url: string = sv.attributes['hosted-json-state-upload-url'];
    const token = url.slice(url.lastIndexOf('/') + 1);
    const db = t.running.deps.db;
    // Another PUT holds the claim: this one finds no URL.
    const held = await claimUpload(db, 'state-json', hashToken(token), new Date(t.clock.now()).toISOString());
    expect(held?.id).toBe(sv.id);
    expect((await upload(url, '{}')).status).toBe(404);
    const { releaseUpload } = await import('../../src/db/upload-claims.js');
    expect(await releaseUpload(db, 'state-json', sv.id, hashToken(token))).toBe(true);
    expect((await upload(url, '{}')).status).toBe(200);
  });
});

describe('one claim for every kind of upload', () => {
  it('a module upload claimed when the process died is usable again after a restart', async () => {
    await createModule(t, 'acme', 'net', 'aws');
    const v = await createVersion(t, 'acme', 'net', 'aws', '1.0.0');
    const token = v.links.upload.slice(v.links.upload.lastIndexOf('/') + 1);
    const now = t.clock.now().toISOString();
    // What a PUT does before its bytes arrive; then the process is gone.
    expect(await claimUpload(t.running.deps.db, 'module', hashToken(token), now, { status: 'uploading' })).toBeDefined();
    await t.running.close();
    const restarted = await startServer(
      loadConfig({ PORT: '0', TERRACE_DATA_DIR: t.dataDir, TERRACE_LOG_LEVEL: 'silent', TERRACE_ADMIN_TOKEN: t.adminToken, TERRACE_JOBS: 'false', TERRACE_MAX_STATE_BYTES: '65536', ...storeEnv(t.dataDir) }),
      { clock: t.clock },
    );
    const url = v.links.upload.replace(/^https?:\/\/[^/]+/, restarted.url);
    const r = await upload(url, await moduleTarball());
    expect(r.status).toBe(200);
    expect(r.json.data.attributes.status).toBe('ok');
    expect((await upload(url, await moduleTarball())).status).toBe(404);
    await restarted.close();
  });
});
