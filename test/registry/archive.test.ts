import { mkdir, mkdtemp, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { create } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveError, validateArchive, type ValidateOptions } from '../../src/registry/archive.js';

const LIMITS: ValidateOptions = { maxEntries: 100, maxUnpackedBytes: 10 * 1024 * 1024 };
const MAIN_TF = 'resource "null_resource" "x" {}\n';
const VARIABLES_TF = 'variable "name" {\n  type = string\n}\n';
const README = '# Example module\n\nDoes things.\n';
const SUB_TF = 'output "id" { value = "sub" }\n';

// ---- tiny raw tar writer, for entries node-tar's create() would refuse to produce ----

interface RawEntry { path: string; type?: string; body?: Buffer | string; size?: number; linkpath?: string; prefix?: string }

function header({ path, type = '0', size = 0, linkpath = '', prefix = '' }: RawEntry): Buffer {
  const b = Buffer.alloc(512);
  b.write(path, 0, 100, 'utf8');
  b.write('0000644\0', 100);
  b.write('0000000\0', 108);
  b.write('0000000\0', 116);
  b.write(size.toString(8).padStart(11, '0') + '\0', 124);
  b.write('14000000000\0', 136);
  b.fill(' ', 148, 156); // checksum is computed with its own field as spaces
  b.write(type, 156);
  b.write(linkpath, 157, 100, 'utf8');
  b.write('ustar\0' + '00', 257, 'binary');
  b.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return b;
}

function entry(e: RawEntry): Buffer {
  const body = Buffer.from(e.body ?? '');
  const pad = Buffer.alloc((512 - (body.length % 512)) % 512);
  return Buffer.concat([header({ ...e, size: e.size ?? body.length }), body, pad]);
}

/** A pax extended header ('x') whose records override the next entry's fields. */
function pax(records: Record<string, string>, type = 'x'): Buffer {
  const body = Object.entries(records).map(([k, v]) => {
    const rest = ` ${k}=${v}\n`;
    let len = rest.length + 1;
    while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
    return `${len}${rest}`;
  }).join('');
  return entry({ path: 'PaxHeader', type, body });
}

const EOF = Buffer.alloc(1024);
const rawTar = (...parts: Buffer[]): Buffer => Buffer.concat([...parts, EOF]);
const tgz = (...parts: Buffer[]): Buffer => gzipSync(rawTar(...parts));
const okFile = entry({ path: 'main.tf', body: MAIN_TF });

/** Serves a buffer in fixed-size chunks and records how much of it was actually pulled. */
class CountingReadable extends Readable {
  bytesRead = 0;
  private pos = 0;
  constructor(private readonly buf: Buffer, private readonly chunk = 16 * 1024) { super(); }
  override _read(): void {
    if (this.pos >= this.buf.length) return void this.push(null);
    const c = this.buf.subarray(this.pos, this.pos + this.chunk);
    this.pos += c.length;
    this.bytesRead += c.length;
    this.push(c);
  }
}

const validate = (buf: Buffer, opts: Partial<ValidateOptions> = {}) =>
  validateArchive(Readable.from([buf]), { ...LIMITS, ...opts });

async function expectReject(buf: Buffer | Readable, message: RegExp, opts: Partial<ValidateOptions> = {}): Promise<ArchiveError> {
  const input = Buffer.isBuffer(buf) ? Readable.from([buf]) : buf;
  const err = await validateArchive(input, { ...LIMITS, ...opts }).then(
    () => { throw new Error('expected validateArchive to reject'); },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArchiveError);
  expect((err as Error).message).toMatch(message);
  return err as ArchiveError;
}

