// Git over HTTP(S) with the git CLI, for repositories Terrace does not trust. git is spawned
// without a shell, with no system or user configuration, no prompts, only the http(s)
// transports, a timeout on every call and a size cap on what it downloads. The token travels in
// an http.extraHeader given through the environment (GIT_CONFIG_*): never in a URL, an argument,
// a log line or a row. Fetches go into a temporary bare repository (no checkout, so no hook or
// filter of the repository ever runs) that is always removed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';

export type GitProvider = 'github' | 'github_enterprise' | 'gitlab_hosted' | 'gitlab_community_edition' | 'gitlab_enterprise_edition';

export interface GitRemote {
  /** `{http-url}/{identifier}.git`; validated by repositoryUrl(). */
  url: string;
  provider: GitProvider;
  token: string;
}

export interface GitLimits {
  timeoutMs: number;
  /** Most bytes a fetch may write into its temporary repository. */
  maxFetchBytes: number;
}

export type GitFailure = 'auth' | 'not_found' | 'unreachable' | 'timeout' | 'too_large' | 'bad_ref' | 'failed';

/** A git call failed; message is short, token-free and safe to show a user. */
export class GitError extends Error {
  override name = 'GitError';
  constructor(
    readonly kind: GitFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface RemoteTag {
  /** The tag's name without refs/tags/. */
  name: string;
  /** The commit the tag points at (peeled for annotated tags). */
  sha: string;
}

const SHA_RE = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;

/** The repository's clone URL: http-url plus identifier plus .git; throws when that is not a plain http(s) URL. */
export function repositoryUrl(httpUrl: string, identifier: string): string {
  const u = new URL(`${httpUrl.replace(/\/+$/, '')}/${identifier}.git`);
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password || u.search || u.hash) {
    throw new GitError('failed', 'the repository URL must be a plain http(s) URL');
  }
  return u.toString();
}

/** The Basic credentials GitHub and GitLab accept for a personal access token over HTTPS. */
function authorizationHeader(r: GitRemote): string {
  const user = r.provider.startsWith('gitlab') ? 'oauth2' : 'x-access-token';
  return `Authorization: Basic ${Buffer.from(`${user}:${r.token}`).toString('base64')}`;
}

/** Everything git sees of its environment: nothing inherited but PATH. */
function gitEnv(home: string, remote: GitRemote | null): NodeJS.ProcessEnv {
  const config: [string, string][] = [
    ['protocol.allow', 'never'],
    ['protocol.https.allow', 'always'],
    ['protocol.http.allow', 'always'],
    ['protocol.version', '2'],
    // A redirect could carry the header to another host.
    ['http.followRedirects', 'false'],
    ['http.lowSpeedLimit', '1000'],
    ['http.lowSpeedTime', '30'],
    ['core.hooksPath', '/dev/null'],
    ['credential.helper', ''],
    ['fetch.recurseSubmodules', 'false'],
    ['core.askPass', ''],
  ];
  if (remote) config.push(['http.extraHeader', authorizationHeader(remote)]);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

/** A user-facing reason from git's stderr, without anything that could hold a secret. */
function classify(stderr: string, what: string): GitError {
  const s = stderr.toLowerCase();
  if (/authentication failed|http 401|error: 401|the requested url returned error: 40[13]|could not read username|terminal prompts disabled/.test(s)) {
    return new GitError('auth', `${what}: the repository refused the OAuth token (check that it is valid and may read the repository)`);
  }
  if (/not found|the requested url returned error: 404|does not appear to be a git repository/.test(s)) {
    return new GitError('not_found', `${what}: the repository was not found (check the identifier and that the token may read it)`);
  }
  if (/could not resolve host|failed to connect|connection refused|couldn't connect|connection reset|empty reply|operation timed out|ssl|the requested url returned error: 5\d\d/.test(s)) {
    return new GitError('unreachable', `${what}: the repository host could not be reached or answered with an error`);
  }
  if (/not our ref|no such remote ref|couldn't find remote ref|unadvertised object|bad object|invalid object/.test(s)) {
    return new GitError('bad_ref', `${what}: the commit is not in the repository any more`);
  }
  return new GitError('failed', `${what}: git failed`);
}

interface RunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  what: string;
  /** Called every half second while git runs; return an error to stop it. */
  watch?: () => GitError | undefined;
}

/** Runs git to completion, bounded in time and in output kept; resolves with stdout. */
function runGit(args: string[], o: RunOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let stopped: GitError | undefined;
    const MAX_OUT = 16 * 1024 * 1024;
    const kill = (why: GitError) => {
      stopped ??= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      if (stdout.length > MAX_OUT) kill(new GitError('too_large', `${o.what}: the repository lists too many references`));
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      if (stderr.length < 64 * 1024) stderr += c;
    });
    const timer = setTimeout(() => kill(new GitError('timeout', `${o.what}: git did not finish within ${o.timeoutMs} ms (TERRACE_GIT_TIMEOUT_MS)`)), o.timeoutMs);
    const watcher = o.watch
      ? setInterval(() => {
          const e = o.watch!();
          if (e) kill(e);
        }, 500)
      : undefined;
    child.on('error', (err) => {
      clearTimeout(timer);
      if (watcher) clearInterval(watcher);
      reject(new GitError('failed', `${o.what}: git could not be started (${(err as NodeJS.ErrnoException).code ?? 'error'})`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (watcher) clearInterval(watcher);
      if (stopped) return reject(stopped);
      if (code !== 0) return reject(classify(stderr, o.what));
      resolve(stdout);
    });
  });
}

