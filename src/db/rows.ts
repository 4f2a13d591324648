import type { Selectable } from 'kysely';
import type { StateVersionsTable, WorkspacesTable } from './schema.js';

/**
 * Row types that more than one domain reads. A domain's own rows are typed in its store; these
 * live here so no domain borrows another's store for a type.
 */
export type WorkspaceRow = Selectable<WorkspacesTable>;
/** Read by workspaces (current version, resource count, unlock) as well as state. */
export type StateVersionRow = Selectable<StateVersionsTable>;
