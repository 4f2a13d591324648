// Intake validation for published module tarballs. The archive is untrusted:
// it is only ever streamed through gunzip + a tar parser, never extracted or
// executed, and every limit is enforced while streaming so memory stays bounded.
import { Transform, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';

export interface ArchiveLimits {
  maxEntries: number;
  maxUnpackedBytes: number;
  maxPathLength?: number;
  /**
   * The decompression-bomb bound: with the archive's compressed size known, it may unpack to at
   * most maxRatio times that, except that up to ratioFloorBytes is always allowed (small
   * archives of text compress well). Absent or a maxRatio of 0: no ratio bound.
   */
  ratio?: { compressedBytes: number; maxRatio: number; ratioFloorBytes: number };
}
export interface ArchiveEntryInfo { path: string; size: number; type: 'file' | 'directory' | 'symlink' }
export interface ArchiveReport { entries: number; unpackedBytes: number; files: ArchiveEntryInfo[] }

/** The publisher's archive is unacceptable; `message` is user-facing and says what to fix. */
export class ArchiveError extends Error {
  override name = 'ArchiveError';
}

export interface ValidateOptions extends ArchiveLimits {
  /** Decides, per regular file (normalized path, declared size), whether its content goes to `onFile`. */
  wantFile?: (path: string, size: number) => boolean;
  /** Receives the full content of wanted files; awaited before more of the archive is read. */
  onFile?: (path: string, content: Buffer) => void | Promise<void>;
  /** Default 1 MiB per wanted file; larger wanted files are skipped with a warning. */
  maxCollectBytes?: number;
}

const MAX_LINK_HOPS = 40; // same budget as Linux ELOOP
const TRUNCATED = 'the archive is truncated or corrupt';
const NOT_TAR = 'the archive is gzip-compressed but is not a tar archive: create it with `tar -czf module.tar.gz -C <module dir> .`';
const TYPE_NAMES: Record<string, string> = {
  CharacterDevice: 'a character device', BlockDevice: 'a block device', FIFO: 'a FIFO (named pipe)',
};

// Attacker-controlled text goes into user-facing messages: escape control chars and bound the length.
const q = (s: string): string => JSON.stringify(s.length > 200 ? `${s.slice(0, 200)}…` : s);

/** Syntactic path checks shared by entry names and hard-link targets; returns the path without leading "./". */
function checkPath(raw: string, what: string, maxLen: number): string {
  const bad = (why: string) => new ArchiveError(`${what} ${q(raw)} ${why}`);
  if (raw.includes('\0')) throw bad('contains a NUL byte');
  if (raw.includes('\\')) throw bad('contains a backslash; archive paths must use "/" separators');
  if (raw.startsWith('/')) throw bad('is an absolute path; archive paths must be relative to the module root');
  if (/^[A-Za-z]:/.test(raw)) throw bad('starts with a Windows drive letter; archive paths must be relative');
  if (raw.length > maxLen) throw bad(`is ${raw.length} characters long; the maximum is ${maxLen}`);
  if (raw.split('/').includes('..')) throw bad('escapes the archive root (contains a ".." segment)');
  return raw.replace(/^(\.\/+)+/, '');
}

const canon = (p: string): string => p.split('/').filter((s) => s !== '' && s !== '.').join('/');

/**
 * Resolves a symlink target the way a filesystem would, substituting every
 * earlier-declared symlink met on the way. A purely lexical join is not enough:
 * with `a/l -> ..`, the target `a/l/../..` looks like "." but really escapes.
 * Returns false if resolution leaves the root or loops.
 */
function symlinkStaysInside(links: Map<string, string>, linkPath: string): boolean {
  let hops = 0;
  const walk = (base: string[], rel: string[]): string[] | null => {
    const cur = [...base];
    for (const seg of rel) {
      if (seg === '' || seg === '.') continue;
      if (seg === '..') {
        if (cur.pop() === undefined) return null; // ".." at the root escapes it
        continue;
      }
      cur.push(seg);
      const target = links.get(cur.join('/'));
      if (target === undefined) continue;
      if (++hops > MAX_LINK_HOPS) return null;
      const next = walk(cur.slice(0, -1), target.split('/'));
      if (!next) return null;
      cur.splice(0, cur.length, ...next);
    }
    return cur;
  };
  // Walk from the root through the link's own directory (which may itself pass through links).
  return walk([], [...linkPath.split('/').slice(0, -1), ...(links.get(linkPath) ?? '').split('/')]) !== null;
}

function toArchiveError(err: unknown): unknown {
  if (err instanceof ArchiveError) return err;
  // zlib failures (bad header/data, "unexpected end of file") are all archive damage.
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return new ArchiveError(`${TRUNCATED} (${(err as Error).message}): re-create and upload it again`);
  }
  return err; // e.g. a blob-storage read error: not the publisher's fault, surface as-is
}