let dir: string;
let moduleTgz: Buffer;
let dotTgz: Buffer;
let linkTgz: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'terrace-archive-'));
  const src = join(dir, 'module');
  await mkdir(join(src, 'modules', 'sub'), { recursive: true });
  await writeFile(join(src, 'main.tf'), MAIN_TF);
  await writeFile(join(src, 'variables.tf'), VARIABLES_TF);
  await writeFile(join(src, 'README.md'), README);
  await writeFile(join(src, 'modules', 'sub', 'main.tf'), SUB_TF);
  await symlink('main.tf', join(src, 'link'));
  await symlink('../../main.tf', join(src, 'modules', 'sub', 'up.tf'));
  const pack = async (name: string, files: string[]) => {
    const file = join(dir, name);
    // noDirRecurse + explicit list keeps entry order deterministic (readdir order is not).
    await create({ file, cwd: src, gzip: true, portable: true, noDirRecurse: true }, files);
    return readFile(file);
  };
  moduleTgz = await pack('module.tgz', ['main.tf', 'variables.tf', 'README.md', 'modules/', 'modules/sub/', 'modules/sub/main.tf']);
  dotTgz = await pack('dot.tgz', ['./', './main.tf', './modules/', './modules/sub/', './modules/sub/main.tf']);
  linkTgz = await pack('link.tgz', ['main.tf', 'link', 'modules/sub/up.tf']);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('validateArchive: valid archives', () => {
  it('accepts a normal module archive and reports exact entries, files and sizes', async () => {
    const report = await validate(moduleTgz);
    expect(report.entries).toBe(6);
    expect(report.files).toEqual([
      { path: 'main.tf', size: Buffer.byteLength(MAIN_TF), type: 'file' },
      { path: 'variables.tf', size: Buffer.byteLength(VARIABLES_TF), type: 'file' },
      { path: 'README.md', size: Buffer.byteLength(README), type: 'file' },
      { path: 'modules/', size: 0, type: 'directory' },
      { path: 'modules/sub/', size: 0, type: 'directory' },
      { path: 'modules/sub/main.tf', size: Buffer.byteLength(SUB_TF), type: 'file' },
    ]);
    expect(report.warnings).toEqual([]);
    // Counted from the gunzip output: 512-byte blocks, at least one header + one data block per file.
    expect(report.unpackedBytes % 512).toBe(0);
    expect(report.unpackedBytes).toBeGreaterThanOrEqual(4 * 1024 + 2 * 512 + 1024);
  });

  it('normalizes leading "./" away (the root "./" entry is counted but not listed)', async () => {
    const report = await validate(dotTgz);
    expect(report.entries).toBe(5);
    expect(report.files.map((f) => f.path)).toEqual(['main.tf', 'modules/', 'modules/sub/', 'modules/sub/main.tf']);
    const raw = await validate(tgz(entry({ path: './././x.tf', body: 'x' })));
    expect(raw.files).toEqual([{ path: 'x.tf', size: 1, type: 'file' }]);
  });

  it('accepts the archive when it arrives one byte at a time', async () => {
    const bytes = [...moduleTgz].map((b) => Buffer.from([b]));
    const report = await validateArchive(Readable.from(bytes), LIMITS);
    expect(report.entries).toBe(6);
  });

  it('hands wanted files to onFile with their exact content', async () => {
    const seen = new Map<string, string>();
    const asked: Array<[string, number]> = [];
    const report = await validate(moduleTgz, {
      wantFile: (path, size) => { asked.push([path, size]); return path === 'main.tf'; },
      onFile: async (path, content) => { await Promise.resolve(); seen.set(path, content.toString('utf8')); },
    });
    expect([...seen]).toEqual([['main.tf', MAIN_TF]]);
    expect(asked.map(([p]) => p)).toEqual(['main.tf', 'variables.tf', 'README.md', 'modules/sub/main.tf']);
    expect(asked[0]).toEqual(['main.tf', Buffer.byteLength(MAIN_TF)]);
    expect(report.warnings).toEqual([]);
  });

  it('skips wanted files over maxCollectBytes with a warning', async () => {
    const seen: string[] = [];
    const report = await validate(moduleTgz, {
      maxCollectBytes: 10,
      wantFile: (p) => p.endsWith('.tf'),
      onFile: (p) => { seen.push(p); },
    });
    expect(seen).toEqual([]);
    expect(report.warnings).toHaveLength(3);
    expect(report.warnings[0]).toMatch(/main\.tf.*10-byte limit/);
  });

  it('accepts a pax global header like the one git archive writes', async () => {
    const report = await validate(tgz(pax({ comment: 'a1b2c3' }, 'g'), okFile));
    expect(report.files).toEqual([{ path: 'main.tf', size: Buffer.byteLength(MAIN_TF), type: 'file' }]);
  });

  it('surfaces an input stream (blob storage) error as-is, not as an ArchiveError', async () => {
    const ioError = new Error('socket hang up');
    const input = new Readable({ read() { this.push(moduleTgz.subarray(0, 100)); this.destroy(ioError); } });
    await expect(validateArchive(input, LIMITS)).rejects.toBe(ioError);
  });

  it('propagates an onFile failure as-is', async () => {
    const boom = new Error('db down');
    await expect(validate(moduleTgz, { wantFile: () => true, onFile: () => { throw boom; } })).rejects.toBe(boom);
  });

  it('allows symlinks and hard links that stay inside the archive', async () => {
    const report = await validate(linkTgz);
    expect(report.files).toEqual([
      { path: 'main.tf', size: Buffer.byteLength(MAIN_TF), type: 'file' },
      { path: 'link', size: 0, type: 'symlink' },
      { path: 'modules/sub/up.tf', size: 0, type: 'symlink' },
    ]);
    const hard = await validate(tgz(okFile, entry({ path: 'copy.tf', type: '1', linkpath: 'main.tf' })));
    expect(hard.files[1]).toEqual({ path: 'copy.tf', size: Buffer.byteLength(MAIN_TF), type: 'file' });
    // "a/l -> .." points at the root itself, which is inside.
    await expect(validate(tgz(okFile, entry({ path: 'a/l', type: '2', linkpath: '..' })))).resolves.toBeTruthy();
  });
});

