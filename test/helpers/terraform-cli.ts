import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * What the Terraform CLI needs to talk to a Terrace, without a test runner: the tests
 * (./terraform.ts) and the benchmark (bench/terraform-init.ts) both use it. Terraform talks only
 * HTTPS to dotted host names, so the server gets a throwaway certificate for the name, and a CLI
 * config points the name's services at the listener and gives the token.
 */

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

/** A CLI config pointing host's registry and API services at url and giving token for it; returns terraform's environment. */
export function terraformCliEnv(dir: string, host: string, url: string, token: string, cert: string): NodeJS.ProcessEnv {
  const cliConfig = path.join(dir, `terraformrc-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(
    cliConfig,
    `host "${host}" {\n  services = {\n    "modules.v1" = "${url}/v1/modules/"\n    "tfe.v2" = "${url}/api/v2/"\n  }\n}\ncredentials "${host}" {\n  token = "${token}"\n}\n`,
  );
  return { PATH: process.env.PATH, HOME: dir, TF_CLI_CONFIG_FILE: cliConfig, SSL_CERT_FILE: cert, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
}
