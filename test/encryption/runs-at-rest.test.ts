import fs from 'node:fs';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';
import { createRun, putPlan } from '../helpers/runs.js';
import { blobFiles, filesContaining, orgNamed } from './helpers.js';

// What run tasks add to the blob store (configuration versions, plan JSON) is sealed like state.
const CONFIG_SECRET = 'cfg-secret-5e1f0c9a7d';
const PLAN_SECRET = 'plan-secret-9b2e4a61c3';
// Stored (level 0) gzip: the secret's bytes stand in the upload as they are, so a plaintext
// blob would be found by the grep below.
const CONFIG = gzipSync(Buffer.from(`main.tf\0variable "password" { default = "${CONFIG_SECRET}" }\n`), { level: 0 });
const PLAN = Buffer.from(JSON.stringify({ format_version: '1.2', variables: { password: { value: PLAN_SECRET } }, resource_changes: [] }));

let t: TestServer;
const dataDir = tempDir('terrace-enc-runs-');

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { dataDir });
  await orgNamed(t, 'acme');
});

afterAll(async () => {
  await t?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('configuration versions and plan JSON at rest', () => {
  it('seals both, serves back exactly the uploaded bytes, and leaves no secret in the data directory', async () => {
    expect(CONFIG.includes(CONFIG_SECRET)).toBe(true);
    const ws = await createWorkspace(t, 'acme', 'sealed-runs');
    const cv = await t.api('POST', `/api/v2/workspaces/${ws.id}/configuration-versions`, { body: { data: { type: 'configuration-versions', attributes: {} } } });
    expect(cv.status).toBe(201);
    const put = await fetch(t.url + new URL(cv.json.data.attributes['upload-url']).pathname, { method: 'PUT', body: CONFIG });
    expect(put.status).toBe(200);
    const run = await createRun(t, ws.id, cv.json.data.id);
    expect(run.status).toBe(201);
    const plan = await putPlan(t, run.json.data.id, PLAN);
    expect(plan.status).toBe(200);

    expect(filesContaining(dataDir, [CONFIG_SECRET, PLAN_SECRET])).toEqual([]);
    const sealed = [...blobFiles(dataDir, '.tar.gz'), ...blobFiles(dataDir, 'plan.json')];
    expect(sealed.length).toBe(2);
    for (const f of sealed) expect(fs.readFileSync(f).subarray(0, 8).toString('latin1')).toBe('TRSEALD\x01');

    const cfg = await fetch(`${t.url}/api/v2/configuration-versions/${cv.json.data.id}/download`, { headers: { Authorization: `Bearer ${t.adminToken}` } });
    expect(cfg.status).toBe(200);
    expect(Buffer.from(await cfg.arrayBuffer()).equals(CONFIG)).toBe(true);
    const pj = await fetch(`${t.url}/api/v2/runs/${run.json.data.id}/plan/json-output`, { headers: { Authorization: `Bearer ${t.adminToken}` } });
    expect(pj.status).toBe(200);
    expect(Buffer.from(await pj.arrayBuffer()).equals(PLAN)).toBe(true);
  });
});
