import fs from 'node:fs';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { download, filesContaining, orgNamed, pushSecretState } from './helpers.js';

// The grep of test/encryption/at-rest.test.ts with the s3 driver: every object s3rver stored
// (it keeps each as files under its directory) and the data directory hold no secret.
const s3Dir = tempDir('terrace-enc-s3rver-');
const dataDir = tempDir('terrace-enc-s3-');
let s3: S3rver;
let t: TestServer;

beforeAll(async () => {
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3Dir, configureBuckets: [{ name: 'sealed' }] });
  const { port } = await s3.run();
  t = await startTestServer(
    {
      TERRACE_JOBS: 'false',
      TERRACE_BLOB_DRIVER: 's3',
      TERRACE_S3_BUCKET: 'sealed',
      TERRACE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      TERRACE_S3_ACCESS_KEY_ID: 'S3RVER',
      TERRACE_S3_SECRET_ACCESS_KEY: 'S3RVER',
      TERRACE_S3_FORCE_PATH_STYLE: 'true',
      TERRACE_S3_PREFIX: 'terrace',
    },
    { dataDir },
  );
  await orgNamed(t, 'acme');
});

afterAll(async () => {
  await t?.close();
  await s3?.close();
  fs.rmSync(s3Dir, { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The objects s3rver holds, by key, with their stored bytes. */
async function storedObjects(): Promise<Map<string, Buffer>> {
  const inner = (t.running.deps.blobs as any).inner;
  const out = new Map<string, Buffer>();
  for await (const item of inner.list('')) {
    const parts: Buffer[] = [];
    for await (const c of await inner.get(item.key)) parts.push(c as Buffer);
    out.set(item.key, Buffer.concat(parts));
  }
  return out;
}

describe('state at rest on s3', () => {
  it('leaves no secret in any stored object nor in the data directory, and reads back exactly', async () => {
    expect(t.running.deps.blobs.driver).toBe('s3');
    const p = await pushSecretState(t, 'acme', 'on-s3', 's3');
    expect(await t.running.jobs.runDue()).toBe(1);
    const objects = await storedObjects();
    // The state, its JSON state and JSON outputs: all sealed.
    expect([...objects.keys()].filter((k) => k.includes(p.svId)).length).toBe(3);
    for (const [key, bytes] of objects) {
      if (key.includes(p.svId)) expect(bytes.subarray(0, 8).toString('latin1')).toBe('TRSEALD\x01');
      for (const secret of p.secrets) {
        expect(bytes.includes(secret)).toBe(false);
        expect(bytes.includes(Buffer.from(secret).toString('base64'))).toBe(false);
      }
    }
    // s3rver's own files (object bodies and metadata) and Terrace's data directory.
    expect(filesContaining(s3Dir, p.secrets)).toEqual([]);
    expect(filesContaining(dataDir, p.secrets)).toEqual([]);

    const sv = await t.api('GET', `/api/v2/state-versions/${p.svId}`);
    const d = await download(sv.json.data.attributes['hosted-state-download-url']);
    expect(d.status).toBe(200);
    expect(d.body.equals(p.state)).toBe(true);
    const outs = await t.api('GET', `/api/v2/state-versions/${p.svId}/outputs`);
    const secret = outs.json.data.find((o: any) => o.attributes.name === 'db_password');
    expect((await t.api('GET', `/api/v2/state-version-outputs/${secret.id}`)).json.data.attributes.value).toBe(p.secrets[2]);
  });
});
