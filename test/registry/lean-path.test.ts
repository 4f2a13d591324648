import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { ManualClock } from '../../src/clock.js';
import { addMember, createOrganization, publish } from '../helpers/registry.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The lean path (src/registry/lean.ts) answers version lists, download locations and list and
 * search pages from the caches without the app. The first request of each kind below is the
 * app's (nothing is cached yet) and the second the lean path's: they must be the same answer,
 * headers included, counted in the same metric, and never reach a caller the app would refuse.
 */

let t: TestServer;
let clock: ManualClock;
let member: { id: string; username: string; token: string };

beforeAll(async () => {
  clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));
  t = await startTestServer({ TERRACE_PUBLIC_READ: 'false' }, { clock });
  await createOrganization(t, 'acme');
  await createOrganization(t, 'hidden');
  await publish(t, 'acme', 'vpc', 'aws', '1.0.0');
  await publish(t, 'acme', 'subnet', 'aws', '1.0.0');
  await publish(t, 'hidden', 'vpc', 'aws', '1.0.0');
  member = await createUserWithToken(t, 'lean-member');
  await addMember(t, 'acme', member);
});
afterAll(async () => {
  await t.close();
});

/** Everything a client sees of an answer but the values that differ per request by design. */
function observable(r: { status: number; headers: Headers; text: string }) {
  const headers = [...r.headers.entries()].filter(([name]) => name !== 'date' && name !== 'x-request-id').sort();
  return { status: r.status, headers, body: r.text, requestIdPresent: r.headers.get('x-request-id') !== null };
}

