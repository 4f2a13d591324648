import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import {
  BlobNotFoundError,
  BlobTooLargeError,
  FsBlobStore,
  InvalidBlobKeyError,
  S3BlobStore,
  createBlobStore,
  type BlobStore,
} from '../../src/blobs/index.js';
import { SealedBlobStore, type DataKeyRow, type DataKeyStore } from '../../src/blobs/sealed.js';
import { Secrets } from '../../src/secrets.js';

const MiB = 1024 * 1024;
const BUCKET = 'terrace-test';

/** Each call yields a store that shares nothing visible with the others (own dir / prefix). */
interface Harness {
  newStore(): BlobStore;
  /** Requests the backend saw since the last call (S3 only), to prove multipart was used. */
  takeRequests?(): string[];
  /** S3 only: a store on the shared bucket with a chosen prefix. */
  withPrefix?(prefix: string): S3BlobStore;
  close(): Promise<void>;
}

function tempDir(label: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `terrace-${label}-`));
}

async function fsHarness(): Promise<Harness> {
  const dirs: string[] = [];
  return {
    newStore() {
      const dir = tempDir('fs-blobs');
      dirs.push(dir);
      return new FsBlobStore(dir);
    },
    async close() {
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function s3Harness(): Promise<Harness> {
  const dir = tempDir('s3rver');
  const buckets = [{ name: BUCKET }];
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: buckets });
  const { port } = await server.run();
  let requests: string[] = [];
  server.httpServer?.on('request', (req) => requests.push(`${req.method} ${req.url}`));
  const stores: S3BlobStore[] = [];
  const withPrefix = (prefix: string) => {
    const store = s3Store(port, prefix);
    stores.push(store);
    return store;
  };
  return {
    newStore: () => withPrefix(`t-${randomUUID()}`),
    withPrefix,
    takeRequests() {
      const taken = requests;
      requests = [];
      return taken;
    },
    async close() {
      for (const store of stores) store.destroy();
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Data keys in memory, as src/encryption/store.ts keeps them in the database. */
function memoryDataKeys(): DataKeyStore {
  let rows: DataKeyRow[] = [];
  return {
    async insert(row) {
      rows.push(row);
    },
    async forBlob(blobKey) {
      return rows.filter((r) => r.blob_key === blobKey);
    },
    async deleteForBlob(blobKey, keepId) {
      rows = rows.filter((r) => r.blob_key !== blobKey || r.id === keepId);
    },
    async remove(id) {
      rows = rows.filter((r) => r.id !== id);
    },
  };
}

/** The encryption-at-rest wrapper over s3, every key treated as sensitive: it must behave as a store. */
async function sealedS3Harness(): Promise<Harness> {
  const s3 = await s3Harness();
  const secrets = new Secrets(Buffer.alloc(32, 9));
  return { ...s3, newStore: () => new SealedBlobStore(s3.newStore(), secrets, memoryDataKeys(), () => true) };
}

function s3Store(port: number, prefix: string): S3BlobStore {
  return new S3BlobStore({
    bucket: BUCKET,
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    prefix,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    forcePathStyle: true,
    checksumWhenRequired: true,
    partSizeBytes: 5 * MiB,
  });
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

const body = (data: string | Buffer) => Readable.from([Buffer.from(data)]);
const text = async (stream: Promise<Readable>) => (await readAll(await stream)).toString();

/** A lazily generated stream of `total` random bytes; `hash()` is valid once it has ended. */
function generated(total: number, opts: { failAfter?: number } = {}) {
  const hash = createHash('sha256');
  let sent = 0;
  const stream = new Readable({
    read() {
      if (opts.failAfter !== undefined && sent >= opts.failAfter) {
        this.destroy(new Error('source failed'));
        return;
      }
      if (sent >= total) {
        this.push(null);
        return;
      }
      const chunk = randomBytes(Math.min(256 * 1024, total - sent));
      sent += chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, hash: () => hash.digest('hex') };
}

async function expectRejects(promise: Promise<unknown>, type: new (...args: never[]) => Error) {
  await expect(promise).rejects.toBeInstanceOf(type);
}

async function listKeys(store: BlobStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const item of store.list(prefix)) keys.push(item.key);
  return keys.sort();
}

function tempFiles(store: BlobStore): string[] {
  const dir = path.join((store as FsBlobStore).rootDir, '.tmp');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

describe.each([
  { driver: 'fs' as const, start: fsHarness, sealed: false, label: 'fs' },
  { driver: 's3' as const, start: s3Harness, sealed: false, label: 's3' },
  { driver: 's3' as const, start: sealedS3Harness, sealed: true, label: 'sealed over s3' },
])('BlobStore conformance: $label', ({ driver, start, sealed }) => {
  let harness: Harness;
  let store: BlobStore;

  beforeAll(async () => {
    harness = await start();
    store = harness.newStore();
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('round-trips exact bytes with size and sha256', async () => {
    expect(store.driver).toBe(driver);
    const data = randomBytes(100_003);
    const result = await store.put('rt/a.bin', body(data), { contentType: 'application/octet-stream' });
    expect(result).toEqual({ size: data.length, sha256: sha256(data) });
    expect((await readAll(await store.get('rt/a.bin'))).equals(data)).toBe(true);
  });

  it('round-trips an empty object', async () => {
    const result = await store.put('rt/empty', Readable.from([]));
    expect(result).toEqual({ size: 0, sha256: sha256(Buffer.alloc(0)) });
    expect(await store.stat('rt/empty')).toEqual({ size: 0 });
    expect((await readAll(await store.get('rt/empty'))).length).toBe(0);
    expect((await readAll(await store.get('rt/empty', { start: 0 }))).length).toBe(0);
  });

  it('streams a 20 MiB put in several parts and reads it back intact', async () => {
    const size = 20 * MiB + 123;
    const source = generated(size);
    harness.takeRequests?.();
    const result = await store.put('big/blob', source.stream);
    expect(result).toEqual({ size, sha256: source.hash() });
    if (driver === 's3') {
      const parts = harness.takeRequests!().filter((r) => r.startsWith('PUT') && r.includes('partNumber='));
      expect(parts.length).toBe(5);
    }
    const back = createHash('sha256');
    for await (const chunk of await store.get('big/blob')) back.update(chunk as Buffer);
    expect(back.digest('hex')).toBe(result.sha256);
    expect(await store.stat('big/blob')).toEqual({ size });
  });

  it('serves inclusive byte ranges', async () => {
    await store.put('range/x', body('0123456789abcdef'));
    const read = (start: number, end?: number) => text(store.get('range/x', { start, end }));
    expect(await read(10)).toBe('abcdef');
    expect(await read(2, 5)).toBe('2345');
    expect(await read(7, 7)).toBe('7');
    // s3rver reads "bytes=0-0" as "bytes=0-" (it tests `end` for truthiness); real S3 does not.
    if (driver === 'fs') expect(await read(0, 0)).toBe('0');
    expect(await read(14, 100)).toBe('ef');
  });

  it('rejects malformed ranges', async () => {
    await store.put('range/y', body('abc'));
    await expectRejects(store.get('range/y', { start: 2, end: 1 }), RangeError);
    await expectRejects(store.get('range/y', { start: -1 }), RangeError);
  });

  it('stats size, and null when absent', async () => {
    await store.put('stat/x', body(Buffer.alloc(4321)));
    expect(await store.stat('stat/x')).toEqual({ size: 4321 });
    expect(await store.stat('stat/missing')).toBeNull();
    expect(await store.stat('stat')).toBeNull();
  });

  it('rejects get of an absent key with BlobNotFoundError', async () => {
    const err = await store.get('nope/never').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobNotFoundError);
    expect((err as BlobNotFoundError).key).toBe('nope/never');
  });

  it('deletes idempotently', async () => {
    await store.put('del/x', body('x'));
    await store.delete('del/x');
    expect(await store.stat('del/x')).toBeNull();
    await store.delete('del/x');
    await store.delete('del/never-existed');
    await expectRejects(store.get('del/x'), BlobNotFoundError);
  });

  it('overwrites replace the whole object', async () => {
    await store.put('ow/x', body('a much longer first version'));
    expect((await store.put('ow/x', body('v2'))).size).toBe(2);
    expect(await text(store.get('ow/x'))).toBe('v2');
  });

  it('accepts exactly maxBytes, and rejects one byte more storing nothing', async () => {
    expect((await store.put('max/ok', body(randomBytes(1000)), { maxBytes: 1000 })).size).toBe(1000);
    await expectRejects(store.put('max/small', body(randomBytes(1001)), { maxBytes: 1000 }), BlobTooLargeError);
    expect(await store.stat('max/small')).toBeNull();
    if (driver === 'fs') expect(tempFiles(store)).toEqual([]);
  });

  it('rejects a multi-part put over maxBytes and stores nothing', async () => {
    // Over one part size, so the S3 multipart upload has already started when the limit trips.
    const source = generated(16 * MiB);
    harness.takeRequests?.();
    const err = await store.put('max/big', source.stream, { maxBytes: 11 * MiB }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobTooLargeError);
    if (driver === 's3') {
      // s3rver answers AbortMultipartUpload with 405; put must still report the real cause.
      const requests = harness.takeRequests!();
      expect(requests.some((r) => r.startsWith('POST') && r.includes('?uploads'))).toBe(true);
      expect(requests.some((r) => r.startsWith('DELETE') && r.includes('uploadId='))).toBe(true);
    }
    expect((err as BlobTooLargeError).maxBytes).toBe(11 * MiB);
    expect(source.stream.destroyed).toBe(true);
    expect(await store.stat('max/big')).toBeNull();
    expect(await listKeys(store, 'max/big')).toEqual([]);
    if (driver === 'fs') expect(tempFiles(store)).toEqual([]);
  });

  it('rejects when the source fails midway and stores nothing', async () => {
    const source = generated(12 * MiB, { failAfter: 7 * MiB });
    await expect(store.put('fail/x', source.stream)).rejects.toThrow('source failed');
    expect(await store.stat('fail/x')).toBeNull();
    if (driver === 'fs') expect(tempFiles(store)).toEqual([]);
  });

  it('keeps the previous object when an overwrite fails', async () => {
    await store.put('fail/keep', body('original'));
    const source = generated(MiB, { failAfter: 512 * 1024 });
    await expect(store.put('fail/keep', source.stream)).rejects.toThrow('source failed');
    expect(await text(store.get('fail/keep'))).toBe('original');
  });

  // Real S3 is last-writer-wins per object, but s3rver writes PutObject bodies in place, so
  // concurrent puts of one key interleave there: only the fs driver's rename is checked.
  it.runIf(driver === 'fs')('leaves one complete version after concurrent puts to the same key', async () => {
    const a = randomBytes(300_000);
    const b = randomBytes(300_000);
    await Promise.all([store.put('race/x', body(a)), store.put('race/x', body(b))]);
    const got = await readAll(await store.get('race/x'));
    expect(got.equals(a) || got.equals(b)).toBe(true);
  });

  it.each(['', '/abs', 'a/../b', 'a//b', './a', 'a/.', 'a/', 'a\\b', 'a\0b', 'x'.repeat(1025)])(
    'rejects invalid key %j',
    async (key) => {
      await expectRejects(store.put(key, body('x')), InvalidBlobKeyError);
      await expectRejects(store.get(key), InvalidBlobKeyError);
      await expectRejects(store.stat(key), InvalidBlobKeyError);
      await expectRejects(store.delete(key), InvalidBlobKeyError);
    },
  );

  it('lists exactly the keys under a prefix', async () => {
    const own = harness.newStore();
    for (const key of ['a/1', 'a/2', 'a/b/3', 'ab/4', 'c']) await own.put(key, body(key));
    await own.checkWritable();
    expect(await listKeys(own, 'a/')).toEqual(['a/1', 'a/2', 'a/b/3']);
    expect(await listKeys(own, 'a/b/')).toEqual(['a/b/3']);
    expect(await listKeys(own, 'a')).toEqual(['a/1', 'a/2', 'a/b/3', 'ab/4']);
    expect(await listKeys(own, '')).toEqual(['a/1', 'a/2', 'a/b/3', 'ab/4', 'c']);
    expect(await listKeys(own, 'zzz/')).toEqual([]);
    const items = [];
    for await (const item of own.list('a/b/')) items.push(item);
    expect(items).toHaveLength(1);
    expect(items[0]!.size).toBe(5);
    expect(items[0]!.lastModified).toBeInstanceOf(Date);
    expect(Math.abs(items[0]!.lastModified.getTime() - Date.now())).toBeLessThan(60_000);
    await expect(listKeys(own, '../')).rejects.toBeInstanceOf(InvalidBlobKeyError);
  });

  it('checkWritable resolves and leaves nothing behind', async () => {
    const own = harness.newStore();
    await own.checkWritable();
    expect(await listKeys(own, '')).toEqual([]);
    if (driver === 'fs') expect(tempFiles(own)).toEqual([]);
  });

  if (driver === 'fs') {
    it('directUrl is null', async () => {
      expect(await store.directUrl('rt/a.bin', { expiresInSeconds: 60 })).toBeNull();
    });

    it('sweepTemp removes only stale temp files', async () => {
      const own = harness.newStore() as FsBlobStore;
      await own.checkWritable(); // creates .tmp
      const tmp = path.join(own.rootDir, '.tmp');
      fs.writeFileSync(path.join(tmp, 'stale.part'), 'left by a killed process');
      const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
      fs.utimesSync(path.join(tmp, 'stale.part'), old, old);
      fs.writeFileSync(path.join(tmp, 'fresh.part'), 'an upload in progress');
      expect(await own.sweepTemp(60 * 60 * 1000)).toBe(1);
      expect(fs.readdirSync(tmp)).toEqual(['fresh.part']);
    });

    it('reserves the temp directory and prunes emptied directories', async () => {
      const own = harness.newStore() as FsBlobStore;
      await expectRejects(own.put('.tmp/x', body('x')), InvalidBlobKeyError);
      await own.put('deep/er/x', body('x'));
      await own.delete('deep/er/x');
      expect(fs.existsSync(path.join(own.rootDir, 'deep'))).toBe(false);
    });
  }

  if (sealed) {
    it('directUrl is null for a sensitive key: the store holds only ciphertext', async () => {
      await store.put('direct/x', body('secret'));
      expect(await store.directUrl('direct/x', { expiresInSeconds: 60 })).toBeNull();
    });
  }

  if (driver === 's3' && !sealed) {
    it('directUrl is a presigned URL that works without credentials', async () => {
      const data = randomBytes(5000);
      await store.put('url/mod.tar.gz', body(data));
      const url = await store.directUrl('url/mod.tar.gz', { expiresInSeconds: 321, filename: 'mod-1.0.0.tar.gz' });
      expect(url).toMatch(/^http:\/\//);
      expect(new URL(url!).searchParams.get('X-Amz-Expires')).toBe('321');
      const res = await fetch(url!);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-disposition')).toBe('attachment;filename="mod-1.0.0.tar.gz"');
      expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true);
    });

    it('isolates stores with different prefixes on one bucket', async () => {
      // "p" and "p2" share a string prefix: only the '/' join keeps them apart.
      const root = `iso-${randomUUID()}`;
      const a = harness.withPrefix!(`${root}/p`);
      const b = harness.withPrefix!(`${root}/p2`);
      const aSlash = harness.withPrefix!(`${root}/p/`);
      await a.put('k', body('from a'));
      await b.put('k', body('from b'));
      expect(await text(a.get('k'))).toBe('from a');
      expect(await text(b.get('k'))).toBe('from b');
      expect(await text(aSlash.get('k'))).toBe('from a');
      expect(await listKeys(a, '')).toEqual(['k']);
      expect(await listKeys(b, '')).toEqual(['k']);
      expect(await listKeys(harness.withPrefix!(root), '')).toEqual(['p/k', 'p2/k']);
      await a.delete('k');
      expect(await a.stat('k')).toBeNull();
      expect(await b.stat('k')).toEqual({ size: 6 });
    });
  }
});

describe('createBlobStore', () => {
  // Typed as Config's own s3 block, so the factory stays assignable from loadConfig() output.
  const s3: Config['s3'] = {
    bucket: 'b',
    region: 'us-east-1',
    endpoint: undefined,
    prefix: '',
    accessKeyId: undefined,
    secretAccessKey: undefined,
    forcePathStyle: false,
    checksumWhenRequired: true,
    proxyDownloads: false,
  };

  it('builds the fs driver under <dataDir>/blobs', () => {
    const store = createBlobStore({ driver: 'fs', dataDir: '/srv/terrace', s3 });
    expect(store).toBeInstanceOf(FsBlobStore);
    expect((store as FsBlobStore).rootDir).toBe(path.resolve('/srv/terrace/blobs'));
  });

  it('builds the s3 driver, and refuses one without a bucket', () => {
    const store = createBlobStore({ driver: 's3', dataDir: '/srv/terrace', s3 });
    expect(store).toBeInstanceOf(S3BlobStore);
    (store as S3BlobStore).destroy();
    expect(() => createBlobStore({ driver: 's3', dataDir: '/x', s3: { ...s3, bucket: undefined } })).toThrow(/bucket/);
  });
});