describe('validateArchive: hostile entries', () => {
  const cases: Array<[string, Buffer[], RegExp]> = [
    ['absolute path', [entry({ path: '/etc/passwd', body: 'x' })], /"\/etc\/passwd" is an absolute path/],
    ['Windows drive letter', [entry({ path: 'C:/Windows/x', body: 'x' })], /"C:\/Windows\/x" starts with a Windows drive letter/],
    ['../ path', [entry({ path: '../evil', body: 'x' })], /archive entry "\.\.\/evil" escapes the archive root/],
    ['inner .. segment', [entry({ path: 'a/../../evil', body: 'x' })], /"a\/\.\.\/\.\.\/evil" escapes the archive root/],
    ['backslash', [entry({ path: '..\\evil', body: 'x' })], /contains a backslash/],
    ['character device', [entry({ path: 'dev/tty', type: '3' })], /"dev\/tty" is a character device/],
    ['block device', [entry({ path: 'dev/sda', type: '4' })], /"dev\/sda" is a block device/],
    ['FIFO', [entry({ path: 'pipe', type: '6' })], /"pipe" is a FIFO/],
    ['unknown entry type', [entry({ path: 'weird', type: 'S', body: 'x' })], /"weird" has unsupported tar entry type/],
    ['symlink to /etc/passwd', [entry({ path: 'passwd', type: '2', linkpath: '/etc/passwd' })], /"passwd" is a symlink to the absolute path "\/etc\/passwd"/],
    ['symlink a -> ../../x', [entry({ path: 'a', type: '2', linkpath: '../../x' })], /"a" is a symlink to "\.\.\/\.\.\/x", which points outside the archive root/],
    ['symlink escaping from a subdir', [entry({ path: 'd/e/l', type: '2', linkpath: '../../../x' })], /"d\/e\/l" is a symlink to .* outside/],
    ['symlink escaping through another symlink', [
      entry({ path: 'a/l', type: '2', linkpath: '..' }),
      entry({ path: 'y', type: '2', linkpath: 'a/l/../..' }),
    ], /"y" is a symlink to "a\/l\/\.\.\/\.\.", which points outside/],
    ['symlink loop', [entry({ path: 'p', type: '2', linkpath: 'q' }), entry({ path: 'q', type: '2', linkpath: 'p' })], /loops/],
    ['hard link to ../x', [entry({ path: 'h', type: '1', linkpath: '../x' })], /"h" is a hard link whose target "\.\.\/x" escapes the archive root/],
    ['hard link to an absolute path', [entry({ path: 'h', type: '1', linkpath: '/etc/shadow' })], /hard link whose target "\/etc\/shadow" is an absolute path/],
    ['pax path override with ..', [pax({ path: '../evil' }), entry({ path: 'innocent.tf', body: 'x' })], /"\.\.\/evil" escapes the archive root/],
    ['pax linkpath override escaping', [pax({ linkpath: '../../x' }), entry({ path: 'l', type: '2', linkpath: 'ok' })], /"l" is a symlink to "\.\.\/\.\.\/x"/],
    ['GNU long name with ..', [entry({ path: '././@LongLink', type: 'L', body: '../../evil\0' }), entry({ path: 'x', body: 'x' })], /"\.\.\/\.\.\/evil" escapes/],
  ];

  it.each(cases)('rejects %s', async (_name, parts, message) => {
    // A valid file first, so the rejection is about the hostile entry, not an empty archive.
    await expectReject(tgz(okFile, ...parts), message);
  });

  it('rejects paths longer than maxPathLength', async () => {
    await expectReject(tgz(entry({ path: 'a'.repeat(60), body: 'x' })), /is 60 characters long; the maximum is 50/, { maxPathLength: 50 });
  });

  it('checks the raw ustar prefix too, which node-tar joins onto a pax path in header.path only', async () => {
    // entry.path is "x.tf" (pax wins) but entry.header.path is "../x.tf": reject the ambiguity.
    await expectReject(tgz(okFile, pax({ path: 'x.tf' }), entry({ path: 'x.tf', prefix: '..', body: 'x' })), /"\.\.\/x\.tf" escapes/);
    const plain = await validate(tgz(entry({ path: 'main.tf', prefix: 'modules/sub', body: 'x' })));
    expect(plain.files[0]?.path).toBe('modules/sub/main.tf');
  });

  it('never sees a NUL in a path: node-tar cuts pax values at the first NUL', async () => {
    const report = await validate(tgz(okFile, pax({ path: 'a\0/../../evil' }), entry({ path: 'x', body: 'x' })));
    expect(report.files.map((f) => f.path)).toEqual(['main.tf', 'a']);
  });
});

