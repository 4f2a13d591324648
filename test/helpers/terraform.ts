import { hasCommand, runProcess, type CliResult } from './cli.js';
import { startTestServer, type TestServer } from './server.js';
import { selfSignedCertificate, terraformCliEnv } from './terraform-cli.js';

/**
 * The real Terraform CLI against a test Terrace: Terraform talks only HTTPS to dotted host names,
 * so the server gets a throwaway certificate for the name and a CLI config that points the name's
 * services at the listener and gives the token. Tests using it skip where terraform is absent (CI).
 */
export const terraformAvailable = hasCommand('terraform', ['version']) && hasCommand('openssl', ['version']);

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
  return terraformCliEnv(dir, host, t.url, token, cert);
}

/** Runs terraform in cwd with input on stdin (answers to its prompts); a non-zero exit is returned, not thrown. */
export function terraform(args: string[], cwd: string, env: NodeJS.ProcessEnv, input = ''): Promise<CliResult> {
  return runProcess('terraform', args, { cwd, env, input, timeout: 120_000 });
}
