import type { Deps } from '../deps.js';
import { ApiError, notFound, quoteValue, serviceUnavailable } from '../http/errors.js';
import type { Principal } from '../identity/principal.js';
import { orgAccess } from '../organizations/access.js';
import { getOrganizationById } from '../organizations/store.js';
import { workspaceAccess, type WorkspaceAccess } from '../workspaces/access.js';
import { workspaceById, workspaceByName, type WorkspaceContext } from '../workspaces/service.js';
import { getWorkspaceById } from '../workspaces/store.js';
import { PROCESSING_FAILED } from './processing.js';
import { getOutput, getStateVersion, listOutputs, type OutputRow, type StateVersionRow } from './store.js';

/** Seconds Terraform is told to wait before asking again for outputs still being processed. */
const RETRY_AFTER_SECONDS = 2;

const hiddenVersion = (id: string) => notFound(`state version ${quoteValue(id)} not found, or you are not authorized to see it`);

/** A state version with its workspace access; 404 unless the caller may at least read outputs. */
export async function stateVersionFor(deps: Deps, p: Principal, id: string): Promise<{ sv: StateVersionRow; access: WorkspaceAccess }> {
  const sv = await getStateVersion(deps.db, id);
  const ws = sv ? await getWorkspaceById(deps.db, sv.workspace_id) : undefined;
  const org = ws ? await getOrganizationById(deps.db, ws.organization_id) : undefined;
  const access = org ? workspaceAccess(await orgAccess(deps.db, p, org.id)) : undefined;
  if (!sv || !access?.readOutputs) throw hiddenVersion(id);
  return { sv, access };
}

/** A state version whose files and sensitive values the caller may read; 404 otherwise. */
export async function readableStateVersion(deps: Deps, p: Principal, id: string): Promise<{ sv: StateVersionRow; access: WorkspaceAccess }> {
  const found = await stateVersionFor(deps, p, id);
  if (!found.access.readStateVersions) throw hiddenVersion(id);
  return found;
}

function requireReadStateVersions(ctx: WorkspaceContext, what: string): void {
  if (!ctx.access.readStateVersions) throw notFound(`workspace ${quoteValue(what)} not found, or you are not authorized to read its state versions`);
}

/** The workspace whose state versions are listed (go-tfe's List by organization and workspace name). */
export async function workspaceForStateVersions(deps: Deps, p: Principal, orgName: string, wsName: string): Promise<WorkspaceContext> {
  const ctx = await workspaceByName(deps, p, orgName, wsName);
  requireReadStateVersions(ctx, `${orgName}/${wsName}`);
  return ctx;
}

/** The current state version of a workspace, for callers who may read state versions. */
export async function currentStateVersion(deps: Deps, p: Principal, workspaceId: string): Promise<{ sv: StateVersionRow; ctx: WorkspaceContext }> {
  const ctx = await workspaceById(deps, p, workspaceId);
  requireReadStateVersions(ctx, ctx.ws.id);
  const sv = ctx.ws.current_state_version_id ? await getStateVersion(deps.db, ctx.ws.current_state_version_id) : undefined;
  if (!sv) throw notFound(`workspace ${quoteValue(ctx.ws.name)} has no state version yet`);
  return { sv, ctx };
}

/**
 * The state version whose outputs are the workspace's current outputs, or undefined when it has
 * none. Until processing commits no output may pass for final: Terraform retries only when the
 * error text contains "service unavailable".
 */
export async function currentOutputsVersion(deps: Deps, p: Principal, workspaceId: string): Promise<StateVersionRow | undefined> {
  const ctx = await workspaceById(deps, p, workspaceId);
  const sv = ctx.ws.current_state_version_id ? await getStateVersion(deps.db, ctx.ws.current_state_version_id) : undefined;
  if (sv?.resources_processed === PROCESSING_FAILED) {
    throw new ApiError(
      422,
      'state not processable',
      `the outputs of state version ${sv.id} cannot be served: Terrace could not read them from its state (the server log has the reason); push a new state version`,
    );
  }
  if (sv && sv.resources_processed !== 1) {
    throw serviceUnavailable(`the outputs of state version ${sv.id} are still being processed; retry in a few seconds`, RETRY_AFTER_SECONDS);
  }
  return sv;
}

/** A workspace's current outputs (sensitive values stay encrypted: renderers show them as hidden). */
export async function currentOutputs(deps: Deps, p: Principal, workspaceId: string): Promise<{ sv: StateVersionRow | undefined; outputs: OutputRow[] }> {
  const sv = await currentOutputsVersion(deps, p, workspaceId);
  return { sv, outputs: sv ? await listOutputs(deps.db, sv.id) : [] };
}

/** One output, and whether the caller may see its sensitive value (those who may read the state). */
export async function visibleOutput(deps: Deps, p: Principal, id: string): Promise<{ output: OutputRow; showSensitive: boolean }> {
  const hidden = () => notFound(`state version output ${quoteValue(id)} not found, or you are not authorized to see it`);
  const output = await getOutput(deps.db, id);
  if (!output) throw hidden();
  const { access } = await stateVersionFor(deps, p, output.state_version_id).catch(() => {
    throw hidden();
  });
  return { output, showSensitive: access.readStateVersions };
}
