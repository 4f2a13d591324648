import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import * as tar from 'tar';
import { archiveCommit, GitError, listTags, normalizeSourceDirectory, repositoryUrl, type GitRemote } from '../../src/vcs/git.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';

const TOKEN = 'ghp_secret-token-for-git-0123456789';
const limits = { timeoutMs: 20_000, maxFetchBytes: 50 * 1024 * 1024 };

async function entries(stream: NodeJS.ReadableStream): Promise<Map<string, { type: string; linkpath?: string; content: string }>> {
  const out = new Map<string, { type: string; linkpath?: string; content: string }>();
  const parser = new tar.Parser();
  parser.on('entry', (e) => {
    let content = '';
    e.on('data', (c: Buffer) => (content += c.toString('utf8')));
    e.on('end', () => out.set(e.path, { type: e.type, linkpath: e.linkpath, content }));
  });
  await pipeline(stream, parser as unknown as Writable);
  return out;
}

describe('git over HTTP', () => {
  let srv: GitServer;
  let remote: GitRemote;
  beforeAll(async () => {
    srv = await startGitServer({ tokens: [TOKEN] });
    remote = { url: repositoryUrl(srv.url, 'acme/terraform-aws-vpc'), provider: 'github', token: TOKEN };
  });
  afterAll(() => srv.close());

  it('lists lightweight and annotated tags with the commits they point at', async () => {
    const r = srv.repo('acme/terraform-aws-vpc');
    const c1 = r.commit({ 'main.tf': 'variable "a" {}\n' });
    r.tag('v1.0.0');
    const c2 = r.commit({ 'main.tf': 'variable "b" {}\n', 'modules/sub/main.tf': 'output "x" { value = 1 }\n' });
    r.tag('v1.1.0', { message: 'annotated' });
    r.tag('not-a-version');
    r.push();
    const tags = await listTags(remote, limits);
    expect(tags.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'not-a-version', sha: c2 },
      { name: 'v1.0.0', sha: c1 },
      { name: 'v1.1.0', sha: c2 },
    ]);
    // The token went as Basic credentials in a header, never in a URL.
    expect(srv.requests.every((q) => !q.url.includes(TOKEN))).toBe(true);
    expect(srv.requests.at(-1)!.authorization).toBe(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`);
  });

  it('archives the tree of one commit, whole or from a source directory', async () => {
    const r = srv.repo('acme/terraform-aws-vpc');
    const sha = r.head();
    const whole = await archiveCommit(remote, sha, '', limits);
    const all = await entries(whole.stream.pipe(zlib.createGunzip()));
    whole.cleanup();
    expect([...all.keys()].filter((k) => !k.endsWith('/')).sort()).toEqual(['main.tf', 'modules/sub/main.tf']);
    const sub = await archiveCommit(remote, sha, 'modules/sub/', limits);
    const some = await entries(sub.stream.pipe(zlib.createGunzip()));
    sub.cleanup();
    expect([...some.keys()]).toEqual(['main.tf']);
    expect(some.get('main.tf')!.content).toBe('output "x" { value = 1 }\n');
  });

  it('says what went wrong: missing directory, unknown commit, bad token, missing repository, server down', async () => {
    const sha = srv.repo('acme/terraform-aws-vpc').head();
    await expect(archiveCommit(remote, sha, 'nope', limits)).rejects.toMatchObject({ kind: 'bad_ref' });
    await expect(archiveCommit(remote, 'f'.repeat(40), '', limits)).rejects.toMatchObject({ kind: 'bad_ref' });
    await expect(listTags({ ...remote, token: 'wrong' }, limits)).rejects.toMatchObject({ kind: 'auth' });
    await expect(listTags({ ...remote, url: repositoryUrl(srv.url, 'acme/missing') }, limits)).rejects.toMatchObject({ kind: 'not_found' });
    srv.mode = 'down';
    try {
      const err = await listTags(remote, limits).catch((e) => e);
      expect(err).toBeInstanceOf(GitError);
      expect(err.kind).toBe('unreachable');
      expect(err.message).not.toContain(TOKEN);
    } finally {
      srv.mode = 'ok';
    }
  });

  it('refuses unsafe source directories and URLs', () => {
    expect(normalizeSourceDirectory('../x')).toBeNull();
    expect(normalizeSourceDirectory('a/../b')).toBeNull();
    expect(normalizeSourceDirectory('a:b')).toBeNull();
    expect(normalizeSourceDirectory('-x')).toBeNull();
    expect(normalizeSourceDirectory('./modules/vpc/')).toBe('modules/vpc');
    expect(normalizeSourceDirectory('')).toBe('');
    expect(() => repositoryUrl('ftp://example.com', 'a/b')).toThrow(GitError);
  });
});
