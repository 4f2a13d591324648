import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTree } from '../helpers/cli.js';
import { tempDir, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';
import { startTlsServer, terraform, terraformAvailable, terraformEnv, withoutTlsVerification } from '../helpers/terraform.js';
import { filesContaining, orgNamed } from './helpers.js';

// A real `terraform apply` through the cloud block (Terraform on this machine, not on CI): the
// sensitive output and the resource attribute it comes from end up in Terrace's state, and no
// file under the data directory holds them; `terraform output -raw` still reads the secret.
const SECRET = 'tf-apply-secret-Wq4Zr8Lk2Vn6Xp';
const HOST = 'state.terrace.test';

const MAIN = `terraform {
  cloud {
    hostname     = "${HOST}"
    organization = "acme"
    workspaces {
      name = "sealed"
    }
  }
}

resource "terraform_data" "db" {
  input = "${SECRET}"
}

output "db_password" {
  value     = terraform_data.db.output
  sensitive = true
}
`;

describe.runIf(terraformAvailable)('terraform apply through the cloud block, encryption on', () => {
  const dir = tempDir('terrace-enc-tf-');
  const work = path.join(dir, 'work');
  let t: TestServer;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    let cert: string;
    ({ server: t, cert } = await startTlsServer(dir, HOST, { TERRACE_JOBS: 'false' }));
    await withoutTlsVerification(async () => {
      await orgNamed(t, 'acme');
      const ws = await createWorkspace(t, 'acme', 'sealed', t.adminToken, { 'execution-mode': 'local' });
      expect(ws.id).toMatch(/^ws-/);
    });
    writeTree(work, { 'main.tf': MAIN });
    env = terraformEnv(dir, HOST, t, t.adminToken, cert);
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tf = async (...args: string[]) => {
    const r = await terraform([...args, '-no-color'], work, env);
    if (r.code !== 0) throw new Error(`terraform ${args[0]}: exit ${r.code}\n${r.stderr}`);
    return r;
  };

  it('leaves the secret nowhere under the data directory, and terraform output still reads it', async () => {
    await tf('init', '-input=false');
    await tf('apply', '-auto-approve', '-input=false');
    expect(await t.running.jobs.runDue()).toBeGreaterThanOrEqual(1); // the state's processing: outputs extracted

    const current = await t.api('GET', '/api/v2/organizations/acme/workspaces/sealed');
    expect(current.status).toBe(200);
    const outs = await t.api('GET', `/api/v2/workspaces/${current.json.data.id}/current-state-version-outputs`);
    expect(outs.status).toBe(200);
    const out = outs.json.data.find((o: any) => o.attributes.name === 'db_password');
    expect(out.attributes.sensitive).toBe(true);
    // The secret did reach Terrace: in the state file (resource attribute and output) and the output row.
    expect((await t.api('GET', `/api/v2/state-version-outputs/${out.id}`)).json.data.attributes.value).toBe(SECRET);

    expect(filesContaining(t.dataDir, [SECRET])).toEqual([]);
    const { stdout } = await tf('output', '-raw', 'db_password');
    expect(stdout).toBe(SECRET);
  }, 240_000);
});
