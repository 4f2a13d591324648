import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGoProgram, hasGo, run } from '../helpers/gotfe.js';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { startS3Fake, type S3Fake } from '../helpers/s3.js';
import { createUserWithToken, startTestServer, tempDir, type TestServer } from '../helpers/server.js';

if (!hasGo) {
  console.warn('test/registry/go-getter skipped: `go` is not installed (apt-get install golang-go golang-github-hashicorp-go-getter-dev; .ci/run does this)');
}

const FILES = { 'main.tf': 'variable "name" { type = string }\n', 'modules/child/main.tf': 'output "y" { value = 1 }\n' };

/** The lines the Go program prints: ADDR, FETCH..., then OK or ERROR. */
async function fetchWithGoGetter(binary: string, downloadUrl: string, token: string) {
  const dst = tempDir('terrace-getter-');
  fs.rmSync(dst, { recursive: true });
  const out = await run(binary, [downloadUrl, token, dst], { timeout: 60_000 }).then(
    (r) => ({ ok: true, stdout: r.stdout }),
    (err: { stdout?: string; stderr?: string; message: string }) => ({ ok: false, stdout: `${err.stdout ?? ''}${err.stderr ?? err.message}` }),
  );
  const lines = out.stdout.trim().split('\n');
  return {
    ok: out.ok && lines.at(-1) === 'OK',
    dst,
    addr: lines.find((l) => l.startsWith('ADDR '))?.slice(5) ?? '',
    fetched: lines.filter((l) => l.startsWith('FETCH ')).map((l) => l.slice(6)),
    error: lines.find((l) => l.startsWith('ERROR ')) ?? '',
  };
}

/** Flips bytes in the middle of every stored archive, keeping its size. */
function corruptArchives(root: string, suffix: string): number {
  const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith(suffix));
  for (const f of files) {
    const p = path.join(root, f);
    const buf = fs.readFileSync(p);
    for (let i = Math.floor(buf.length / 2); i < Math.min(buf.length, Math.floor(buf.length / 2) + 16); i++) buf[i] = buf[i]! ^ 0xff;
    fs.writeFileSync(p, buf);
  }
  return files.length;
}

/** The raw "key=value" parts of a URL's query, sorted (go-getter re-encodes and sorts them). */
const rawQuery = (u: string) => new URL(u).search.slice(1).split('&').filter(Boolean).sort();

describe.skipIf(!hasGo)('go-getter (Debian golang-github-hashicorp-go-getter-dev) fetches X-Terraform-Get as Terraform does', () => {
  let work: string;
  let binary: string;
  beforeAll(async () => {
    work = tempDir('terrace-go-getter-');
    binary = await buildGoProgram('test/registry/getter/main.go', work, 'golang-github-hashicorp-go-getter-dev');
  }, 320_000);
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  describe.each(['fs', 's3'] as const)('with the %s blob driver', (driver) => {
    let t: TestServer;
    let s3: S3Fake | undefined;
    let reader: { username: string; token: string };

    beforeAll(async () => {
      const env: Record<string, string> = {};
      if (driver === 's3') {
        s3 = await startS3Fake();
        Object.assign(env, s3.env);
      }
      t = await startTestServer(env);
      await createOrganization(t, 'platform');
      await publish(t, 'platform', 'network', 'aws', '1.0.0', FILES);
      reader = await createUserWithToken(t, 'reader');
      await addMember(t, 'platform', reader);
    });
    afterAll(async () => {
      await t?.close();
      await s3?.close();
    });

    it('verifies the checksum=sha256 the registry adds, fetches the URL go-getter re-encodes, and unpacks', async () => {
      const sha256 = (await t.api('GET', '/api/v2/organizations/platform/registry-modules/private/platform/network/aws/version?module_version=1.0.0')).json.data.attributes.sha256;
      expect(sha256).toMatch(/^[0-9a-f]{64}$/);
      const got = await fetchWithGoGetter(binary, `${t.url}/v1/modules/platform/network/aws/1.0.0/download`, reader.token);
      expect(got.error).toBe('');
      expect(got.ok).toBe(true);
      expect(new URL(got.addr).searchParams.get('checksum')).toBe(`sha256:${sha256}`);
      for (const [rel, content] of Object.entries(FILES)) expect(fs.readFileSync(path.join(got.dst, rel), 'utf8')).toBe(content);

      // What go-getter asked the server for: the signed URL without its checksum parameter, with
      // every other query parameter byte for byte as signed (only their order may change).
      expect(got.fetched.length).toBeGreaterThan(0);
      for (const line of got.fetched) {
        const [, url] = line.split(' ');
        expect(new URL(url!).pathname).toBe(new URL(got.addr).pathname);
        expect(rawQuery(url!)).toEqual(rawQuery(got.addr).filter((p) => !p.startsWith('checksum=')));
      }
      expect(got.fetched.some((l) => l.startsWith('GET '))).toBe(true);
      if (driver === 's3') {
        expect(got.addr).toContain('X-Amz-Signature=');
        expect(rawQuery(got.addr).some((p) => p.startsWith('response-content-disposition='))).toBe(true);
      } else {
        expect(got.addr.startsWith(`${t.url}/archives/`)).toBe(true);
      }
      fs.rmSync(got.dst, { recursive: true, force: true });
    });

    it('the same through the /api/registry/v1/modules mount', async () => {
      const got = await fetchWithGoGetter(binary, `${t.url}/api/registry/v1/modules/platform/network/aws/1.0.0/download`, reader.token);
      expect(got.error).toBe('');
      expect(got.ok).toBe(true);
      expect(got.addr).toContain('checksum=sha256:');
      expect(fs.readFileSync(path.join(got.dst, 'main.tf'), 'utf8')).toBe(FILES['main.tf']);
      fs.rmSync(got.dst, { recursive: true, force: true });
    });

    it('refuses a stored archive whose bytes changed (checksum mismatch), unpacking nothing', async () => {
      const changed = driver === 's3' ? corruptArchives(s3!.dir, '.tar.gz._S3rver_object') : corruptArchives(path.join(t.dataDir, 'blobs'), '.tar.gz');
      expect(changed).toBe(1);
      const got = await fetchWithGoGetter(binary, `${t.url}/v1/modules/platform/network/aws/1.0.0/download`, reader.token);
      expect(got.ok).toBe(false);
      expect(got.error).toMatch(/checksums did not match/i);
      expect(fs.existsSync(path.join(got.dst, 'main.tf'))).toBe(false);
      fs.rmSync(got.dst, { recursive: true, force: true });
    });
  });
});
