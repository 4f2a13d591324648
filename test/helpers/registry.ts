import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import * as tar from 'tar';
import { accept, createOrg, invite } from './organizations.js';
import { tempDir, type TestServer } from './server.js';

/** Creates an organization through the API; the token's user becomes its owner. */
export async function createOrganization(t: TestServer, name: string, token: string = t.adminToken): Promise<void> {
  await createOrg(t, name, { token });
}

/** A real gzip'd tar of the given files (paths relative to the archive root). */
export async function moduleTarball(files: Record<string, string> = { 'main.tf': 'variable "x" {}\n' }): Promise<Buffer> {
  const dir = tempDir('terrace-mod-');
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  const chunks: Buffer[] = [];
  // A fixed mtime makes the same files give the same bytes, whenever the test runs.
  const stream = tar.create({ cwd: dir, portable: true, mtime: new Date(0) }, Object.keys(files));
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  fs.rmSync(dir, { recursive: true, force: true });
  return zlib.gzipSync(Buffer.concat(chunks));
}

export async function createModule(t: TestServer, org: string, name: string, provider: string, token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/organizations/${org}/registry-modules`, {
    token,
    body: { data: { type: 'registry-modules', attributes: { name, provider, 'registry-name': 'private' } } },
  });
  if (r.status !== 201) throw new Error(`create module: ${r.status} ${r.text}`);
  return r.json.data;
}

export async function createVersion(t: TestServer, org: string, name: string, provider: string, version: string, token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/organizations/${org}/registry-modules/private/${org}/${name}/${provider}/versions`, {
    token,
    body: { data: { type: 'registry-module-versions', attributes: { version } } },
  });
  if (r.status !== 201) throw new Error(`create version: ${r.status} ${r.text}`);
  return r.json.data as { id: string; attributes: Record<string, unknown>; links: { upload: string } };
}

export async function upload(url: string, body: Buffer | string): Promise<{ status: number; json: any }> {
  const res = await fetch(url, { method: 'PUT', body, headers: { 'Content-Type': 'application/octet-stream' } });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Creates the module if needed, then a version, then uploads the tarball. */
export async function publish(
  t: TestServer,
  org: string,
  name: string,
  provider: string,
  version: string,
  files?: Record<string, string>,
): Promise<string> {
  // Packed first: a large tarball takes seconds, and a keep-alive connection left idle that long
  // between two requests can be closed by the server just as the upload starts on it (ECONNRESET).
  const tarball = await moduleTarball(files);
  const existing = await t.api('GET', `/api/v2/organizations/${org}/registry-modules/private/${org}/${name}/${provider}`);
  if (existing.status === 404) await createModule(t, org, name, provider);
  const v = await createVersion(t, org, name, provider, version);
  const up = await upload(v.links.upload, tarball);
  if (up.status !== 200) throw new Error(`upload: ${up.status} ${JSON.stringify(up.json)}`);
  return v.id;
}

/** Invites the user to the organization and accepts as the user: an active, team-less member. */
export async function addMember(t: TestServer, org: string, user: { username: string; token: string }): Promise<string> {
  const id = await invite(t, t.adminToken, org, user.username);
  await accept(t, user.token, id);
  return id;
}
