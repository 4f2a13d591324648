import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HashingMeter, assertValidKey, assertValidPrefix, assertValidRange } from './keys.js';
import {
  BlobNotFoundError,
  InvalidBlobKeyError,
  type BlobListing,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type DirectUrlOptions,
  type PutOptions,
  type PutResult,
} from './types.js';

/** Temp files live inside the root so the final rename never crosses a filesystem. */
const TEMP_DIR = '.tmp';

/**
 * Blobs as files under rootDir, one file per key. Writes go to a temp file and are renamed into
 * place, so readers only ever see complete objects.
 */
export class FsBlobStore implements BlobStore {
  readonly driver = 'fs' as const;
  private readonly tempDir: string;

  constructor(readonly rootDir: string) {
    this.rootDir = path.resolve(rootDir);
    this.tempDir = path.join(this.rootDir, TEMP_DIR);
  }

  async put(key: string, body: Readable, opts: PutOptions = {}): Promise<PutResult> {
    const target = this.pathFor(key);
    await fsp.mkdir(this.tempDir, { recursive: true });
    const temp = path.join(this.tempDir, `${randomUUID()}.part`);
    const meter = new HashingMeter(opts.maxBytes);
    let handle: fsp.FileHandle | undefined;
    try {
      handle = await fsp.open(temp, 'wx');
      const out = handle;
      // Written through the handle rather than a WriteStream: the handle must stay open to fsync.
      await pipeline(body, meter, (source: AsyncIterable<Buffer>) => fsp.writeFile(out, source));
      await handle.sync();
      await handle.close();
      handle = undefined;
      await this.renameIntoPlace(temp, target);
    } catch (err) {
      body.destroy();
      await handle?.close().catch(() => undefined);
      await fsp.rm(temp, { force: true }).catch(() => undefined);
      throw err;
    }
    await syncDir(path.dirname(target));
    return { size: meter.bytes, sha256: meter.sha256() };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    assertValidRange(range);
    const handle = await this.openFile(key);
    // The stream owns the handle from here (autoClose), including on destroy.
    return handle.createReadStream({ start: range?.start, end: range?.end });
  }

  async stat(key: string): Promise<BlobStat | null> {
    const file = this.pathFor(key);
    try {
      const st = await fsp.stat(file);
      return st.isFile() ? { size: st.size } : null;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.pathFor(key);
    try {
      await fsp.unlink(file);
    } catch (err) {
      // EISDIR/EPERM: the key names a directory of other keys, so no object by that name exists.
      if (isMissing(err) || hasCode(err, 'EISDIR', 'EPERM')) return;
      throw err;
    }
    await this.pruneEmptyDirs(path.dirname(file));
  }

  async *list(prefix: string): AsyncIterable<BlobListing> {
    assertValidPrefix(prefix);
    // Walk only the deepest directory the prefix fully names, then filter by string prefix.
    const slash = prefix.lastIndexOf('/');
    const dirKey = slash === -1 ? '' : prefix.slice(0, slash);
    for await (const listing of this.walk(dirKey)) {
      if (listing.key.startsWith(prefix)) yield listing;
    }
  }

  async directUrl(key: string, _opts: DirectUrlOptions): Promise<string | null> {
    this.pathFor(key);
    return null;
  }

  async checkWritable(): Promise<void> {
    await fsp.mkdir(this.tempDir, { recursive: true });
    const probe = path.join(this.tempDir, `probe-${randomUUID()}`);
    try {
      const handle = await fsp.open(probe, 'wx');
      try {
        await handle.writeFile('probe');
        await handle.sync();
      } finally {
        await handle.close();
      }
    } finally {
      await fsp.rm(probe, { force: true });
    }
  }

  /**
   * Removes temp files a killed process left behind. Only files untouched for olderThanMs are
   * removed, since an in-progress put keeps bumping its temp file's mtime. Returns the count.
   */
  async sweepTemp(olderThanMs: number): Promise<number> {
    let names: string[];
    try {
      names = await fsp.readdir(this.tempDir);
    } catch (err) {
      if (isMissing(err)) return 0;
      throw err;
    }
    const cutoff = Date.now() - olderThanMs;
    let removed = 0;
    for (const name of names) {
      const file = path.join(this.tempDir, name);
      try {
        const st = await fsp.lstat(file);
        if (st.isFile() && st.mtimeMs < cutoff) {
          await fsp.unlink(file);
          removed++;
        }
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    }
    return removed;
  }

  private pathFor(key: string): string {
    assertValidKey(key);
    // The temp area shares the root; a key inside it could be swept or collide with a temp file.
    if (key === TEMP_DIR || key.startsWith(`${TEMP_DIR}/`)) throw new InvalidBlobKeyError(key);
    return path.join(this.rootDir, ...key.split('/'));
  }

  private async openFile(key: string): Promise<fsp.FileHandle> {
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(this.pathFor(key), 'r');
    } catch (err) {
      if (isMissing(err)) throw new BlobNotFoundError(key);
      throw err;
    }
    const st = await handle.stat().catch(async (err: unknown) => {
      await handle.close();
      throw err;
    });
    if (!st.isFile()) {
      await handle.close();
      throw new BlobNotFoundError(key);
    }
    return handle;
  }

  private async renameIntoPlace(temp: string, target: string): Promise<void> {
    // A concurrent delete may prune the parent directory between mkdir and rename; retry then.
    for (let attempt = 1; ; attempt++) {
      await fsp.mkdir(path.dirname(target), { recursive: true });
      try {
        await fsp.rename(temp, target);
        return;
      } catch (err) {
        if (!hasCode(err, 'ENOENT') || attempt >= 3) throw err;
      }
    }
  }

  private async pruneEmptyDirs(dir: string): Promise<void> {
    while (dir !== this.rootDir && dir.startsWith(this.rootDir + path.sep)) {
      try {
        await fsp.rmdir(dir);
      } catch {
        return; // not empty (or already gone): everything above is non-empty too
      }
      dir = path.dirname(dir);
    }
  }

  private async *walk(dirKey: string): AsyncGenerator<BlobListing> {
    const dir = dirKey === '' ? this.rootDir : path.join(this.rootDir, ...dirKey.split('/'));
    let entries;
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    for (const entry of entries) {
      if (dirKey === '' && entry.name === TEMP_DIR) continue;
      const key = dirKey === '' ? entry.name : `${dirKey}/${entry.name}`;
      if (entry.isDirectory()) {
        yield* this.walk(key);
      } else if (entry.isFile()) {
        try {
          const st = await fsp.stat(path.join(dir, entry.name));
          yield { key, size: st.size, lastModified: st.mtime };
        } catch (err) {
          if (!isMissing(err)) throw err; // deleted while listing
        }
      }
    }
  }
}

/** Makes a rename durable across a crash; best effort, as not every platform can fsync a dir. */
async function syncDir(dir: string): Promise<void> {
  try {
    const handle = await fsp.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // ignored: durability hint only
  }
}

function hasCode(err: unknown, ...codes: string[]): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code !== undefined && codes.includes(code);
}

/** ENOTDIR: a path component is a file, so nothing can exist below it. */
function isMissing(err: unknown): boolean {
  return hasCode(err, 'ENOENT', 'ENOTDIR');
}
