import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGoProgram, hasGo, run } from '../helpers/gotfe.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

if (!hasGo) {
  console.warn('test/gotfe skipped: `go` is not installed (apt-get install golang-go golang-github-hashicorp-go-tfe-dev; .ci/run does this)');
}

describe.skipIf(!hasGo)('the real go-tfe client (Debian golang-github-hashicorp-go-tfe-dev)', () => {
  let t: TestServer;
  let work: string;
  let binary: string;

  beforeAll(async () => {
    work = tempDir('terrace-gotfe-');
    binary = await buildGoProgram('test/gotfe/main.go', work);
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
