import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeWithToken, terrace } from '../helpers/cli.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { orgNamed, pushSecretState } from '../encryption/helpers.js';

let t: TestServer;
const homes: string[] = [];

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  await orgNamed(t, 'acme');
  await pushSecretState(t, 'acme', 'ws', 'cli');
});
afterAll(async () => {
  await t?.close();
  for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
});

const as = (token: string, ...args: string[]) => {
  const home = homeWithToken(t, token);
  homes.push(home);
  return terrace(['admin', 'encryption-status', ...args, '--host', t.url], { home });
};

describe('terrace admin encryption-status', () => {
  it('prints the status for a site admin, as a table and as the API resource with --json', async () => {
    const r = await as(t.adminToken);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^FIELD +VALUE\n/);
    expect(r.stdout).toMatch(/^current key +default$/m);
    expect(r.stdout).toMatch(/^blobs by key +default=3$/m);
    expect(r.stdout).toMatch(/^plaintext blobs +0$/m);
    expect(r.stdout).toMatch(/^complete +yes$/m);
    const j = await as(t.adminToken, '--json');
    expect(j.code).toBe(0);
    const data = JSON.parse(j.stdout);
    expect(data).toMatchObject({ id: 'encryption', type: 'encryption-status' });
    expect(data.attributes['current-key-id']).toBe('default');
    expect(data.attributes['blobs-by-key-id']).toEqual({ default: 3 });
    expect(data.attributes.complete).toBe(true);
  });

  it('fails with not found and a hint for a user who is not a site admin', async () => {
    const u = await createUserWithToken(t, 'plain');
    const r = await as(u.token);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('reading the encryption status (site admins only): not found');
  });
});