export async function validateArchive(
  input: NodeJS.ReadableStream | Readable,
  opts: ValidateOptions,
): Promise<ArchiveReport & { warnings: string[] }> {
  const maxPathLength = opts.maxPathLength ?? 1024;
  const maxCollect = opts.maxCollectBytes ?? 1024 * 1024;
  const files: ArchiveEntryInfo[] = [];
  const warnings: string[] = [];
  const links = new Map<string, string>(); // symlink path -> raw target, resolved after the stream ends
  const fileSizes = new Map<string, number>(); // lets hard links report their target's size
  const pending: Promise<void>[] = [];
  let entries = 0, regularFiles = 0, unpacked = 0, sawEof = false;
  let failure: unknown;

  // strict: header/checksum/truncation warnings become 'error' events. brotli/zstd off
  // so the parser can't be tricked into a second, uncounted decompression layer.
  const parser = new Parser({ strict: true, brotli: false, zstd: false, maxMetaEntrySize: 64 * 1024 });
  const fail = (err: unknown): void => {
    if (failure !== undefined) return;
    failure = err;
    parser.abort(new Error('archive validation failed')); // stop parsing the rest of the current chunk
  };
  parser.on('error', (err: Error) => {
    if (failure !== undefined) return;
    if (entries === 0) fail(new ArchiveError(sawEof ? 'the archive contains no files' : NOT_TAR));
    else fail(new ArchiveError(`${TRUNCATED} (${err.message}): re-create and upload it again`));
  });
  parser.on('eof', () => { sawEof = true; });
  // Parser skips (never emits as 'entry') types it doesn't know, e.g. sparse files or oversized meta headers.
  parser.on('ignoredEntry', (entry: ReadEntry) => {
    fail(new ArchiveError(`archive entry ${q(entry.path)} has unsupported tar entry type ${entry.type}; only regular files, directories and links are allowed`));
  });
  parser.on('entry', (entry: ReadEntry) => {
    if (failure !== undefined) return void entry.resume();
    try {
      onEntry(entry);
    } catch (err) {
      entry.resume();
      fail(err);
    }
  });

  function onEntry(entry: ReadEntry): void {
    if (++entries > opts.maxEntries) {
      throw new ArchiveError(`the archive has more than ${opts.maxEntries} entries; remove unneeded files from the module package`);
    }
    const path = checkPath(entry.path, 'archive entry', maxPathLength);
    // entry.path is what consumers see, but node-tar's raw header.path can differ (it prepends a
    // ustar prefix to a pax path); reject if either spelling is unsafe.
    if (entry.header.path !== undefined && entry.header.path !== entry.path) checkPath(entry.header.path, 'archive entry', Infinity);
    if (entry.size > opts.maxUnpackedBytes) {
      throw new ArchiveError(`archive entry ${q(path)} declares ${entry.size} bytes, over the ${opts.maxUnpackedBytes}-byte unpacked size limit`);
    }
    // Canonical form ("a//b/./c/" -> "a/b/c") so link resolution can't be dodged by spelling.
    const key = canon(path);
    if (key === '' && entry.type !== 'Directory') throw new ArchiveError(`archive entry ${q(entry.path)} has no file name`);
    const linkpath = entry.linkpath ?? '';
    switch (entry.type) {
      case 'File': case 'OldFile': case 'ContiguousFile': {
        regularFiles++;
        files.push({ path, size: entry.size, type: 'file' });
        fileSizes.set(key, entry.size);
        return collect(entry, path);
      }
      case 'Directory':
        if (key !== '') files.push({ path, size: 0, type: 'directory' }); // "./" is the root itself
        return void entry.resume();
      case 'SymbolicLink': {
        const what = `archive entry ${q(path)} is a symlink to`;
        if (linkpath.startsWith('/') || /^[A-Za-z]:/.test(linkpath)) {
          throw new ArchiveError(`${what} the absolute path ${q(linkpath)}, which points outside the archive root; only relative links are allowed`);
        }
        if (/[\0\\]/.test(linkpath)) throw new ArchiveError(`${what} ${q(linkpath)}, which contains a NUL byte or backslash`);
        links.set(key, linkpath);
        files.push({ path, size: 0, type: 'symlink' });
        return void entry.resume();
      }
      case 'Link': {
        // Hard-link targets are archive member names (relative to the root), so they get entry-path rules.
        const target = checkPath(linkpath, `archive entry ${q(path)} is a hard link whose target`, maxPathLength);
        if (entry.header.linkpath && entry.header.linkpath !== linkpath) {
          checkPath(entry.header.linkpath, `archive entry ${q(path)} is a hard link whose target`, Infinity);
        }
        files.push({ path, size: fileSizes.get(canon(target)) ?? entry.size, type: 'file' });
        return void entry.resume();
      }
      default:
        throw new ArchiveError(`archive entry ${q(path)} is ${TYPE_NAMES[entry.type] ?? `an unsupported tar entry type (${entry.type})`}; only regular files, directories and links are allowed`);
    }
  }

  function collect(entry: ReadEntry, path: string): void {
    if (!opts.onFile || !opts.wantFile?.(path, entry.size)) return void entry.resume();
    if (entry.size > maxCollect) {
      warnings.push(`skipped reading ${q(path)}: it is ${entry.size} bytes, over the ${maxCollect}-byte limit for readable files`);
      return void entry.resume();
    }
    const chunks: Buffer[] = [];
    let got = 0;
    entry.on('data', (c: Buffer) => {
      got += c.length;
      if (got <= maxCollect) chunks.push(c); // belt and braces: the declared size was already checked
    });
    entry.on('end', () => {
      const onFile = opts.onFile!;
      // Run the callback outside the parser's synchronous emit; errors fail validation, never go unhandled.
      pending.push(Promise.resolve().then(() => onFile(path, Buffer.concat(chunks))).catch(fail));
    });
  }

  // Waits for onFile callbacks before accepting more input: backpressure, and bounded memory.
  const settle = (cb: (err?: Error | null) => void): void => {
    const waiting = pending.splice(0);
    const done = () => cb(failure === undefined ? null : (failure as Error));
    if (waiting.length === 0) done();
    else void Promise.all(waiting).then(done);
  };

  let head: Buffer | undefined = Buffer.alloc(0);
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      // Once the end-of-archive marker is seen, trailing padding is counted but not parsed
      // (node-tar would otherwise keep buffering it).
      if (failure !== undefined || sawEof) return settle(cb);
      if (head) {
        // node-tar would silently inflate a nested gzip layer that our byte counting never sees;
        // and holding back the first block gives its own format sniffing a whole header.
        head = Buffer.concat([head, chunk]);
        if (head[0] === 0x1f && head[1] === 0x8b) {
          return cb(new ArchiveError('the archive is compressed more than once: upload a single-gzipped tar (.tar.gz)'));
        }
        if (head.length < 512) return cb();
        chunk = head;
        head = undefined;
      }
      try {
        parser.write(chunk);
      } catch (err) {
        fail(new ArchiveError(`${TRUNCATED} (${(err as Error).message})`));
      }
      settle(cb);
    },
    final(cb) {
      if (head) return cb(new ArchiveError(head.length === 0 ? 'the archive contains no files' : NOT_TAR));
      if (failure === undefined) parser.end(); // strict parser reports truncation synchronously here
      if (failure === undefined && !sawEof) fail(new ArchiveError(`${TRUNCATED} (no end-of-archive marker): re-create and upload it again`));
      settle(cb);
    },
  });

  // Holds bytes back until the two magic bytes are known, so gunzip never sees a non-gzip input
  // (its error would otherwise race ours and read as "corrupt").
  let magic: Buffer | undefined = Buffer.alloc(0);
  const notGzip = () => new ArchiveError('the archive is not gzip-compressed: upload a .tar.gz');
  const sniff = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (!magic) return cb(null, chunk);
      const all = (magic = Buffer.concat([magic, chunk]));
      if (all.length < 2) return cb();
      magic = undefined;
      cb(all[0] === 0x1f && all[1] === 0x8b ? null : notGzip(), all);
    },
    flush: (cb) => cb(magic ? notGzip() : null),
  });

  // Counts inflated bytes as they leave gunzip, so a decompression bomb is stopped after at
  // most maxUnpackedBytes (plus one zlib chunk), not after full inflation.
  const r = opts.ratio;
  const ratioLimit = r && r.maxRatio > 0 ? Math.max(r.ratioFloorBytes, r.maxRatio * r.compressedBytes) : Infinity;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      unpacked += chunk.length;
      if (unpacked > opts.maxUnpackedBytes) {
        return cb(new ArchiveError(`the archive unpacks to more than ${opts.maxUnpackedBytes} bytes; remove large or generated files from the module package`));
      }
      if (unpacked > ratioLimit) {
        return cb(new ArchiveError(
          `the archive unpacks to more than ${ratioLimit} bytes, over ${r!.maxRatio} times its compressed size of ${r!.compressedBytes} bytes ` +
          `(TERRACE_MAX_ARCHIVE_RATIO): this looks like a decompression bomb; remove highly repetitive or generated files from the module package`,
        ));
      }
      cb(null, chunk);
    },
  });

  try {
    await pipeline(input, sniff, createGunzip(), meter, sink);
  } catch (err) {
    throw toArchiveError(failure ?? err);
  }
  for (const [path, target] of links) {
    if (!symlinkStaysInside(links, path)) {
      throw new ArchiveError(`archive entry ${q(path)} is a symlink to ${q(target)}, which points outside the archive root (or loops)`);
    }
  }
  if (regularFiles === 0) throw new ArchiveError('the archive contains no files');
  return { entries, unpackedBytes: unpacked, files, warnings };
}
