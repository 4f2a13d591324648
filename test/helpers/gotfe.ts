import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** Whether Go is installed; the go-tfe tests skip without it (.ci/run installs it). */
export const hasGo = spawnSync('go', ['version']).status === 0;

/** The gocode directory a Debian Go library package installs into (GOPATH mode, no module proxy). */
function debianGocode(pkg: string): string {
  const r = spawnSync('dpkg', ['-L', pkg], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${pkg} is not installed: apt-get install ${pkg}`);
  const dir = r.stdout.split('\n').find((l) => l.endsWith('/gocode'));
  if (!dir) throw new Error(`no gocode directory in dpkg -L ${pkg}`);
  return dir;
}

/**
 * Builds a Go program against a Debian Go library package (go-tfe by default) in GOPATH mode
 * into work; returns the binary. GOCACHE, when set, is reused (a warm cache saves minutes).
 */
export async function buildGoProgram(mainFile: string, work: string, pkg = 'golang-github-hashicorp-go-tfe-dev'): Promise<string> {
  const binary = path.join(work, path.basename(path.dirname(mainFile)));
  await run('go', ['build', '-o', binary, path.resolve(mainFile)], {
    env: { ...process.env, GO111MODULE: 'off', GOPATH: `${debianGocode(pkg)}:${work}`, GOCACHE: process.env.GOCACHE || path.join(work, 'cache'), GOFLAGS: '' },
    timeout: 300_000,
  });
  return binary;
}