function dirBytes(dir: string): number {
  let n = 0;
  const walk = (d: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        try {
          n += fs.lstatSync(p).size;
        } catch {
          // Gone between readdir and stat (git renames its temporary packs).
        }
      }
    }
  };
  walk(dir);
  return n;
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-git-'));
}

/** Every tag of the repository with the commit it points at (annotated tags peeled). */
export async function listTags(remote: GitRemote, limits: GitLimits): Promise<RemoteTag[]> {
  const home = tempDir();
  try {
    const out = await runGit(['ls-remote', '--tags', '--', remote.url], {
      cwd: home,
      env: gitEnv(home, remote),
      timeoutMs: limits.timeoutMs,
      what: 'listing the repository tags',
    });
    const direct = new Map<string, string>();
    const peeled = new Map<string, string>();
    for (const line of out.split('\n')) {
      const m = /^([0-9a-f]{40,64})\trefs\/tags\/(.+)$/.exec(line);
      if (!m) continue;
      const [, sha, ref] = m as unknown as [string, string, string];
      if (ref.endsWith('^{}')) peeled.set(ref.slice(0, -3), sha);
      else direct.set(ref, sha);
    }
    return [...direct].map(([name, sha]) => ({ name, sha: peeled.get(name) ?? sha }));
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** The commit a branch points at, or null when the repository has no such branch. */
export async function resolveBranch(remote: GitRemote, branch: string, limits: GitLimits): Promise<string | null> {
  const home = tempDir();
  try {
    const out = await runGit(['ls-remote', '--heads', '--', remote.url, `refs/heads/${branch}`], {
      cwd: home,
      env: gitEnv(home, remote),
      timeoutMs: limits.timeoutMs,
      what: `reading branch ${branch}`,
    });
    const line = out.split('\n').find((l) => l.endsWith(`\trefs/heads/${branch}`));
    return line ? line.split('\t')[0]! : null;
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** A source directory as git addresses it inside a tree: "" for the root; null when it is unsafe. */
export function normalizeSourceDirectory(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) return '';
  const trimmed = raw.trim().replace(/^\.?\/+/, '').replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '.') return '';
  if (trimmed.length > 1000 || /[\0-\x1f\\:*?[\]^~]/.test(trimmed)) return null;
  const parts = trimmed.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('-'))) return null;
  return parts.join('/');
}

export interface ArchiveHandle {
  /** The tar.gz of the tree at sourceDirectory of the commit; errors if git fails while streaming. */
  stream: Readable;
  /** Removes the temporary repository; call when the stream is consumed (or abandoned). */
  cleanup(): void;
}

/**
 * Fetches one commit shallowly into a temporary bare repository and starts `git archive` of the
 * tree at sourceDirectory. The caller consumes the stream (into the blob store), then cleans up.
 */
export async function archiveCommit(remote: GitRemote, sha: string, sourceDirectory: string, limits: GitLimits): Promise<ArchiveHandle> {
  if (!SHA_RE.test(sha)) throw new GitError('bad_ref', `"${sha.slice(0, 80)}" is not a full commit SHA`);
  const dir = normalizeSourceDirectory(sourceDirectory);
  if (dir === null) throw new GitError('failed', 'the source directory is not a safe relative path');
  const home = tempDir();
  const repo = path.join(home, 'repo.git');
  const cleanup = () => fs.rmSync(home, { recursive: true, force: true });
  try {
    const local = gitEnv(home, null);
    const opts = { cwd: home, env: local, timeoutMs: limits.timeoutMs };
    await runGit(['init', '--bare', '--quiet', repo], { ...opts, what: 'preparing the clone' });
    await runGit(['--git-dir', repo, 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--depth=1', '--', remote.url, sha], {
      cwd: home,
      env: gitEnv(home, remote),
      timeoutMs: limits.timeoutMs,
      what: `fetching commit ${sha.slice(0, 12)}`,
      watch: () =>
        dirBytes(repo) > limits.maxFetchBytes
          ? new GitError('too_large', `fetching commit ${sha.slice(0, 12)}: the repository is over the limit of ${limits.maxFetchBytes} bytes (TERRACE_GIT_MAX_FETCH_BYTES)`)
          : undefined,
    });
    const treeish = dir === '' ? `${sha}^{tree}` : `${sha}:${dir}`;
    const type = await runGit(['--git-dir', repo, 'cat-file', '-t', treeish], { ...opts, what: 'reading the commit' }).catch(() => '');
    if (type.trim() !== 'tree') {
      throw new GitError('bad_ref', dir === '' ? `commit ${sha.slice(0, 12)} has no tree` : `the source directory "${dir}" does not exist at commit ${sha.slice(0, 12)}`);
    }
    return { stream: archiveStream(repo, treeish, home, local, limits.timeoutMs), cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

function archiveStream(repo: string, treeish: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Readable {
  const out = new PassThrough();
  const child = spawn('git', ['--git-dir', repo, 'archive', '--format=tar.gz', treeish], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stderr = '';
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    out.destroy(new GitError('timeout', `git archive did not finish within ${timeoutMs} ms (TERRACE_GIT_TIMEOUT_MS)`));
  }, timeoutMs);
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    if (stderr.length < 8192) stderr += c;
  });
  child.stdout.pipe(out, { end: false });
  child.on('error', () => {
    clearTimeout(timer);
    out.destroy(new GitError('failed', 'git archive could not be started'));
  });
  child.on('close', (code) => {
    clearTimeout(timer);
    if (code === 0) out.end();
    else out.destroy(new GitError('failed', 'git archive failed'));
  });
  // A consumer that stops early (a size limit) must not leave git running.
  out.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return out;
}
