import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createOrganization } from '../helpers/registry.js';
import { runWithTaskResults } from '../helpers/run-results.js';
import { createUserWithToken, startTestServer, type TestServer } from '../helpers/server.js';
import { createWorkspace } from '../helpers/state.js';
import { textOf, WebClient } from '../helpers/web.js';

let t: TestServer;
let alice: { id: string; username: string; token: string };
let reader: { id: string; username: string; token: string };
let plain: { id: string; username: string; token: string };
let outsider: { id: string; username: string; token: string };
let runId: string;
let closeHook: () => Promise<void>;

beforeAll(async () => {
  t = await startTestServer({ TERRACE_JOBS: 'false' });
  alice = await createUserWithToken(t, 'alice');
  reader = await createUserWithToken(t, 'reader');
  plain = await createUserWithToken(t, 'plain');
  outsider = await createUserWithToken(t, 'outsider');
  await createOrganization(t, 'acme', alice.token);
  await createOrganization(t, 'other', outsider.token);
  await addMember(t, 'acme', reader);
  await addMember(t, 'acme', plain);
  // reader may read state outputs (and so workspaces and their runs); plain is a member with no grant.
  const team = await t.api('POST', '/api/v2/organizations/acme/teams', {
    token: alice.token,
    body: { data: { type: 'teams', attributes: { name: 'readers', 'organization-access': { 'read-state-outputs': true } } } },
  });
  expect(team.status).toBe(201);
  expect((await t.api('POST', `/api/v2/teams/${team.json.data.id}/relationships/users`, { token: alice.token, body: { data: [{ type: 'users', id: 'reader' }] } })).status).toBe(204);
  const ws = await createWorkspace(t, 'acme', 'prod', alice.token);
  await createWorkspace(t, 'acme', 'staging', alice.token);
  ({ runId, close: closeHook } = await runWithTaskResults(t, 'acme', ws.id));
}, 60_000);
afterAll(async () => {
  await closeHook?.();
  await t.close();
});

async function as(user: { token: string }): Promise<WebClient> {
  const w = new WebClient(t);
  await w.signIn(user.token);
  return w;
}

const runPath = () => `/app/organizations/acme/workspaces/prod/runs/${runId}`;

