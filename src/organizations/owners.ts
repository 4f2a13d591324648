import type { Queryable } from '../db/index.js';
import { unprocessable } from '../http/errors.js';
import { activeOwnerCount } from './store.js';

/**
 * The owners team must keep at least one member who has accepted their invitation, or nobody
 * but a site admin could manage the organization again. Call inside the transaction that removes
 * members, after removing them: the throw rolls the removal back.
 */
export async function assertOwnersTeamKeepsAnActiveMember(db: Queryable, organizationId: string, pointer?: string): Promise<void> {
  if ((await activeOwnerCount(db, organizationId)) === 0) {
    throw unprocessable(
      'the owners team cannot be emptied: it must keep at least one member who has accepted their invitation; add another owner first',
      pointer,
    );
  }
}
