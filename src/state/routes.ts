import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { declaredLength, limitedBody, requestBody } from '../http/body.js';
import { sendBlob } from '../http/blob-response.js';
import { capabilityUrl } from '../http/authorized.js';
import { notFound, payloadTooLarge, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import { includeSet } from '../organizations/params.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { workspaceByIdForUpdate } from '../workspaces/service.js';
import { serializeOutput, serializeStateVersion, verifyDownload } from './serialize.js';
import { readInlineStateBody } from './inline-body.js';
import { currentOutputs, currentOutputsVersion, currentStateVersion, readableStateVersion, stateVersionFor, visibleOutput, workspaceForStateVersions } from './read.js';
import { createStateVersion, documentKeys, draftStateVersion, receiveJsonStateUpload, receiveStateUpload } from './service.js';
import { countOutputs, getStateVersion, listOutputs, listStateVersions, outputIds, type StateVersionRow } from './store.js';

/** POST /api/v2/workspaces/:id/state-versions carries whole state files: it has its own body limit. */
export function isStateVersionCreate(method: string, path: string): boolean {
  return method === 'POST' && /^\/api\/v2\/workspaces\/[^/]+\/state-versions\/?$/.test(path);
}

/** HCP's state-versions and state-version-outputs API. */
export function stateRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Base64 of the state, of its JSON representation and of its outputs travel in one body.
  const createLimit = deps.config.maxStateBytes * 4 + 1024 * 1024;
  const tooLarge = () =>
    payloadTooLarge(`the request body exceeds the limit of ${createLimit} bytes (4 × TERRACE_MAX_STATE_BYTES + 1 MiB); use the upload URL variant (omit "state") for large states`);

  async function renderVersion(c: Context<AppEnv>, sv: StateVersionRow, access: WorkspaceAccess, status: 200 | 201 = 200, uploadUrls?: { state: string; jsonState: string }) {
    const ids = await outputIds(deps.db, sv.id);
    const data = serializeStateVersion(deps, sv, { readFiles: access.readStateVersions, outputIds: ids, uploadUrls });
    const include = includeSet(c);
    const included = include.has('outputs') ? (await listOutputs(deps.db, sv.id)).map((o) => serializeOutput(deps, o, false)) : [];
    return jsonApi(c, { data, included }, status);
  }

  app.post('/workspaces/:workspace_id/state-versions', async (c) => {
    const p = requirePrincipal(c);
    const ctx = await workspaceByIdForUpdate(deps, p, c.req.param('workspace_id'));
    // Who may create is settled before a byte of the body is read (manage rights, the lock);
    // the body then streams, its documents straight into the blob store.
    const draft = draftStateVersion(p, ctx);
    const body = limitedBody(c, createLimit, tooLarge);
    const parsed = await readInlineStateBody(deps, body, c.req.header('content-type'), documentKeys(draft));
    const { sv, uploadUrls } = await createStateVersion(deps, p, ctx, draft, parsed);
    return renderVersion(c, sv, ctx.access, 201, uploadUrls);
  });

  app.get('/workspaces/:workspace_id/current-state-version', async (c) => {
    const { sv, ctx } = await currentStateVersion(deps, requirePrincipal(c), c.req.param('workspace_id'));
    return renderVersion(c, sv, ctx.access);
  });

  app.get('/workspaces/:workspace_id/current-state-version-outputs', async (c) => {
    // Paging is checked first: the same 400 whether or not the caller may see the workspace.
    const page = parsePage(c);
    // Terraform reads this once and never pages: without page parameters, every output.
    if (!page.explicit) {
      const { outputs } = await currentOutputs(deps, requirePrincipal(c), c.req.param('workspace_id'));
      return jsonApi(c, { data: outputs.map((o) => serializeOutput(deps, o, false)) });
    }
    const sv = await currentOutputsVersion(deps, requirePrincipal(c), c.req.param('workspace_id'));
    if (!sv) return jsonApi(c, { data: [] });
    const rows = await listOutputs(deps.db, sv.id, { limit: page.size, offset: page.offset });
    const paging = pageLinksAndMeta(c, deps.config.publicUrl, page, await countOutputs(deps.db, sv.id));
    return jsonApi(c, { data: rows.map((o) => serializeOutput(deps, o, false)), ...paging });
  });

  // go-tfe's List: GET /state-versions?filter[workspace][name]=…&filter[organization][name]=…
  app.get('/state-versions', async (c) => {
    const p = requirePrincipal(c);
    const q = queryParams(c);
    const orgName = q.get('filter[organization][name]');
    const wsName = q.get('filter[workspace][name]');
    if (!orgName) throw unprocessable('filter[organization][name] is required');
    if (!wsName) throw unprocessable('filter[workspace][name] is required');
    const ctx = await workspaceForStateVersions(deps, p, orgName, wsName);
    const page = parsePage(c);
    const { rows, total } = await listStateVersions(deps.db, ctx.ws.id, { limit: page.size, offset: page.offset });
    const data = [];
    for (const sv of rows) data.push(serializeStateVersion(deps, sv, { readFiles: true, outputIds: await outputIds(deps.db, sv.id) }));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.get('/state-versions/:id', async (c) => {
    const { sv, access } = await readableStateVersion(deps, requirePrincipal(c), c.req.param('id'));
    return renderVersion(c, sv, access);
  });

  app.get('/state-versions/:id/outputs', async (c) => {
    const { sv } = await stateVersionFor(deps, requirePrincipal(c), c.req.param('id'));
    const page = parsePage(c);
    const rows = await listOutputs(deps.db, sv.id, { limit: page.size, offset: page.offset });
    const data = rows.map((o) => serializeOutput(deps, o, false));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, await countOutputs(deps.db, sv.id)) });
  });

  app.get('/state-version-outputs/:id', async (c) => {
    const { output, showSensitive } = await visibleOutput(deps, requirePrincipal(c), c.req.param('id'));
    return jsonApi(c, { data: serializeOutput(deps, output, showSensitive) });
  });

  return app;
}

/** Capability URLs outside /api: the one-time upload URLs and the signed state file downloads. */
export function stateFileRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.put('/uploads/state/:token', async (c) => {
    capabilityUrl();
    const sv = await receiveStateUpload(deps, c.req.param('token'), requestBody(c), declaredLength(c));
    return jsonApi(c, { data: { id: sv.id, type: 'state-versions', attributes: { status: sv.status, size: sv.size, serial: sv.serial } } });
  });

  app.put('/uploads/state-json/:token', async (c) => {
    capabilityUrl();
    const sv = await receiveJsonStateUpload(deps, c.req.param('token'), requestBody(c), declaredLength(c));
    return jsonApi(c, { data: { id: sv.id, type: 'state-versions', attributes: { status: sv.status } } });
  });

  app.get('/state-files/:svId/:capability/:file', async (c) => {
    const { svId, capability, file } = c.req.param();
    // One answer for unknown, expired and tampered.
    const refuse = () => notFound('this state download URL is invalid or has expired; read the state version again for a new one');
    if ((file !== 'state.json' && file !== 'json-state.json') || !verifyDownload(deps, svId, file, capability)) throw refuse();
    const sv = await getStateVersion(deps.db, svId);
    const key = file === 'state.json' ? (sv?.status === 'finalized' ? sv.blob_key : null) : sv?.json_state_blob_key;
    if (!key) throw refuse();
    return sendBlob(c, deps, key, { contentType: 'application/json', ranges: false, refuse });
  });

  return app;
}