describe('run pages', () => {
  it('link the runs from the workspace outputs page', async () => {
    const res = await (await as(reader)).get('/app/organizations/acme/workspaces/prod');
    expect(res.status).toBe(200);
    expect(res.text).toContain('<a href="/app/organizations/acme/workspaces/prod/runs">Runs and run task results</a>');
  });

  it("list a workspace's runs with status, message and creation time", async () => {
    const res = await (await as(reader)).get('/app/organizations/acme/workspaces/prod/runs');
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<a href="${runPath()}">${runId}</a>`);
    expect(res.text).toMatch(/<td><span class="badge pending">planning<\/span><\/td><td>nightly drift check<\/td><td><time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time><\/td>/);
    const empty = await (await as(reader)).get('/app/organizations/acme/workspaces/staging/runs');
    expect(empty.status).toBe(200);
    expect(textOf(empty.text)).toContain('This workspace has no runs yet.');
  });

  it('show a run with its task stages and each result: task, status, message, enforcement, the integrator link', async () => {
    const res = await (await as(reader)).get(runPath());
    expect(res.status).toBe(200);
    const text = textOf(res.text);
    expect(text).toContain(`Run ${runId}`);
    expect(text).toContain('Status planning Message nightly drift check Created');
    expect(text).toContain('Pre-plan passed');
    expect(res.text).toContain(
      '<tr><td>scanner</td><td><span class="badge ok">passed</span></td><td>2 findings, none blocking</td><td>mandatory</td><td><a href="https://scanner.example/runs/42" rel="nofollow noopener noreferrer">scanner results</a></td></tr>',
    );
    expect(res.text).toContain('<tr><td>cost</td><td><span class="badge errored">failed</span></td><td>monthly cost +40%</td><td>advisory</td><td><span class="muted">none</span></td></tr>');
    expect(text).toContain('scanner: 2 outcomes');
    expect(text).toContain('CKV-1 bucket lacks MFA delete');
    expect(res.text).toContain('<a href="https://scanner.example/CKV-1" rel="nofollow noopener noreferrer">details at the integrator</a>');
    expect(text).toContain('Severity: High');
    expect(text).toContain('CKV-2 log retention below 90 days');
  });

  it('render an outcome body as Markdown through the README renderer: raw HTML escaped, script and data URLs dropped, no image', async () => {
    const res = await (await as(reader)).get(runPath());
    const bodies = [...res.text.matchAll(/<div class="readme">([\s\S]*?)<\/div>/g)].map((m) => m[1]!);
    expect(bodies).toHaveLength(1);
    const body = bodies[0]!;
    expect(body).toContain('<h2>Finding details</h2>');
    expect(body).toContain('&lt;script&gt;alert(&quot;outcome script&quot;)&lt;/script&gt;');
    expect(body).not.toMatch(/<(script|img|svg|iframe)\b/i);
    expect(body).not.toMatch(/href="(javascript|vbscript|data):/i);
    expect(body).toContain('<a href="https://docs.example.com/vpc" rel="nofollow noopener noreferrer">docs</a>');
    // Relative links have no module to resolve in: dropped, their text kept.
    expect(body).not.toContain('href="./modules/subnets"');
    expect(textOf(body)).toContain('the subnets submodule');
  });

  it('never link an integrator URL that is not http(s)', async () => {
    // The callback refuses such URLs; a row that holds one anyway (older data, a bug) is not linked.
    await t.running.deps.db.updateTable('task_results').set({ url: 'javascript:alert(1)' }).where('task_name', '=', 'scanner').execute();
    try {
      const res = await (await as(reader)).get(runPath());
      expect(res.text).not.toContain('javascript:alert(1)');
      expect(res.text).toContain('<tr><td>scanner</td><td><span class="badge ok">passed</span></td><td>2 findings, none blocking</td><td>mandatory</td><td><span class="muted">none</span></td></tr>');
    } finally {
      await t.running.deps.db.updateTable('task_results').set({ url: 'https://scanner.example/runs/42' }).where('task_name', '=', 'scanner').execute();
    }
  });

  it("lead run task requests' app URLs (HCP's shape) to these pages", async () => {
    const w = await as(reader);
    const run = await w.get(`/app/acme/workspaces/prod/runs/${runId}`);
    expect(run.status).toBe(302);
    expect(run.location).toBe(runPath());
    const ws = await w.get('/app/acme/workspaces/prod');
    expect(ws.status).toBe(302);
    expect(ws.location).toBe('/app/organizations/acme/workspaces/prod');
  });
});

describe('run pages: the same 404s as the API', () => {
  const api = () => `/api/v2/runs/${runId}`;
  it.each([
    ['plain (a member without read-state-outputs)', () => plain],
    ['outsider (another organization)', () => outsider],
  ])('hide the runs and the run from %s', async (_, who) => {
    const user = who();
    expect((await t.api('GET', api(), { token: user.token })).status).toBe(404);
    // The page says what the API says of the workspace it is under.
    const ws = await t.api('GET', '/api/v2/organizations/acme/workspaces/prod', { token: user.token });
    expect(ws.status).toBe(404);
    const w = await as(user);
    for (const path of ['/app/organizations/acme/workspaces/prod/runs', runPath()]) {
      const res = await w.get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toBe('text/html; charset=UTF-8');
      expect(textOf(res.text)).toContain(ws.json.errors[0].detail);
      expect(ws.json.errors[0].detail).toBe('organization "acme" not found, or you are not authorized to see it');
    }
  });

  it('hide a run under another workspace, and a run that does not exist', async () => {
    const w = await as(reader);
    const elsewhere = await w.get(`/app/organizations/acme/workspaces/staging/runs/${runId}`);
    expect(elsewhere.status).toBe(404);
    expect(textOf(elsewhere.text)).toContain(`run "${runId}" not found in workspace "acme/staging", or you are not authorized to see it`);
    const none = await w.get('/app/organizations/acme/workspaces/prod/runs/run-doesnotexist00');
    expect(none.status).toBe(404);
    expect(textOf(none.text)).toContain('run "run-doesnotexist00" not found in workspace "acme/prod"');
    expect((await t.api('GET', '/api/v2/runs/run-doesnotexist00', { token: reader.token })).status).toBe(404);
  });

  it('send a signed-out browser to sign in and back', async () => {
    const res = await new WebClient(t).get(runPath());
    expect(res.status).toBe(302);
    expect(res.location).toBe(`/app/signin?next=${encodeURIComponent(runPath())}`);
  });
});
