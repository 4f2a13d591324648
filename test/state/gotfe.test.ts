import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);
const hasGo = spawnSync('go', ['version']).status === 0;
if (!hasGo) console.warn('test/state/gotfe skipped: `go` is not installed (apt-get install golang-go golang-github-hashicorp-go-tfe-dev; .ci/run does this)');

function debianGocode(): string {
  const r = spawnSync('dpkg', ['-L', 'golang-github-hashicorp-go-tfe-dev'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('golang-github-hashicorp-go-tfe-dev is not installed: apt-get install golang-github-hashicorp-go-tfe-dev');
  const dir = r.stdout.split('\n').find((l) => l.endsWith('/gocode'));
  if (!dir) throw new Error('no gocode directory in dpkg -L golang-github-hashicorp-go-tfe-dev');
  return dir;
}

describe.skipIf(!hasGo)('workspaces and state through the real go-tfe client', () => {
  let t: TestServer;
  let work: string;
  let binary: string;

  beforeAll(async () => {
    work = tempDir('terrace-gotfe-state-');
    binary = path.join(work, 'gotfe-state');
    await run('go', ['build', '-o', binary, path.resolve('test/state/gotfe/main.go')], {
      env: { ...process.env, GO111MODULE: 'off', GOPATH: `${debianGocode()}:${work}`, GOCACHE: path.join(work, 'cache'), GOFLAGS: '' },
      timeout: 240_000,
    });
    t = await startTestServer();
  }, 300_000);

  afterAll(async () => {
    await t?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('creates and locks a workspace, pushes a state, reads its outputs (sensitive by id) and file, unlocks and deletes', async () => {
    const owner = await createUserWithToken(t, 'gotfe-state-owner');
    await createOrg(t, 'gotfe-state', { token: owner.token });
    const { stdout } = await run(binary, [], {
      env: { ...process.env, TERRACE_ADDRESS: t.url, TERRACE_TOKEN: owner.token, ORG: 'gotfe-state', STATE_FILE: path.resolve('test/fixtures/state/strings.json') },
      timeout: 60_000,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`go-tfe program failed: ${err.stderr || err.message}`);
    });
    expect(stdout.trim()).toBe('OK');
  }, 90_000);
});
