import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * A real PostgreSQL server for the tests (and the benchmark, which imports this file outside
 * vitest: keep it free of test-runner imports): Debian's `postgresql` package, one cluster per test
 * run in a temp directory on a free loopback port, one database per test server.
 *
 * TERRACE_TEST_POSTGRES_URL (an admin URL: a role that may create databases) uses a server
 * that is already running instead of starting one.
 */

/** The directory holding initdb and postgres, or undefined when PostgreSQL is not installed. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (fs.existsSync(root)) {
    const versions = fs
      .readdirSync(root)
      .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(root, versions[0], 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'postgres'))) return dir;
  }
  return undefined;
}

/** Whether a PostgreSQL run is possible here: a URL was given, or a server can be started. */
export function postgresAvailable(): { ok: true } | { ok: false; why: string } {
  if (process.env.TERRACE_TEST_POSTGRES_URL) return { ok: true };
  if (!postgresBinDir()) return { ok: false, why: 'PostgreSQL is not installed (apt-get install postgresql) and TERRACE_TEST_POSTGRES_URL is not set' };
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      return { ok: false, why: 'running as root and there is no "postgres" user to run the server as (initdb refuses root)' };
    }
  }
  return { ok: true };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface PostgresCluster {
  /** Admin URL (superuser, database "postgres"). */
  url: string;
  /** The postmaster's pid (when run as root the spawned child is runuser, not the server). */
  pid: number;
  stop(): Promise<void>;
}

/** initdb + postgres in a temp dir, as the "postgres" user when run as root. */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed');
  const asRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'terrace-pg-'));
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);
  if (asRoot) {
    fs.chmodSync(dir, 0o755);
    execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  }
  const run = (cmd: string, args: string[]) => (asRoot ? { cmd: 'runuser', args: ['-u', 'postgres', '--', cmd, ...args] } : { cmd, args });
  // C.UTF-8: byte-order collation (as SQLite's) with Unicode-aware character classes.
  const init = run(path.join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  execFileSync(init.cmd, init.args, { stdio: 'pipe' });
  const port = await freePort();
  const start = run(path.join(bin, 'postgres'), [
    '-D', dataDir,
    '-p', String(port),
    '-c', 'listen_addresses=127.0.0.1',
    '-c', `unix_socket_directories=${dir}`,
    '-c', 'fsync=off',
    '-c', 'synchronous_commit=off',
    '-c', 'full_page_writes=off',
    '-c', 'max_connections=400',
    '-c', 'shared_buffers=64MB',
  ]);
  const child: ChildProcess = spawn(start.cmd, start.args, { stdio: ['ignore', 'ignore', 'pipe'], detached: false });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited at start: ${stderr}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => {});
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`postgres did not accept connections within 30 s: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url,
    pid,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        // SIGQUIT to the postmaster itself (runuser does not pass it on): immediate shutdown, as
        // the data directory is thrown away anyway.
        if (pid > 0) process.kill(pid, 'SIGQUIT');
        else child.kill('SIGQUIT');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A fresh, empty database on the admin URL's server; drop() removes it (closing its connections). */
export async function createTestDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `terrace_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return { url: withDatabase(adminUrl, name), drop: () => dropTestDatabase(adminUrl, name) };
}

export async function dropTestDatabase(adminUrl: string, name: string): Promise<void> {
  if (!/^terrace_[0-9a-f]+$/.test(name)) throw new Error(`refusing to drop ${name}: not a test database`);
  const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    await c.query(`drop database if exists ${name} with (force)`);
  } finally {
    await c.end();
  }
}
