import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModule, createOrganization, createVersion, moduleTarball, upload } from '../helpers/registry.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** A .tar.gz holding one file of `size` zeros, written to disk as it is generated (never held in memory). */
async function zerosArchive(file: string, size: number): Promise<void> {
  const header = new tar.Header({ path: 'zeros.bin', size, mode: 0o644, type: 'File', mtime: new Date(0) });
  header.encode();
  const chunk = Buffer.alloc(MiB);
  async function* entries() {
    yield header.block!;
    for (let left = size; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
    yield Buffer.alloc(1024); // end-of-archive marker
  }
  await pipeline(Readable.from(entries()), zlib.createGzip({ level: 9 }), fs.createWriteStream(file));
}

async function blobCount(t: TestServer): Promise<number> {
  const root = path.join(t.dataDir, 'blobs');
  return fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.tar.gz')).length : 0;
}

describe('decompression bombs under the default limits', () => {
  let t: TestServer;
  let work: string;
  let bomb: Buffer;

  beforeAll(async () => {
    work = tempDir('terrace-bomb-');
    await zerosArchive(path.join(work, 'bomb.tar.gz'), GiB);
    bomb = fs.readFileSync(path.join(work, 'bomb.tar.gz')); // the compressed file: about 1 MB
    t = await startTestServer();
    await createOrganization(t, 'acme');
    await createModule(t, 'acme', 'bomb', 'aws');
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('refuses 1 GiB of zeros in about 1 MB of gzip, marks the version errored with the reason, keeps no blob', async () => {
    expect(bomb.length).toBeLessThan(2 * MiB);
    const v = await createVersion(t, 'acme', 'bomb', 'aws', '1.0.0');
    const up = await upload(v.links.upload, bomb);
    expect(up.status).toBe(422);
    const limit = 100 * bomb.length;
    const reason = `the archive unpacks to more than ${limit} bytes, over 100 times its compressed size of ${bomb.length} bytes (TERRACE_MAX_ARCHIVE_RATIO): this looks like a decompression bomb; remove highly repetitive or generated files from the module package`;
    expect(up.json.errors[0].detail).toBe(reason);
    const show = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/bomb/aws/version?module_version=1.0.0');
    expect(show.json.data.attributes.status).toBe('errored');
    expect(show.json.data.attributes.error).toBe(reason);
    expect(await blobCount(t)).toBe(0);
    expect((await t.api('GET', '/v1/modules/acme/bomb/aws/versions')).json.modules[0].versions).toEqual([]);
  });

  it('does not apply the ratio below the floor: a small, very compressible module publishes', async () => {
    // 5 MiB of one repeated line gzips far better than 100:1, but stays under the 10 MiB floor.
    const tarball = await moduleTarball({ 'main.tf': 'variable "x" {}\n', 'big.txt': 'a'.repeat(5 * MiB) });
    expect(5 * MiB / tarball.length).toBeGreaterThan(100);
    const v = await createVersion(t, 'acme', 'bomb', 'aws', '1.1.0');
    const up = await upload(v.links.upload, tarball);
    expect(up.status).toBe(200);
    expect(up.json.data.attributes.status).toBe('ok');
  });
});

describe('the ratio bound is configurable', () => {
  let t: TestServer;
  afterAll(async () => {
    await t?.close();
  });

  it('with a lower floor and ratio, refuses what the defaults accept; with ratio 0 it is off', async () => {
    const tarball = await moduleTarball({ 'main.tf': 'variable "x" {}\n', 'big.txt': 'a'.repeat(2 * MiB) });
    t = await startTestServer({ TERRACE_MAX_ARCHIVE_RATIO: '10', TERRACE_ARCHIVE_RATIO_FLOOR_BYTES: String(MiB) });
    await createOrganization(t, 'acme');
    await createModule(t, 'acme', 'm', 'aws');
    const refused = await upload((await createVersion(t, 'acme', 'm', 'aws', '1.0.0')).links.upload, tarball);
    expect(refused.status).toBe(422);
    expect(refused.json.errors[0].detail).toContain(`over 10 times its compressed size of ${tarball.length} bytes (TERRACE_MAX_ARCHIVE_RATIO)`);
    await t.close();

    t = await startTestServer({ TERRACE_MAX_ARCHIVE_RATIO: '0', TERRACE_ARCHIVE_RATIO_FLOOR_BYTES: '0' });
    await createOrganization(t, 'acme');
    await createModule(t, 'acme', 'm', 'aws');
    const accepted = await upload((await createVersion(t, 'acme', 'm', 'aws', '1.0.0')).links.upload, tarball);
    expect(accepted.status).toBe(200);
  });
});
