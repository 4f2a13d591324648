import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tar from 'tar';
import { tempDir, type TestServer } from './server.js';

/** The real entry point, as `npx terrace` runs it. */
export const BIN = fileURLToPath(new URL('../../bin/terrace.js', import.meta.url));

export interface CliResult { code: number; stdout: string; stderr: string }

/**
 * Runs `terrace <args>` in a child process with a clean environment: only PATH, a temporary HOME
 * (so no real credentials leak in) and what the test passes. input is written to stdin.
 */
export function terrace(args: string[], opts: { home: string; env?: Record<string, string>; input?: string; cwd?: string }): Promise<CliResult> {
  return runProcess(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH, HOME: opts.home, XDG_CONFIG_HOME: path.join(opts.home, '.config'), ...opts.env },
    input: opts.input,
  });
}

/** Runs cmd with input on stdin; the exit code is returned, not thrown (timeout: killed, code -1). */
export function runProcess(cmd: string, args: string[], opts: { cwd?: string; env: NodeJS.ProcessEnv; input?: string; timeout?: number }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeout });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/** A HOME whose credentials.tfrc.json holds token for the server (what `terrace login` writes). */
export function homeWithToken(t: TestServer, token: string): string {
  const home = tempDir('terrace-home-');
  const host = new URL(t.url).host;
  fs.mkdirSync(path.join(home, '.terraform.d'), { recursive: true });
  fs.writeFileSync(path.join(home, '.terraform.d', 'credentials.tfrc.json'), JSON.stringify({ credentials: { [host]: { token } } }));
  return home;
}

/** Writes files (relative path → content) under dir; returns dir. */
export function writeTree(dir: string, files: Record<string, string>): string {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  return dir;
}

/** The entries of a published version's archive, fetched the way Terraform fetches it. */
export async function archiveEntries(t: TestServer, token: string, addr: string, version: string): Promise<Map<string, { type: string; linkpath?: string; content?: string }>> {
  const dl = await t.api('GET', `/v1/modules/${addr}/${version}/download`, { token });
  if (dl.status !== 204) throw new Error(`download ${addr} ${version}: ${dl.status} ${dl.text}`);
  const res = await fetch(new URL(dl.headers.get('x-terraform-get')!, t.url));
  const bytes = Buffer.from(await res.arrayBuffer());
  const entries = new Map<string, { type: string; linkpath?: string; content?: string }>();
  const parser = new tar.Parser();
  parser.on('entry', (e: tar.ReadEntry) => {
    const chunks: Buffer[] = [];
    e.on('data', (c: Buffer) => chunks.push(c));
    e.on('end', () => entries.set(e.path.replace(/\/$/, ''), { type: e.type, linkpath: e.linkpath || undefined, content: e.type === 'File' ? Buffer.concat(chunks).toString('utf8') : undefined }));
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
    parser.end(bytes);
  });
  return entries;
}

export const hasCommand = (cmd: string, args: string[] = ['--version']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;

/** Rows and archive blobs of the registry: "nothing changed" is equality of two of these. */
export async function registryCounts(t: TestServer): Promise<{ modules: number; versions: number; blobs: number }> {
  const db = t.running.deps.db;
  const n = async (table: 'registry_modules' | 'registry_module_versions') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  const root = path.join(t.dataDir, 'blobs', 'modules');
  const blobs = fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.tar.gz')).length : 0;
  return { modules: await n('registry_modules'), versions: await n('registry_module_versions'), blobs };
}