async function metricCount(route: string, status: number): Promise<number> {
  const r = await t.api('GET', '/metrics', { token: null });
  const line = r.text.split('\n').find((l) => l.startsWith('terrace_http_request_duration_seconds_count') && l.includes(`route="${route}"`) && l.includes(`status="${status}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

const LIST_TARGETS: [string, string][] = [
  ['/v1/modules/search?q=vpc', '/v1/modules/search'],
  ['/v1/modules/search?q=aws&limit=1', '/v1/modules/search'],
  ['/v1/modules/search?q=aws&limit=1&offset=1', '/v1/modules/search'],
  ['/v1/modules', '/v1/modules'],
  ['/v1/modules/', '/v1/modules/'],
  ['/v1/modules/acme', '/v1/modules/:namespace'],
  ['/v1/modules/acme/vpc', '/v1/modules/:namespace/:name'],
  ['/v1/modules?provider=aws', '/v1/modules'],
  // The app's both times (the API's headers), and the same answer.
  ['/api/registry/v1/modules/search?q=subnet', '/api/registry/v1/modules/search'],
  // Not list routes: module detail, the app's both times.
  ['/v1/modules/acme/vpc/aws', '/v1/modules/:namespace/:name/:provider'],
];

describe('list and search pages', () => {
  it.each(LIST_TARGETS)('%s: the cached answer is the app\'s, headers and metric included', async (target, route) => {
    const before = await metricCount(route, 200);
    const first = await t.api('GET', target, { token: member.token });
    const second = await t.api('GET', target, { token: member.token });
    expect(first.status).toBe(200);
    expect(observable(second)).toEqual(observable(first));
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await metricCount(route, 200)).toBe(before + 2);
  });

  it('a page cached for a caller who reads more is not served to one who reads less', async () => {
    const admin = await t.api('GET', '/v1/modules/search?q=vpc');
    expect(admin.json.modules.map((m: { namespace: string }) => m.namespace).sort()).toEqual(['acme', 'hidden']);
    for (let i = 0; i < 2; i++) {
      const r = await t.api('GET', '/v1/modules/search?q=vpc', { token: member.token });
      expect(r.json.modules.map((m: { namespace: string }) => m.namespace)).toEqual(['acme']);
    }
  });

  it('a cached page is refused to no token, an unknown token and a malformed header, as the app refuses them', async () => {
    await t.api('GET', '/v1/modules/acme', { token: member.token });
    expect((await t.api('GET', '/v1/modules/acme', { token: member.token })).status).toBe(200);
    const none = await t.api('GET', '/v1/modules/acme', { token: null });
    expect(none.status).toBe(401);
    const unknown = await t.api('GET', '/v1/modules/acme', { token: 'not-a-token' });
    expect(unknown.status).toBe(401);
    expect(unknown.json).toEqual({ errors: ['the API token is invalid or has expired'] });
    const malformed = await t.api('GET', '/v1/modules/acme', { token: null, headers: { Authorization: `Token ${member.token}` } });
    expect(malformed.status).toBe(401);
    expect(malformed.json).toEqual({ errors: ['the Authorization header must be "Bearer <token>"'] });
  });

  it('a publish shows in the next page at once', async () => {
    const names = async () => (await t.api('GET', '/v1/modules/acme', { token: member.token })).json.modules.map((m: { name: string }) => m.name).sort();
    expect(await names()).toEqual(['subnet', 'vpc']);
    expect(await names()).toEqual(['subnet', 'vpc']);
    await publish(t, 'acme', 'gateway', 'aws', '1.0.0');
    expect(await names()).toEqual(['gateway', 'subnet', 'vpc']);
  });

  it('keeps a request id the client supplied', async () => {
    await t.api('GET', '/v1/modules/search?q=subnet', { token: member.token });
    const r = await t.api('GET', '/v1/modules/search?q=subnet', { token: member.token, headers: { 'X-Request-Id': 'ci-run-42' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBe('ci-run-42');
  });
});

describe('download locations', () => {
  const download = () => t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download', { token: member.token });
  const expiryOf = (location: string) => Number(location.split('/')[3]!.split('.')[0]);

  it('are the app\'s, one signed URL per version for a twentieth of the URL lifetime, never past it', async () => {
    const first = await download();
    const second = await download();
    expect(first.status).toBe(204);
    expect(observable(second)).toEqual(observable(first));
    const location = first.headers.get('x-terraform-get')!;
    const now = clock.now().getTime() / 1000;
    // TERRACE_ARCHIVE_URL_TTL is 300 s: the expiry is rounded down to a multiple of 15 s.
    expect(expiryOf(location) % 15).toBe(0);
    expect(expiryOf(location)).toBeLessThanOrEqual(now + 300);
    expect(expiryOf(location)).toBeGreaterThan(now + 300 - 15);
    clock.advance(15_000);
    const later = (await download()).headers.get('x-terraform-get')!;
    expect(expiryOf(later)).toBe(expiryOf(location) + 15);
    expect((await fetch(new URL(later, t.url))).status).toBe(200);
  });

  it('every one is counted', async () => {
    const total = async () => (await t.api('GET', '/v2/modules/acme/subnet/aws/downloads/summary', { token: member.token })).json.data.attributes.total;
    const before = await total();
    for (let i = 0; i < 3; i++) expect((await t.api('GET', '/v1/modules/acme/subnet/aws/1.0.0/download', { token: member.token })).status).toBe(204);
    expect(await total()).toBe(before + 3);
  });
});

describe('one keep-alive connection', () => {
  /** GETs over a single kept-alive socket: whether the socket was reused, the status and the body. */
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  afterAll(() => agent.destroy());
  function get(path: string, token: string | null): Promise<{ reused: boolean; status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.get(new URL(path, t.url), { agent, headers: token ? { Authorization: `Bearer ${token}` } : {} }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ reused: req.reusedSocket, status: res.statusCode!, body }));
      });
      req.on('error', reject);
    });
  }

  it('answers each request as its own token says: a token swapped or revoked mid-connection counts at once', async () => {
    const other = await createUserWithToken(t, 'lean-keepalive');
    await addMember(t, 'acme', other);
    const hidden = '/v1/modules/hidden/vpc/aws/versions';
    const acme = '/v1/modules/acme/vpc/aws/versions';
    // The admin's token, twice (the second from the caches), then the member's on the same socket.
    expect((await get(hidden, t.adminToken)).status).toBe(200);
    const admin = await get(hidden, t.adminToken);
    expect(admin).toMatchObject({ reused: true, status: 200 });
    expect(await get(hidden, other.token)).toMatchObject({ reused: true, status: 404 });
    expect(await get(hidden, other.token)).toMatchObject({ reused: true, status: 404 });
    expect(await get(acme, other.token)).toMatchObject({ reused: true, status: 200 });
    expect(await get(acme, other.token)).toMatchObject({ reused: true, status: 200 });
    // No token, a malformed header, then the admin again.
    expect(await get(acme, null)).toMatchObject({ reused: true, status: 401 });
    expect(await get(acme, 'not a token')).toMatchObject({ reused: true, status: 401 });
    expect(await get(hidden, t.adminToken)).toMatchObject({ reused: true, status: 200, body: admin.body });

    // The member's token deleted (on another connection): its next request on this one is refused.
    const tokens = await t.api('GET', `/api/v2/users/${other.id}/authentication-tokens`, { token: other.token });
    expect(tokens.status).toBe(200);
    expect(await get(acme, other.token)).toMatchObject({ reused: true, status: 200 });
    const del = await t.api('DELETE', `/api/v2/authentication-tokens/${tokens.json.data[0].id}`, { token: t.adminToken });
    expect(del.status).toBe(204);
    expect(await get(acme, other.token)).toMatchObject({ reused: true, status: 401 });
    expect(await get(acme, other.token)).toMatchObject({ reused: true, status: 401 });
  });
});

describe('version lists and download locations', () => {
  it.each([
    ['/v1/modules/acme/vpc/aws/versions', '/v1/modules/:namespace/:name/:provider/versions', 200],
    ['/v1/modules/acme/vpc/aws/1.0.0/download', '/v1/modules/:namespace/:name/:provider/:version/download', 204],
  ] as const)('%s: counted in the request metric whichever path answers', async (target, route, status) => {
    const before = await metricCount(route, status);
    for (let i = 0; i < 3; i++) expect((await t.api('GET', target, { token: member.token })).status).toBe(status);
    expect(await metricCount(route, status)).toBe(before + 3);
  });
});

describe('the headers read, as the wire sends them', () => {
  /**
   * One raw HTTP/1.1 request (header names and repeats exactly as given, which fetch and
   * http.request would normalise), answered on its own connection: status and headers.
   */
  function raw(target: string, headers: [string, string][]): Promise<{ status: number; headers: Map<string, string[]> }> {
    const { hostname, port } = new URL(t.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(`GET ${target} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`);
      });
      let text = '';
      socket.setEncoding('latin1').on('data', (d: string) => (text += d));
      socket.on('error', reject);
      socket.on('end', () => {
        const [head] = text.split('\r\n\r\n');
        const [statusLine, ...lines] = head!.split('\r\n');
        const map = new Map<string, string[]>();
        for (const l of lines) {
          const i = l.indexOf(':');
          const name = l.slice(0, i).toLowerCase();
          map.set(name, [...(map.get(name) ?? []), l.slice(i + 1).trim()]);
        }
        resolve({ status: Number(statusLine!.split(' ')[1]), headers: map });
      });
    });
  }
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const targets = ['/v1/modules/acme/vpc/aws/versions', '/v1/modules/acme/vpc/aws/1.0.0/download', '/v1/modules/search?q=vpc'];

  it.each(targets)('%s: the token and request id whatever the names\' case, on the first answer and on the cached ones', async (target) => {
    const answers = [];
    for (const [auth, id] of [['Authorization', 'X-Request-Id'], ['AUTHORIZATION', 'x-request-id'], ['authorization', 'X-REQUEST-ID']] as const) {
      answers.push(await raw(target, [[auth, `Bearer ${member.token}`], [id, `case-${auth}`]]));
      expect(answers.at(-1)!.headers.get('x-request-id')).toEqual([`case-${auth}`]);
    }
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([target.endsWith('download') ? 204 : 200]));
  });

  it.each(targets)('%s: a request id sent twice is replaced, as the app replaces it; one that is not well formed as well', async (target) => {
    for (let i = 0; i < 3; i++) {
      const twice = await raw(target, [['Authorization', `Bearer ${member.token}`], ['X-Request-Id', 'first'], ['x-request-id', 'second']]);
      expect(twice.status).toBeLessThan(300);
      expect(twice.headers.get('x-request-id')![0]).toMatch(UUID);
      const bad = await raw(target, [['Authorization', `Bearer ${member.token}`], ['X-Request-Id', 'has space']]);
      expect(bad.headers.get('x-request-id')![0]).toMatch(UUID);
    }
  });

  it.each(targets)('%s: two Authorization headers are refused (401) every time, whichever comes first', async (target) => {
    for (let i = 0; i < 3; i++) {
      for (const pair of [
        [`Bearer ${member.token}`, 'Bearer nope'],
        ['Bearer nope', `Bearer ${member.token}`],
        [`Bearer ${member.token}`, `Bearer ${member.token}`],
      ]) {
        const r = await raw(target, [['Authorization', pair[0]!], ['authorization', pair[1]!]]);
        expect(r.status, pair.join(' / ')).toBe(401);
      }
    }
    // And one is answered again at once.
    expect((await raw(target, [['Authorization', `Bearer ${member.token}`]])).status).toBeLessThan(300);
  });
});

describe('answers written together (src/http/write-batch.ts)', () => {
  it('a burst on many connections at once: every request answered as its own, every one counted', async () => {
    const targets = ['/v1/modules/acme/vpc/aws/versions', '/v1/modules/acme/subnet/aws/versions', '/v1/modules/acme/vpc/aws/1.0.0/download', '/v1/modules/hidden/vpc/aws/versions'];
    // Each target answered once first, so the burst is the lean path's (the last is refused: the app's).
    const expected = new Map<string, { status: number; body: string }>();
    for (const target of targets) {
      const r = await t.api('GET', target, { token: member.token });
      expected.set(target, { status: r.status, body: r.text });
    }
    expect([...expected.values()].map((e) => e.status)).toEqual([200, 200, 204, 404]);
    const versionsBefore = await metricCount('/v1/modules/:namespace/:name/:provider/versions', 200);
    const downloadsBefore = await metricCount('/v1/modules/:namespace/:name/:provider/:version/download', 204);
    // Every socket is connected first and every request then written in one go: answers made
    // together share batches (the batch itself, exactly: test/http/write-batch.test.ts).
    const n = 200;
    const { hostname, port } = new URL(t.url);
    const sockets = await Promise.all(
      Array.from({ length: n }, () => new Promise<net.Socket>((resolve, reject) => {
        const socket = net.connect(Number(port), hostname, () => resolve(socket));
        socket.once('error', reject);
      })),
    );
    const answers = sockets.map(
      (socket) =>
        new Promise<string>((resolve, reject) => {
          let got = '';
          socket.setEncoding('latin1').on('data', (d: string) => (got += d));
          socket.on('end', () => resolve(got));
          socket.on('error', reject);
        }),
    );
    sockets.forEach((socket, i) => socket.write(`GET ${targets[i % targets.length]} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${member.token}\r\nX-Request-Id: burst-${i}\r\nConnection: close\r\n\r\n`));
    const texts = await Promise.all(answers);
    texts.forEach((text, i) => {
      const [head, body] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
      expect({ status: Number(head.split(' ')[1]), body }).toEqual(expected.get(targets[i % targets.length]!));
      expect(head).toMatch(new RegExp(`^X-Request-Id: burst-${i}\r?$`, 'im'));
    });
    expect(await metricCount('/v1/modules/:namespace/:name/:provider/versions', 200)).toBe(versionsBefore + n / 2);
    expect(await metricCount('/v1/modules/:namespace/:name/:provider/:version/download', 204)).toBe(downloadsBefore + n / 4);
  });

  it('requests pipelined on one connection are answered in order, each its own', async () => {
    const targets = ['/v1/modules/acme/subnet/aws/versions', '/v1/modules/acme/vpc/aws/1.0.0/download', '/v1/modules/acme/vpc/aws/versions', '/v1/modules/acme/subnet/aws/versions'];
    for (const target of targets) await t.api('GET', target, { token: member.token });
    const { hostname, port } = new URL(t.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(targets.map((target, i) => `GET ${target} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${member.token}\r\nX-Request-Id: pipe-${i}\r\n${i === targets.length - 1 ? 'Connection: close\r\n' : ''}\r\n`).join(''));
      });
      let got = '';
      socket.setEncoding('latin1').on('data', (d: string) => (got += d));
      socket.on('end', () => resolve(got));
      socket.on('error', reject);
    });
    const ids = [...text.matchAll(/^X-Request-Id: (\S+)\r$/gim)].map((m) => m[1]);
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    expect(ids).toEqual(['pipe-0', 'pipe-1', 'pipe-2', 'pipe-3']);
    expect(statuses).toEqual([200, 204, 200, 200]);
    expect(text.match(/"source":"[^"]+"/g)).toEqual(['"source":"acme/subnet/aws"', '"source":"acme/vpc/aws"', '"source":"acme/subnet/aws"']);
  });
});