describe('validateArchive: not a .tar.gz', () => {
  const plainTar = rawTar(okFile);
  const notGzip = /the archive is not gzip-compressed: upload a \.tar\.gz/;
  it('rejects an uncompressed tar', async () => { await expectReject(plainTar, notGzip); });
  it('rejects a zip', async () => { await expectReject(Buffer.concat([Buffer.from('PK\x03\x04', 'binary'), randomBytes(200)]), notGzip); });
  it('rejects random bytes', async () => { await expectReject(Buffer.concat([Buffer.from([0x42]), randomBytes(4096)]), notGzip); });
  it('rejects empty input', async () => { await expectReject(Buffer.alloc(0), notGzip); });
  it('rejects a single 0x1f byte', async () => { await expectReject(Buffer.from([0x1f]), notGzip); });

  it('rejects gzip of non-tar content', async () => {
    await expectReject(gzipSync('just some text, not a tarball'), /not a tar archive/);
    await expectReject(gzipSync(randomBytes(8192)), /not a tar archive/);
  });

  it('rejects gzip of nothing, and an empty tar', async () => {
    await expectReject(gzipSync(Buffer.alloc(0)), /contains no files/);
    await expectReject(gzipSync(EOF), /contains no files/);
  });

  it('rejects an archive with only directories', async () => {
    await expectReject(tgz(entry({ path: 'modules/', type: '5' })), /the archive contains no files/);
  });

  it('rejects a doubly-gzipped tar rather than letting node-tar inflate the inner layer unmetered', async () => {
    await expectReject(gzipSync(tgz(okFile)), /compressed more than once/);
  });
});

