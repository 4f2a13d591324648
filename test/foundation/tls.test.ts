import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

// Terraform discovers registries only over HTTPS: Terrace can terminate TLS itself.
const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function get(url: string, ca: Buffer): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, servername: 'registry.terrace.test' }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
      })
      .on('error', reject);
  });
}

describe.runIf(hasOpenssl)('HTTPS with TERRACE_TLS_CERT and TERRACE_TLS_KEY', () => {
  let t: TestServer;
  let cert: Buffer;
  const dir = tempDir('terrace-tls-');

  beforeAll(async () => {
    const certFile = path.join(dir, 'cert.pem');
    const keyFile = path.join(dir, 'key.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=registry.terrace.test', '-addext', 'subjectAltName=DNS:registry.terrace.test,IP:127.0.0.1',
      '-keyout', keyFile, '-out', certFile,
    ], { stdio: 'ignore' });
    cert = fs.readFileSync(certFile);
    t = await startTestServer({ TERRACE_TLS_CERT: certFile, TERRACE_TLS_KEY: keyFile });
  });
  afterAll(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves discovery over HTTPS and derives an https public URL', async () => {
    expect(t.url.startsWith('https://')).toBe(true);
    expect(t.running.deps.config.publicUrl.startsWith('https://')).toBe(true);
    const r = await get(`${t.url}/.well-known/terraform.json`, cert);
    expect(r.status).toBe(200);
    expect(r.type.split(';')[0]).toBe('application/json');
    expect(JSON.parse(r.body)['modules.v1']).toBe('/v1/modules/');
  });
});
