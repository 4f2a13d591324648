import { gzipSync } from 'node:zlib';
import type { TestServer } from './server.js';

/** A small gzip "configuration" (the bytes are stored and served as they are). */
export const CONFIG_TGZ = gzipSync(Buffer.from('main.tf\0resource "null_resource" "x" {}\n'));
export const PLAN_JSON = Buffer.from(JSON.stringify({ format_version: '1.2', terraform_version: '1.9.0', resource_changes: [] }));

export async function createTask(t: TestServer, org: string, name: string, url: string, hmacKey: string, token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/organizations/${org}/tasks`, {
    token,
    body: { data: { type: 'tasks', attributes: { name, url, category: 'task', description: null, 'hmac-key': hmacKey } } },
  });
  if (r.status !== 201) throw new Error(`create task ${name}: ${r.status} ${r.text}`);
  return r.json.data;
}

export async function attachTask(t: TestServer, wsId: string, taskId: string, stages: string[], level: 'mandatory' | 'advisory', token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/workspaces/${wsId}/tasks`, {
    token,
    body: { data: { type: 'workspace-tasks', attributes: { 'enforcement-level': level, stages }, relationships: { task: { data: { type: 'tasks', id: taskId } } } } },
  });
  if (r.status !== 201) throw new Error(`attach task: ${r.status} ${r.text}`);
  return r.json.data;
}

/** Creates a configuration version and PUTs the configuration to its upload URL, as go-tfe does. */
export async function uploadedConfiguration(t: TestServer, wsId: string, token = t.adminToken) {
  const r = await t.api('POST', `/api/v2/workspaces/${wsId}/configuration-versions`, { token, body: { data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': false } } } });
  if (r.status !== 201) throw new Error(`create configuration version: ${r.status} ${r.text}`);
  // The URL is absolute from TERRACE_PUBLIC_URL; the test reaches the same path on the server.
  const path = new URL(r.json.data.attributes['upload-url']).pathname;
  const put = await fetch(t.url + path, { method: 'PUT', body: CONFIG_TGZ, headers: { 'Content-Type': 'application/octet-stream' } });
  if (put.status !== 200) throw new Error(`upload configuration: ${put.status} ${await put.text()}`);
  return r.json.data.id as string;
}

export async function createRun(t: TestServer, wsId: string, cvId: string, attributes: Record<string, unknown> = {}, token = t.adminToken) {
  return t.api('POST', '/api/v2/runs?include=task_stages', {
    token,
    body: {
      data: {
        type: 'runs',
        attributes: { message: 'from CI', ...attributes },
        relationships: { workspace: { data: { type: 'workspaces', id: wsId } }, 'configuration-version': { data: { type: 'configuration-versions', id: cvId } } },
      },
    },
  });
}

export async function runStatus(t: TestServer, runId: string): Promise<string> {
  const r = await t.api('GET', `/api/v2/runs/${runId}`);
  return r.json.data.attributes.status;
}

export function putPlan(t: TestServer, runId: string, body: Buffer = PLAN_JSON, token = t.adminToken) {
  return t.api('PUT', `/api/v2/runs/${runId}/plan/json-output`, { token, rawBody: body, headers: { 'Content-Type': 'application/json' } });
}
