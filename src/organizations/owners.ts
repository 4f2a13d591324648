import type { Queryable } from '../db/index.js';
import { unprocessable } from '../http/errors.js';

/**
 * The owners team must keep at least one member who has accepted their invitation, or nobody
 * but a site admin could manage the organization again. Call inside the transaction that removes
 * members, after removing them: the throw rolls the removal back.
 */
export async function assertOwnersTeamKeepsAnActiveMember(db: Queryable, organizationId: string, pointer?: string): Promise<void> {
  const r = await db
    .selectFrom('teams')
    .innerJoin('team_members', 'team_members.team_id', 'teams.id')
    .innerJoin('organization_memberships as m', (j) =>
      j.onRef('m.user_id', '=', 'team_members.user_id').onRef('m.organization_id', '=', 'teams.organization_id'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('teams.organization_id', '=', organizationId)
    .where('teams.is_owners', '=', 1)
    .where('m.status', '=', 'active')
    .executeTakeFirstOrThrow();
  if (Number(r.n) === 0) {
    throw unprocessable(
      'the owners team cannot be emptied: it must keep at least one member who has accepted their invitation; add another owner first',
      pointer,
    );
  }
}
