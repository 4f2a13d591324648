import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Deps } from '../deps.js';
import { requirePrincipal, type AppEnv } from '../http/auth.js';
import { declaredLength, readResource, requestBody } from '../http/body.js';
import { sendBlob } from '../http/blob-response.js';
import { notFound, payloadTooLarge, serviceUnavailable, unprocessable } from '../http/errors.js';
import { jsonApi } from '../http/jsonapi.js';
import { pageLinksAndMeta, parsePage } from '../http/pagination.js';
import { queryParams } from '../http/query.js';
import type { Principal } from '../identity/principal.js';
import { orgAccess } from '../organizations/access.js';
import { includeSet } from '../organizations/params.js';
import { getOrganizationById } from '../organizations/store.js';
import { workspaceAccess, type WorkspaceAccess } from '../workspaces/access.js';
import { workspaceById, workspaceByName } from '../workspaces/service.js';
import { getWorkspaceById } from '../workspaces/store.js';
import { serializeOutput, serializeStateVersion, verifyDownload } from './serialize.js';
import { createStateVersion, createStateVersionSchema, receiveJsonStateUpload, receiveStateUpload } from './service.js';
import { countOutputs, getOutput, getStateVersion, listOutputs, listStateVersions, outputIds, type StateVersionRow } from './store.js';

/** POST /api/v2/workspaces/:id/state-versions carries whole state files: it has its own body limit. */
export function isStateVersionCreate(method: string, path: string): boolean {
  return method === 'POST' && /^\/api\/v2\/workspaces\/[^/]+\/state-versions\/?$/.test(path);
}

/** Seconds Terraform is told to wait before asking again for outputs still being processed. */
const RETRY_AFTER_SECONDS = 2;

/** A state version with its workspace access; 404 unless the caller may at least read outputs. */
async function stateVersionFor(deps: Deps, p: Principal, id: string): Promise<{ sv: StateVersionRow; access: WorkspaceAccess }> {
  const sv = await getStateVersion(deps.db, id);
  const ws = sv ? await getWorkspaceById(deps.db, sv.workspace_id) : undefined;
  const org = ws ? await getOrganizationById(deps.db, ws.organization_id) : undefined;
  const access = org ? workspaceAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!sv || !access?.readOutputs) throw notFound(`state version "${id}" not found, or you are not authorized to see it`);
  return { sv, access };
}

/** HCP's state-versions and state-version-outputs API. */
export function stateRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Base64 of the state, of its JSON representation and of its outputs travel in one body.
  const createLimit = deps.config.maxStateBytes * 4 + 1024 * 1024;

  async function renderVersion(c: Context<AppEnv>, sv: StateVersionRow, access: WorkspaceAccess, status: 200 | 201 = 200, uploadUrls?: { state: string; jsonState: string }) {
    const ids = await outputIds(deps.db, sv.id);
    const data = serializeStateVersion(deps, sv, { readFiles: access.readStateVersions, outputIds: ids, uploadUrls });
    const include = includeSet(c);
    const included = include.has('outputs') ? (await listOutputs(deps.db, sv.id)).map((o) => serializeOutput(deps, o, false)) : [];
    return jsonApi(c, { data, included }, status);
  }

  app.post(
    '/workspaces/:workspace_id/state-versions',
    bodyLimit({
      maxSize: createLimit,
      onError: () => {
        throw payloadTooLarge(`the request body exceeds the limit of ${createLimit} bytes (4 × TERRACE_MAX_STATE_BYTES + 1 MiB); use the upload URL variant (omit "state") for large states`);
      },
    }),
    async (c) => {
      const p = requirePrincipal(c);
      const ctx = await workspaceById(deps, p, c.req.param('workspace_id'));
      if (!ctx.access.manage) throw notFound(`workspace "${ctx.ws.id}" not found, or you are not authorized to create state versions in it`);
      const { attributes } = await readResource(c, 'state-versions', createStateVersionSchema);
      const { sv, uploadUrls } = await createStateVersion(deps, p, ctx, attributes);
      return renderVersion(c, sv, ctx.access, 201, uploadUrls);
    },
  );

  app.get('/workspaces/:workspace_id/current-state-version', async (c) => {
    const ctx = await workspaceById(deps, requirePrincipal(c), c.req.param('workspace_id'));
    const sv = ctx.access.readStateVersions && ctx.ws.current_state_version_id ? await getStateVersion(deps.db, ctx.ws.current_state_version_id) : undefined;
    if (!ctx.access.readStateVersions) throw notFound(`workspace "${ctx.ws.id}" not found, or you are not authorized to read its state versions`);
    if (!sv) throw notFound(`workspace "${ctx.ws.name}" has no state version yet`);
    return renderVersion(c, sv, ctx.access);
  });

  app.get('/workspaces/:workspace_id/current-state-version-outputs', async (c) => {
    const ctx = await workspaceById(deps, requirePrincipal(c), c.req.param('workspace_id'));
    const sv = ctx.ws.current_state_version_id ? await getStateVersion(deps.db, ctx.ws.current_state_version_id) : undefined;
    if (!sv) return jsonApi(c, { data: [] });
    // Until processing commits no output may pass for final. Terraform retries only when the
    // error text contains "service unavailable".
    if (sv.resources_processed !== 1) {
      throw serviceUnavailable(`the outputs of state version ${sv.id} are still being processed; retry in a few seconds`, RETRY_AFTER_SECONDS);
    }
    // Terraform reads this once and never pages: without page parameters, every output.
    const page = parsePage(c);
    if (!page.explicit) return jsonApi(c, { data: (await listOutputs(deps.db, sv.id)).map((o) => serializeOutput(deps, o, false)) });
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
    const ctx = await workspaceByName(deps, p, orgName, wsName);
    if (!ctx.access.readStateVersions) throw notFound(`workspace "${orgName}/${wsName}" not found, or you are not authorized to read its state versions`);
    const page = parsePage(c);
    const { rows, total } = await listStateVersions(deps.db, ctx.ws.id, { limit: page.size, offset: page.offset });
    const data = [];
    for (const sv of rows) data.push(serializeStateVersion(deps, sv, { readFiles: true, outputIds: await outputIds(deps.db, sv.id) }));
    return jsonApi(c, { data, ...pageLinksAndMeta(c, deps.config.publicUrl, page, total) });
  });

  app.get('/state-versions/:id', async (c) => {
    const { sv, access } = await stateVersionFor(deps, requirePrincipal(c), c.req.param('id'));
    if (!access.readStateVersions) throw notFound(`state version "${sv.id}" not found, or you are not authorized to see it`);
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
    const p = requirePrincipal(c);
    const id = c.req.param('id');
    const o = await getOutput(deps.db, id);
    if (!o) throw notFound(`state version output "${id}" not found, or you are not authorized to see it`);
    const { access } = await stateVersionFor(deps, p, o.state_version_id).catch(() => {
      throw notFound(`state version output "${id}" not found, or you are not authorized to see it`);
    });
    // The plaintext of a sensitive value is for those who may read the state itself.
    return jsonApi(c, { data: serializeOutput(deps, o, access.readStateVersions) });
  });

  return app;
}

/** Capability URLs outside /api: the one-time upload URLs and the signed state file downloads. */
export function stateFileRoutes(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.put('/uploads/state/:token', async (c) => {
    const sv = await receiveStateUpload(deps, c.req.param('token'), requestBody(c), declaredLength(c));
    return jsonApi(c, { data: { id: sv.id, type: 'state-versions', attributes: { status: sv.status, size: sv.size, serial: sv.serial } } });
  });

  app.put('/uploads/state-json/:token', async (c) => {
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
