import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import semver from 'semver';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { startS3Fake, type S3Fake } from '../helpers/s3.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

/**
 * Resolves and installs a module exactly as Terraform does: discovery, versions, download,
 * X-Terraform-Get resolved against the download URL (only /, ./, ../ prefixes are relative),
 * then go-getter's HEAD and GET without credentials, and unpacking.
 */
async function terraformInstall(host: string, source: string, constraint: string, token: string): Promise<{ dir: string; getUrl: string }> {
  const discoveryUrl = `${host}/.well-known/terraform.json`;
  const disco = await fetch(discoveryUrl, { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
  expect(disco.status).toBe(200);
  expect(disco.headers.get('content-type')!.split(';')[0]).toBe('application/json');
  const base = new URL(((await disco.json()) as Record<string, string>)['modules.v1']!, discoveryUrl);
  const headers = { Authorization: `Bearer ${token}`, 'X-Terraform-Version': '1.14.0', 'User-Agent': 'Terraform/1.14.0' };

  const versionsUrl = new URL(`${source}/versions`, base);
  const versions = await fetch(versionsUrl, { headers });
  expect(versions.status).toBe(200);
  const body = (await versions.json()) as { modules: { versions: { version: string }[] }[] };
  const chosen = semver.maxSatisfying(body.modules[0]!.versions.map((v) => v.version), constraint);
  expect(chosen).not.toBeNull();

  const downloadUrl = new URL(`${source}/${chosen}/download`, base);
  const dl = await fetch(downloadUrl, { headers, redirect: 'follow' });
  expect(dl.status).toBe(204);
  const get = dl.headers.get('x-terraform-get');
  expect(get).toBeTruthy();
  const getUrl = /^(\/|\.\/|\.\.\/)/.test(get!) ? new URL(get!, downloadUrl).toString() : get!;
  expect(new URL(getUrl).pathname).toMatch(/\.tar\.gz$/);

  // go-getter: plain client, no Authorization; HEAD first (failures ignored), then GET.
  await fetch(getUrl, { method: 'HEAD' });
  const archive = await fetch(getUrl);
  expect(archive.status).toBe(200);
  expect(archive.headers.get('content-encoding')).toBeNull();
  const dir = tempDir('terrace-install-');
  await pipeline(Readable.fromWeb(archive.body as import('node:stream/web').ReadableStream), tar.x({ cwd: dir, strict: true }));
  return { dir, getUrl };
}

const FILES = {
  'main.tf': 'resource "null_resource" "x" {}\n',
  'variables.tf': 'variable "name" { type = string }\n',
  'modules/child/main.tf': 'output "y" { value = 1 }\n',
};

function expectInstalled(dir: string) {
  for (const [rel, content] of Object.entries(FILES)) {
    expect(fs.readFileSync(path.join(dir, rel), 'utf8')).toBe(content);
  }
}

describe.each([
  ['fs', false],
  ['s3', false],
  ['s3', true],
] as const)('Terraform resolves a published module (%s driver, proxy=%s)', (driver, proxy) => {
  let t: TestServer;
  let s3: S3Fake | undefined;
  let user: { token: string };

  beforeAll(async () => {
    const env: Record<string, string> = {};
    if (driver === 's3') {
      s3 = await startS3Fake({ TERRACE_S3_PREFIX: 'terrace', TERRACE_S3_PROXY_DOWNLOADS: String(proxy) });
      Object.assign(env, s3.env);
    }
    t = await startTestServer(env);
    await createOrganization(t, 'platform');
    await publish(t, 'platform', 'network', 'aws', '1.0.0', { 'main.tf': 'old\n' });
    await publish(t, 'platform', 'network', 'aws', '1.4.2', FILES);
    await publish(t, 'platform', 'network', 'aws', '2.0.0-rc.1', { 'main.tf': 'pre\n' });
    // The reader sees the module through organization membership, with no team permission.
    const reader = await createUserWithToken(t, 'reader');
    await addMember(t, 'platform', reader);
    user = reader;
  });

  afterAll(async () => {
    await t.close();
    await s3?.close();
  });

  it('installs the highest version matching the constraint, pre-releases ignored', async () => {
    const { dir, getUrl } = await terraformInstall(t.url, 'platform/network/aws', '^1.0.0', user.token);
    expectInstalled(dir);
    if (driver === 's3' && !proxy) {
      expect(getUrl).toContain('X-Amz-Signature=');
      expect(getUrl).toMatch(/X-Amz-Expires=300(&|$)/);
    } else {
      expect(getUrl.startsWith(t.url + '/archives/')).toBe(true);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('accepts the namespace in another case, as users type it', async () => {
    const { dir } = await terraformInstall(t.url, 'PLATFORM/Network/aws', '1.4.2', user.token);
    expectInstalled(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('counted both downloads', async () => {
    const r = await t.api('GET', '/v2/modules/platform/network/aws/downloads/summary');
    expect(r.json.data.attributes.total).toBe(2);
  });
});
