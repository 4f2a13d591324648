import fs from 'node:fs';
import path from 'node:path';
import { createOrg } from '../helpers/organizations.js';
import type { TestServer } from '../helpers/server.js';
import { createWorkspace, jsonStateOutputs, lock, pushState } from '../helpers/state.js';

/** A state whose secrets must never be found at rest: a sensitive output and a resource attribute. */
export function secretState(tag: string, serial = 1) {
  const secrets = { password: `pw-${tag}-Zq7xV3nK9sLr2Tb`, privateKey: `-----BEGIN KEY ${tag} Mx81Qa0oPzRt-----`, output: `out-${tag}-Hy5cW2eQ8uJm` };
  const state = Buffer.from(
    JSON.stringify(
      {
        version: 4,
        terraform_version: '1.9.8',
        serial,
        lineage: `lineage-${tag}`,
        outputs: {
          db_password: { value: secrets.output, type: 'string', sensitive: true },
          region: { value: 'eu-west-1', type: 'string' },
        },
        resources: [
          {
            mode: 'managed',
            type: 'random_password',
            name: 'db',
            provider: 'provider["registry.terraform.io/hashicorp/random"]',
            instances: [{ schema_version: 3, attributes: { result: secrets.password, private_key_pem: secrets.privateKey } }],
          },
        ],
      },
      null,
      2,
    ) + '\n',
  );
  return { state, secrets: Object.values(secrets) };
}

/** Pushes a state with its JSON outputs and JSON state into a new workspace; returns ids. */
export async function pushSecretState(t: TestServer, org: string, ws: string, tag: string) {
  const { state, secrets } = secretState(tag);
  const w = await createWorkspace(t, org, ws);
  await lock(t, w.id);
  const outputs = Buffer.from(JSON.stringify(jsonStateOutputs(state))).toString('base64');
  const jsonState = Buffer.from(JSON.stringify({ format_version: '1.0', values: { outputs: jsonStateOutputs(state) } })).toString('base64');
  const r = await pushState(t, w.id, state, { 'json-state-outputs': outputs, 'json-state': jsonState });
  if (r.status !== 201) throw new Error(`push state: ${r.status} ${r.text}`);
  return { workspaceId: w.id, svId: r.json.data.id as string, state, secrets, sv: r.json.data };
}

export async function orgNamed(t: TestServer, name: string) {
  await createOrg(t, name);
}

/** Every file under dir (recursively) whose bytes contain any of needles, with which one. */
export function filesContaining(dir: string, needles: string[]): string[] {
  const hits: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const bytes = fs.readFileSync(p);
        for (const n of needles) if (bytes.includes(n) || bytes.includes(Buffer.from(n).toString('base64'))) hits.push(`${path.relative(dir, p)}: ${n}`);
      }
    }
  };
  walk(dir);
  return hits;
}

/** The files of the fs blob store whose names end in suffix. */
export function blobFiles(dataDir: string, suffix: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith(suffix)) out.push(p);
    }
  };
  walk(path.join(dataDir, 'blobs'));
  return out;
}

export async function download(url: string): Promise<{ status: number; body: Buffer; error: unknown }> {
  const res = await fetch(url);
  try {
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), error: null };
  } catch (error) {
    return { status: res.status, body: Buffer.alloc(0), error };
  }
}

