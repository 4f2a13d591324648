import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { blobFiles, download, orgNamed, pushSecretState } from './helpers.js';

let t: TestServer;
const dataDir = tempDir('terrace-enc-keyless-');

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' }, { dataDir });
  await orgNamed(t, 'acme');
});

afterAll(async () => {
  await t?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

// A sensitive blob with no data key on record is served as stored (it predates encryption); one
// that is nonetheless sealed has lost its key, and its ciphertext is not content to serve.
it('refuses a sealed blob whose data key is not on record rather than serve its ciphertext', async () => {
  const p = await pushSecretState(t, 'acme', 'keyless', 'keyless');
  const sv = await t.api('GET', `/api/v2/state-versions/${p.svId}`);
  const file = blobFiles(dataDir, `${p.svId}.json`)[0]!;
  const blobKey = path.relative(path.join(dataDir, 'blobs'), file).split(path.sep).join('/');
  const removed = await t.running.deps.db.deleteFrom('blob_data_keys').where('blob_key', '=', blobKey).executeTakeFirst();
  expect(Number(removed.numDeletedRows)).toBe(1);
  const d = await download(sv.json.data.attributes['hosted-state-download-url']);
  expect(d.status).toBe(500);
  const body = JSON.parse(d.body.toString('utf8'));
  expect(body.errors[0].title).toBe('stored data unreadable');
  expect(body.errors[0].detail).toMatch(/failed its integrity check/);
  expect(d.body.subarray(0, 7).toString('latin1')).not.toBe('TRSEALD');
});
