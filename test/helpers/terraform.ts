import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { hasCommand, runProcess, type CliResult } from './cli.js';
import { startTestServer, type TestServer } from './server.js';

/**
 * The real Terraform CLI against a test Terrace: Terraform talks only HTTPS to dotted host names,
 * so the server gets a throwaway certificate for the name and a CLI config that points the name's
 * services at the listener and gives the token. Tests using it skip where terraform is absent (CI).
 */
export const terraformAvailable = hasCommand('terraform', ['version']) && hasCommand('openssl', ['version']);

/** Writes a self-signed certificate for hosts (and 127.0.0.1) into dir; returns the file paths. */
export function selfSignedCertificate(dir: string, hosts: string[]): { cert: string; key: string } {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const san = [...hosts.map((h) => `DNS:${h}`), 'IP:127.0.0.1'].join(',');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', `/CN=${hosts[0]}`, '-addext', `subjectAltName=${san}`, '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' });
  return { cert, key };
}

/** A test server on TLS with a certificate for host. */
export async function startTlsServer(dir: string, host: string, env: Record<string, string> = {}): Promise<{ server: TestServer; cert: string }> {
  const { cert, key } = selfSignedCertificate(dir, [host]);
  const server = await startTestServer({ TERRACE_TLS_CERT: cert, TERRACE_TLS_KEY: key, ...env });
  return { server, cert };
}

/**
 * Set-up calls go through the test helper's fetch, which does not know the throwaway CA: this
 * skips verification for fn only (terraform itself verifies the certificate).
 */
export async function withoutTlsVerification<T>(fn: () => Promise<T>): Promise<T> {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  try {
    return await fn();
  } finally {
    delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  }
}

/** A CLI config pointing host's registry and API services at t and giving token for it; returns terraform's environment. */
export function terraformEnv(dir: string, host: string, t: TestServer, token: string, cert: string): NodeJS.ProcessEnv {
  const cliConfig = path.join(dir, `terraformrc-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(
    cliConfig,
    `host "${host}" {\n  services = {\n    "modules.v1" = "${t.url}/v1/modules/"\n    "tfe.v2" = "${t.url}/api/v2/"\n  }\n}\ncredentials "${host}" {\n  token = "${token}"\n}\n`,
  );
  return { PATH: process.env.PATH, HOME: dir, TF_CLI_CONFIG_FILE: cliConfig, SSL_CERT_FILE: cert, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
}

/** Runs terraform in cwd with input on stdin (answers to its prompts); a non-zero exit is returned, not thrown. */
export function terraform(args: string[], cwd: string, env: NodeJS.ProcessEnv, input = ''): Promise<CliResult> {
  return runProcess('terraform', args, { cwd, env, input, timeout: 120_000 });
}
