import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { tempDir } from './server.js';

/**
 * Real git repositories, made in the test with the git CLI, served on loopback by
 * `git http-backend` (the CGI program, spawned per request) behind a small Node server that
 * checks the Basic credentials the way GitHub and GitLab do (any user name, the token as the
 * password) and can be told to refuse everyone or to be down.
 */
export interface GitServer {
  /** The http-url of an OAuth client pointing at this server. */
  url: string;
  /** Tokens accepted; anything else gets 401. */
  tokens: Set<string>;
  /** 'ok' serves; 'reject' answers 401 to everyone; 'down' drops every connection unanswered. */
  mode: 'ok' | 'reject' | 'down';
  /** Authorization headers received (to prove the token was sent as Basic, never in the URL). */
  requests: { method: string; url: string; authorization: string | undefined }[];
  /**
   * Holds the next authorised requests for a repository until release(): `arrived` settles when
   * the first of them comes in (a scan or clone caught in the middle of its read).
   */
  hold(identifier: string): { arrived: Promise<void>; release(): void };
  repo(identifier: string): TestRepo;
  close(): Promise<void>;
}

export type RepoFile = string | { symlink: string };

export interface TestRepo {
  identifier: string;
  /** Replaces the working tree's files with these (path → content) and commits; returns the commit SHA. */
  commit(files: Record<string, RepoFile>, message?: string): string;
  /** Tags HEAD (or sha); annotated when a message is given. Returns the commit SHA. */
  tag(name: string, opts?: { message?: string; sha?: string }): string;
  /** Pushes the branch and every tag (forcing moved tags) to the served repository. */
  push(): void;
  /** Deletes a tag locally and on the served repository. */
  deleteTag(name: string): void;
  head(): string;
}

const GIT_ENV = {
  PATH: process.env.PATH,
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_TERMINAL_PROMPT: '0',
};

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export async function startGitServer(opts: { tokens?: string[] } = {}): Promise<GitServer> {
  const base = tempDir('terrace-gitsrv-');
  const root = path.join(base, 'root');
  const work = path.join(base, 'work');
  fs.mkdirSync(root);
  fs.mkdirSync(work);
  const repos = new Map<string, TestRepo>();

  const state: Omit<GitServer, 'url' | 'close' | 'repo' | 'hold'> = { tokens: new Set(opts.tokens ?? []), mode: 'ok', requests: [] };
  let held: { prefix: string; arrived: () => void; waiting: (() => void)[] } | undefined;
  const hold = (identifier: string) => {
    let arrived!: () => void;
    const promise = new Promise<void>((resolve) => (arrived = resolve));
    const h = { prefix: `/${identifier}.git/`, arrived, waiting: [] as (() => void)[] };
    held = h;
    return {
      arrived: promise,
      release() {
        if (held === h) held = undefined;
        for (const go of h.waiting.splice(0)) go();
      },
    };
  };

  const server = http.createServer((req, res) => {
    state.requests.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
    if (state.mode === 'down') {
      req.socket.destroy();
      return;
    }
    const auth = req.headers.authorization ?? '';
    const m = /^Basic (.+)$/.exec(auth);
    const password = m ? Buffer.from(m[1]!, 'base64').toString('utf8').split(':').slice(1).join(':') : '';
    if (state.mode === 'reject' || !state.tokens.has(password)) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('Unauthorized\n');
      return;
    }
    const u = new URL(req.url ?? '/', 'http://x');
    if (held && u.pathname.startsWith(held.prefix)) {
      held.waiting.push(() => serve(req, res, u));
      held.arrived();
      return;
    }
    serve(req, res, u);
  });
  const serve = (req: http.IncomingMessage, res: http.ServerResponse, u: URL) => {
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        HOME: '/nonexistent',
        PATH_INFO: decodeURIComponent(u.pathname),
        QUERY_STRING: u.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        REMOTE_USER: 'git',
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const sep = head.indexOf('\r\n\r\n') >= 0 ? head.indexOf('\r\n\r\n') : head.indexOf('\n\n');
      if (sep < 0) return;
      const sepLen = head[sep] === 13 ? 4 : 2;
      const lines = head.subarray(0, sep).toString('utf8').split(/\r?\n/);
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      headersDone = true;
      res.write(head.subarray(sep + sepLen));
    });
    cgi.on('close', () => {
      if (!headersDone) res.writeHead(500);
      res.end();
    });
    cgi.on('error', () => res.destroy());
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const repo = (identifier: string): TestRepo => {
    const existing = repos.get(identifier);
    if (existing) return existing;
    const bare = path.join(root, `${identifier}.git`);
    const wd = path.join(work, identifier);
    fs.mkdirSync(path.dirname(bare), { recursive: true });
    fs.mkdirSync(wd, { recursive: true });
    git(root, ['init', '--bare', '--quiet', '--initial-branch=main', bare]);
    git(wd, ['init', '--quiet', '--initial-branch=main']);
    git(wd, ['remote', 'add', 'origin', bare]);
    const r: TestRepo = {
      identifier,
      commit(files, message = 'change') {
        for (const e of fs.readdirSync(wd)) if (e !== '.git') fs.rmSync(path.join(wd, e), { recursive: true, force: true });
        for (const [rel, content] of Object.entries(files)) {
          const p = path.join(wd, rel);
          fs.mkdirSync(path.dirname(p), { recursive: true });
          if (typeof content === 'string') fs.writeFileSync(p, content);
          else fs.symlinkSync(content.symlink, p);
        }
        git(wd, ['add', '-A']);
        git(wd, ['commit', '--quiet', '--allow-empty', '-m', message]);
        return r.head();
      },
      tag(name, o = {}) {
        const target = o.sha ?? 'HEAD';
        if (o.message !== undefined) git(wd, ['tag', '-f', '-a', name, '-m', o.message, target]);
        else git(wd, ['tag', '-f', name, target]);
        return git(wd, ['rev-parse', `${name}^{commit}`]);
      },
      push() {
        git(wd, ['push', '--quiet', '--force', 'origin', 'main']);
        git(wd, ['push', '--quiet', '--force', '--tags', 'origin']);
      },
      deleteTag(name) {
        git(wd, ['tag', '-d', name]);
        git(wd, ['push', '--quiet', 'origin', `:refs/tags/${name}`]);
      },
      head: () => git(wd, ['rev-parse', 'HEAD']),
    };
    repos.set(identifier, r);
    return r;
  };

  const result = state as GitServer;
  result.url = url;
  result.repo = repo;
  result.hold = hold;
  result.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(base, { recursive: true, force: true });
  };
  return result;
}
