import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, terrace, writeTree } from '../helpers/cli.js';
import { createOrganization } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// The "done when", end to end with the real Terraform CLI (on this machine, not on CI):
// terrace login, terrace publish, terraform init; then a bundle carried to a second Terrace and
// installed from there. Both tools share one login: credentials.tfrc.json.
const run = promisify(execFile);
const available = hasCommand('terraform', ['version']) && hasCommand('openssl', ['version']);
const MAIN = 'variable "cidr" {\n  default = "10.0.0.0/16"\n}\noutput "cidr" {\n  value = var.cidr\n}\n';

describe.runIf(available)('terrace with terraform', () => {
  const dir = tempDir('terrace-cli-tf-');
  const home = path.join(dir, 'home');
  const cert = path.join(dir, 'cert.pem');
  let a: TestServer;
  let b: TestServer;
  let user: { token: string };
  let env: Record<string, string>;

  beforeAll(async () => {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=registry.terrace.test',
      '-addext', 'subjectAltName=DNS:registry.terrace.test,DNS:airgap.terrace.test,IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', cert,
    ], { stdio: 'ignore' });
    const tls = { TERRACE_TLS_CERT: cert, TERRACE_TLS_KEY: path.join(dir, 'key.pem') };
    [a, b] = await Promise.all([startTestServer(tls), startTestServer(tls)]);
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // set-up only; terrace and terraform verify the certificate
    user = await createUserWithToken(a, 'publisher');
    await createOrganization(a, 'acme', user.token);
    await createOrganization(b, 'acme');
    delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    // Terraform only treats dotted names as registries: host blocks point them at the listeners.
    const hostBlock = (name: string, t: TestServer) => `host "${name}" {\n  services = {\n    "modules.v1" = "${t.url}/v1/modules/"\n    "tfe.v2" = "${t.url}/api/v2/"\n  }\n}\n`;
    writeTree(home, { '.terraform.d/hosts.tfrc': hostBlock('registry.terrace.test', a) + hostBlock('airgap.terrace.test', b) });
    writeTree(dir, { 'terraform-aws-network/main.tf': MAIN, 'terraform-aws-network/.terraformignore': 'local.tfvars\n', 'terraform-aws-network/local.tfvars': 'x = 1\n' });
    env = { NODE_EXTRA_CA_CERTS: cert };
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function init(source: string): Promise<{ version: string; main: string; files: string[] }> {
    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `module "net" {\n  source  = "${source}"\n  version = "~> 1.0"\n}\n`);
    await run('terraform', ['init', '-input=false', '-no-color', '-backend=false'], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: home, SSL_CERT_FILE: cert, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' },
    });
    const manifest = JSON.parse(fs.readFileSync(path.join(work, '.terraform/modules/modules.json'), 'utf8'));
    const net = manifest.Modules.find((m: { Key: string }) => m.Key === 'net');
    return { version: net.Version, main: fs.readFileSync(path.join(work, net.Dir, 'main.tf'), 'utf8'), files: fs.readdirSync(path.join(work, net.Dir)).sort() };
  }

  it('login, publish, terraform init; then export, import into a second Terrace and install from it', async () => {
    const login = await terrace(['login', 'registry.terrace.test'], { home, env, input: `${user.token}\n` });
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);

    const pub = await terrace(['publish', path.join(dir, 'terraform-aws-network'), '--org', 'acme', '--version', '1.0.0'], { home, env });
    expect(pub.stderr).not.toContain('error');
    expect(pub.code).toBe(0);
    expect(pub.stdout).toContain('  source  = "registry.terrace.test/acme/network/aws"\n  version = "1.0.0"\n');

    expect(await init('registry.terrace.test/acme/network/aws')).toEqual({ version: '1.0.0', main: MAIN, files: ['.terraformignore', 'main.tf'] });

    const bundle = path.join(dir, 'acme.bundle');
    const exp = await terrace(['bundle', 'export', bundle, '--org', 'acme'], { home, env });
    expect(exp.code).toBe(0);

    // On the far side of the gap: another host, another login (a site admin of that Terrace).
    const login2 = await terrace(['login', 'airgap.terrace.test'], { home, env, input: `${b.adminToken}\n` });
    expect(login2.code).toBe(0);
    const imp = await terrace(['bundle', 'import', bundle], { home, env });
    expect(imp.stderr).not.toContain('error');
    expect(imp.code).toBe(0);
    expect(imp.stdout).toContain('imported 1, skipped 0, failed 0');

    expect(await init('airgap.terrace.test/acme/network/aws')).toEqual({ version: '1.0.0', main: MAIN, files: ['.terraformignore', 'main.tf'] });
  });
});
