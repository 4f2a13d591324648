import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { createOrg } from '../helpers/organizations.js';
import { tempDir, type TestServer } from '../helpers/server.js';
import { startTlsServer, terraform, terraformAvailable, terraformEnv, withoutTlsVerification } from '../helpers/terraform.js';
import { createOAuthClient } from '../helpers/vcs.js';
import { createVcsModule, deliverGitHub, githubTagPush, versionSettled } from '../helpers/vcs-modules.js';
import { FakeVcsProvider } from '../helpers/vcs-provider.js';

// The "done when" with the real Terraform CLI (skipped where it is absent, as on CI):
// a tag pushed to a repository and announced by the provider's webhook is installable.
const HOST = 'vcs.terrace.test';
const PAT = 'ghp_terraformVcsPersonalToken00001';
const MAIN = 'variable "cidr" {\n  default = "10.0.0.0/16"\n}\noutput "cidr" {\n  value = var.cidr\n}\n';

describe.runIf(terraformAvailable)('a module published from a git tag, installed by terraform init', () => {
  const dir = tempDir('terrace-vcs-tf-');
  let t: TestServer;
  let cert: string;
  let git: GitServer;
  let github: FakeVcsProvider;

  beforeAll(async () => {
    git = await startGitServer({ tokens: [PAT] });
    github = await new FakeVcsProvider('github').addToken(PAT, 'octocat').addRepository('acme/terraform-aws-network').start();
    ({ server: t, cert } = await startTlsServer(dir, HOST, { TERRACE_VCS_REQUEST_TIMEOUT_MS: '2000' }));
    await withoutTlsVerification(async () => {
      await createOrg(t, 'acme');
    });
  });
  afterAll(async () => {
    await t?.close();
    await github?.close();
    await git?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('push a tag, deliver the webhook, terraform init installs that version', async () => {
    const repo = git.repo('acme/terraform-aws-network');
    repo.commit({ 'main.tf': 'variable "cidr" {}\n' });
    repo.push();
    const { url, secret } = await withoutTlsVerification(async () => {
      const { tokenId } = await createOAuthClient(t, 'acme', github, PAT, { attributes: { 'http-url': git.url } });
      const m = await createVcsModule(t, 'acme', { identifier: 'acme/terraform-aws-network', 'oauth-token-id': tokenId });
      const w = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/network/aws/vcs-webhook');
      expect(w.json.data.attributes.url).toBe(m.attributes['vcs-repo']['webhook-url']);
      return w.json.data.attributes as { url: string; secret: string };
    });
    const sha = repo.commit({ 'main.tf': MAIN });
    repo.tag('v1.0.0');
    repo.push();
    const delivered = await withoutTlsVerification(() => deliverGitHub(t, url, 'push', githubTagPush('acme/terraform-aws-network', 'v1.0.0', { after: sha }), secret));
    expect(delivered.status).toBe(202);
    expect(await withoutTlsVerification(() => versionSettled(t, 'acme', 'network', 'aws', '1.0.0'))).toMatchObject({ status: 'ok' });

    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    fs.writeFileSync(path.join(work, 'main.tf'), `module "net" {\n  source  = "${HOST}/acme/network/aws"\n  version = "~> 1.0"\n}\n`);
    const init = await terraform(['init', '-input=false', '-no-color', '-backend=false'], work, terraformEnv(dir, HOST, t, t.adminToken, cert));
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const manifest = JSON.parse(fs.readFileSync(path.join(work, '.terraform/modules/modules.json'), 'utf8'));
    const net = manifest.Modules.find((m: { Key: string }) => m.Key === 'net');
    expect(net.Version).toBe('1.0.0');
    expect(fs.readFileSync(path.join(work, net.Dir, 'main.tf'), 'utf8')).toBe(MAIN);
  });
});
