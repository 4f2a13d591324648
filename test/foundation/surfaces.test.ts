import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('service discovery', () => {
  it('declares modules.v1, tfe.v2* and login.v1 as exactly application/json', async () => {
    const res = await t.api('GET', '/.well-known/terraform.json', { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')!.split(';')[0]).toBe('application/json');
    expect(res.json).toEqual({
      // terraform login: Terrace's web UI is the OAuth server (test/web/oauth.test.ts).
      'login.v1': { client: 'terraform-cli', grant_types: ['authz_code'], authz: '/app/oauth/authorize', token: '/app/oauth/token', ports: [10000, 10010] },
      'modules.v1': '/v1/modules/',
      'tfe.v2': '/api/v2/',
      'tfe.v2.1': '/api/v2/',
      'tfe.v2.2': '/api/v2/',
    });
  });

  it('answers with a Bearer token too (Terraform sends one when it has credentials)', async () => {
    const res = await t.api('GET', '/.well-known/terraform.json');
    expect(res.status).toBe(200);
  });
});

describe('ping', () => {
  it('sends the headers go-tfe and the cloud backend read', async () => {
    const res = await t.api('GET', '/api/v2/ping', { token: null });
    expect(res.status).toBe(204);
    expect(Number(res.headers.get('tfp-api-version'))).toBeGreaterThanOrEqual(2.5);
    const limit = res.headers.get('x-ratelimit-limit');
    expect(limit === null || Number(limit) >= 4).toBe(true);
    // The tfe provider sends a workspace run task's stages only to a server at least this new.
    expect(res.headers.get('x-tfe-current-version')).toMatch(/^\d+\.\d+\.\d+$/);
    const [major, minor, patch] = res.headers.get('x-tfe-current-version')!.split('.').map(Number);
    expect(major! * 1e6 + minor! * 1e3 + patch!).toBeGreaterThanOrEqual(2_000_001);
  });

  it('puts the TFE headers on every /api/v2 response, errors included', async () => {
    const res = await t.api('GET', '/api/v2/account/details', { token: null });
    expect(res.status).toBe(401);
    expect(res.headers.get('tfp-api-version')).toBe('2.5');
  });
});

describe('probes', () => {
  it('healthz says alive', async () => {
    const res = await t.api('GET', '/healthz', { token: null });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'ok' });
  });

  it('readyz checks the store and the blob store', async () => {
    const res = await t.api('GET', '/readyz', { token: null });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'ready', checks: { store: 'ok', blobs: 'ok' } });
  });
});

describe('unknown paths', () => {
  it('answer 404 as JSON:API under /api/v2', async () => {
    const res = await t.api('GET', '/api/v2/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/vnd.api+json');
    expect(res.json.errors[0]).toMatchObject({ status: '404', title: 'not found' });
    expect(res.json.errors[0].detail).toContain('/api/v2/no-such-thing');
  });

  it('answer 404 as registry errors under /v1 and /v2', async () => {
    for (const p of ['/v1/nothing/here', '/v2/nothing']) {
      const res = await t.api('GET', p);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')!.split(';')[0]).toBe('application/json');
      expect(res.json).toEqual({ errors: [expect.stringContaining(p)] });
    }
  });

  it('answer 404 as JSON:API elsewhere', async () => {
    const res = await t.api('GET', '/nope', { token: null });
    expect(res.status).toBe(404);
    expect(res.json.errors[0].status).toBe('404');
  });
});

describe('request ids', () => {
  it('echoes a request id on every response', async () => {
    const res = await t.api('GET', '/healthz', { token: null });
    expect(res.headers.get('x-request-id')).toMatch(/^[\w-]{8,}$/);
  });

  it('keeps a caller-provided request id', async () => {
    const res = await t.api('GET', '/healthz', { token: null, headers: { 'X-Request-Id': 'abc-123-def' } });
    expect(res.headers.get('x-request-id')).toBe('abc-123-def');
  });
});
