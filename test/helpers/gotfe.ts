import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** Whether Go is installed; the go-tfe tests skip without it (.ci/run installs it). */
export const hasGo = spawnSync('go', ['version']).status === 0;

/** The gocode directory Debian's go-tfe package installs into (GOPATH mode, no module proxy). */
function debianGocode(): string {
  const r = spawnSync('dpkg', ['-L', 'golang-github-hashicorp-go-tfe-dev'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('golang-github-hashicorp-go-tfe-dev is not installed: apt-get install golang-github-hashicorp-go-tfe-dev');
  const dir = r.stdout.split('\n').find((l) => l.endsWith('/gocode'));
  if (!dir) throw new Error('no gocode directory in dpkg -L golang-github-hashicorp-go-tfe-dev');
  return dir;
}

/** Builds a Go program against Debian's go-tfe in GOPATH mode into work; returns the binary. */
export async function buildGoTfeProgram(mainFile: string, work: string): Promise<string> {
  const binary = path.join(work, path.basename(path.dirname(mainFile)));
  await run('go', ['build', '-o', binary, path.resolve(mainFile)], {
    env: { ...process.env, GO111MODULE: 'off', GOPATH: `${debianGocode()}:${work}`, GOCACHE: path.join(work, 'cache'), GOFLAGS: '' },
    timeout: 240_000,
  });
  return binary;
}
