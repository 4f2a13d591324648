import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);
const hasGo = spawnSync('go', ['version']).status === 0;
if (!hasGo) {
  console.warn('test/gotfe skipped: `go` is not installed (apt-get install golang-go golang-github-hashicorp-go-tfe-dev; .ci/run does this)');
}

/** The gocode directory Debian's go-tfe package installs into (GOPATH mode, no module proxy). */
function debianGocode(): string {
  const r = spawnSync('dpkg', ['-L', 'golang-github-hashicorp-go-tfe-dev'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('golang-github-hashicorp-go-tfe-dev is not installed: apt-get install golang-github-hashicorp-go-tfe-dev');
  const dir = r.stdout.split('\n').find((l) => l.endsWith('/gocode'));
  if (!dir) throw new Error('no gocode directory in dpkg -L golang-github-hashicorp-go-tfe-dev');
  return dir;
}

describe.skipIf(!hasGo)('the real go-tfe client (Debian golang-github-hashicorp-go-tfe-dev)', () => {
  let t: TestServer;
  let work: string;
  let binary: string;

  beforeAll(async () => {
    work = tempDir('terrace-gotfe-');
    binary = path.join(work, 'gotfe');
    await run('go', ['build', '-o', binary, path.resolve('test/gotfe/main.go')], {
      env: { ...process.env, GO111MODULE: 'off', GOPATH: `${debianGocode()}:${work}`, GOCACHE: path.join(work, 'cache'), GOFLAGS: '' },
      timeout: 240_000,
    });
    t = await startTestServer();
  }, 300_000);
  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('creates, reads, lists, updates, renames and deletes an organization, and adds and removes team members both ways', async () => {
    const owner = await createUserWithToken(t, 'gotfe-owner');
    await createUserWithToken(t, 'gotfe-invitee');
    const { stdout } = await run(binary, [], {
      env: {
        ...process.env,
        TERRACE_ADDRESS: t.url,
        TERRACE_TOKEN: owner.token,
        OWNER_USERNAME: 'gotfe-owner',
        INVITEE_USERNAME: 'gotfe-invitee',
        INVITEE_EMAIL: 'gotfe-invitee@example.com',
      },
      timeout: 60_000,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`go-tfe program failed: ${err.stderr || err.message}`);
    });
    expect(stdout.trim()).toBe('OK');
  }, 90_000);
});