describe('validateArchive: truncation and corruption', () => {
  it('rejects a gzip stream cut in half', async () => {
    await expectReject(moduleTgz.subarray(0, Math.floor(moduleTgz.length / 2)), /truncated or corrupt/);
  });

  it('rejects a tar cut inside an entry body', async () => {
    const tar = rawTar(okFile, entry({ path: 'big.tf', body: 'y'.repeat(3000) }));
    await expectReject(gzipSync(tar.subarray(0, 512 * 3)), /truncated or corrupt/);
  });

  it('rejects a tar cut at an entry boundary (no end-of-archive marker)', async () => {
    await expectReject(gzipSync(okFile), /truncated or corrupt.*end-of-archive/);
  });

  it('rejects a corrupted header checksum after a valid entry', async () => {
    const bad = entry({ path: 'second.tf', body: 'x' });
    bad.writeUInt8(bad.readUInt8(0) ^ 0xff, 0);
    await expectReject(tgz(okFile, bad), /truncated or corrupt/);
  });
});

describe('validateArchive: limits', () => {
  it('rejects more entries than maxEntries', async () => {
    await expectReject(moduleTgz, /more than 5 entries/, { maxEntries: 5 });
    await expect(validate(moduleTgz, { maxEntries: 6 })).resolves.toBeTruthy();
  });

  it('rejects an entry that declares a size over the unpacked limit before reading it', async () => {
    const err = await expectReject(gzipSync(header({ path: 'huge.bin', size: 1024 ** 3 })), /"huge\.bin" declares 1073741824 bytes/);
    expect(err.message).toMatch(/10485760-byte/);
  });

  it('stops a decompression bomb early, from the counted gunzip output', async () => {
    // 200 files x 5 MiB of zeros = 1 GiB unpacked (~1 MB compressed); each file alone is under the 10 MiB limit,
    // so only counting the inflated stream can catch it.
    const fileSize = 5 * 1024 * 1024;
    const zeros = Buffer.alloc(1024 * 1024);
    const chunks: Buffer[] = [];
    await pipeline(
      async function* () {
        for (let i = 0; i < 200; i++) {
          yield header({ path: `zeros-${i}.bin`, size: fileSize });
          for (let j = 0; j < fileSize / zeros.length; j++) yield zeros;
        }
        yield EOF;
      },
      createGzip({ level: 9 }),
      new Writable({ write(c: Buffer, _e, cb) { chunks.push(c); cb(); } }),
    );
    const bomb = Buffer.concat(chunks);
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);

    const input = new CountingReadable(bomb);
    await expectReject(input, /unpacks to more than 10485760 bytes/);
    // ~10 MiB of output needs ~10 KB of input at this ratio; allow for stream buffering.
    expect(input.bytesRead).toBeLessThan(bomb.length / 10);
    expect(input.destroyed).toBe(true);
  });

  it('also bounds a bomb hidden in a sparse file packed by node-tar', async () => {
    const src = join(dir, 'sparse');
    await mkdir(src, { recursive: true });
    await writeFile(join(src, 'main.tf'), MAIN_TF);
    for (const name of ['a.bin', 'b.bin']) {
      await writeFile(join(src, name), '');
      await truncate(join(src, name), 20 * 1024 * 1024); // sparse: no disk used
    }
    const file = join(dir, 'sparse.tgz');
    await create({ file, cwd: src, gzip: true, portable: true }, ['main.tf', 'a.bin', 'b.bin']);
    await expectReject(await readFile(file), /unpacks to more than 31457280 bytes/, { maxUnpackedBytes: 30 * 1024 * 1024 });
  });
});
