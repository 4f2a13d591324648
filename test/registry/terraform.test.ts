import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { createUserWithToken, tempDir, type TestServer } from '../helpers/server.js';
import { startTlsServer, terraformAvailable, terraformEnv, withoutTlsVerification } from '../helpers/terraform.js';

// The real Terraform CLI, when the machine has one: it resolves and installs a module from
// Terrace over HTTPS with a token, exactly as users run it. Skipped where terraform is absent.
const run = promisify(execFile);
const HOST = 'registry.terrace.test';

describe.runIf(terraformAvailable)('terraform init against Terrace', () => {
  let t: TestServer;
  const dir = tempDir('terrace-tf-');
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const started = await startTlsServer(dir, HOST);
    t = started.server;
    const user = await withoutTlsVerification(async () => {
      await createOrganization(t, 'acme');
      await publish(t, 'acme', 'network', 'aws', '1.0.0', { 'main.tf': 'variable "cidr" {\n  default = "10.0.0.0/16"\n}\noutput "cidr" {\n  value = var.cidr\n}\n' });
      await publish(t, 'acme', 'network', 'aws', '1.4.0', {
        'main.tf': 'variable "cidr" {\n  default = "10.1.0.0/16"\n}\noutput "cidr" {\n  value = var.cidr\n}\n',
        'modules/child/main.tf': 'output "ok" {\n  value = true\n}\n',
      });
      await publish(t, 'acme', 'network', 'aws', '2.0.0-beta.1', { 'main.tf': 'output "cidr" {\n  value = "beta"\n}\n' });
      const u = await createUserWithToken(t, 'tf-user');
      await addMember(t, 'acme', u);
      return u;
    });
    env = terraformEnv(dir, HOST, t, user.token, started.cert);
  });

  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function init(source: string, version: string) {
    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `module "net" {\n  source  = "${source}"\n  version = "${version}"\n}\noutput "cidr" {\n  value = module.net.cidr\n}\n`);
    const res = await run('terraform', ['init', '-input=false', '-no-color'], { cwd: work, env }).catch((e) => e as { stdout: string; stderr: string; code: number });
    return { work, res };
  }

  it('installs the newest version matching the constraint, pre-releases ignored', async () => {
    const { work, res } = await init(`${HOST}/acme/network/aws`, '~> 1.0');
    expect((res as { stderr?: string }).stderr ?? '').not.toMatch(/Error/);
    const manifest = JSON.parse(fs.readFileSync(path.join(work, '.terraform/modules/modules.json'), 'utf8'));
    const net = manifest.Modules.find((m: { Key: string }) => m.Key === 'net');
    expect(net.Version).toBe('1.4.0');
    expect(fs.readFileSync(path.join(work, net.Dir, 'main.tf'), 'utf8')).toContain('10.1.0.0/16');
    expect(fs.existsSync(path.join(work, net.Dir, 'modules/child/main.tf'))).toBe(true);
  });

  it('resolves the namespace in another case and a submodule path', async () => {
    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `module "child" {\n  source  = "${HOST}/ACME/network/aws//modules/child"\n  version = "1.4.0"\n}\n`);
    await run('terraform', ['init', '-input=false', '-no-color'], { cwd: work, env });
    const manifest = JSON.parse(fs.readFileSync(path.join(work, '.terraform/modules/modules.json'), 'utf8'));
    const child = manifest.Modules.find((m: { Key: string }) => m.Key === 'child');
    expect(child.Version).toBe('1.4.0');
    expect(fs.readFileSync(path.join(work, child.Dir, 'main.tf'), 'utf8')).toContain('output "ok"');
  });

  it('reports a missing module and a bad token as Terraform users see them', async () => {
    const missing = await init(`${HOST}/acme/nothing/aws`, '1.0.0');
    expect(String((missing.res as { stderr?: string }).stderr)).toMatch(/not found|Module not found/i);
    const badConfig = path.join(dir, 'bad-terraformrc');
    fs.writeFileSync(badConfig, fs.readFileSync(env.TF_CLI_CONFIG_FILE!, 'utf8').replace(/token = ".*"/, 'token = "nope.terrace.nope"'));
    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `module "net" {\n  source  = "${HOST}/acme/network/aws"\n  version = "1.0.0"\n}\n`);
    const res = await run('terraform', ['init', '-input=false', '-no-color'], { cwd: work, env: { ...env, TF_CLI_CONFIG_FILE: badConfig } }).catch((e) => e);
    expect(String(res.stderr)).toMatch(/401/);
  });

  it('counted the downloads Terraform made', async () => {
    const r = await withoutTlsVerification(() => t.api('GET', '/v2/modules/acme/network/aws/downloads/summary'));
    expect(r.json.data.attributes.total).toBeGreaterThanOrEqual(2);
  });
});
