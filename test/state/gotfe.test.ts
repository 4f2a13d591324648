import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGoProgram, hasGo, run } from '../helpers/gotfe.js';
import { createOrg } from '../helpers/organizations.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

if (!hasGo) console.warn('test/state/gotfe skipped: `go` is not installed (apt-get install golang-go golang-github-hashicorp-go-tfe-dev; .ci/run does this)');

describe.skipIf(!hasGo)('workspaces and state through the real go-tfe client', () => {
  let t: TestServer;
  let work: string;
  let binary: string;

  beforeAll(async () => {
    work = tempDir('terrace-gotfe-state-');
    binary = await buildGoProgram('test/state/gotfe/main.go', work);
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
