import { rfc3339 } from '../clock.js';
import { inTransaction } from '../db/index.js';
import type { JobHandler, RecurringJob } from '../jobs/runner.js';
import { deleteToken } from '../identity/store.js';
import { deleteExpiredOauthCodes, deleteSessions, expiredSessions } from './store.js';

/**
 * The recurring job that forgets expired web sessions and OAuth authorization codes. Sign-ins
 * and grants remove expired rows too, but an install where nobody signs in for a while would
 * keep them (and the tokens single sign-on issued for those sessions) until then.
 */
export const WEB_SWEEP = 'web.sweep';

/** Sessions removed per transaction: a long backlog never holds the database for long. */
const BATCH = 500;

export function webSweepJob(everyMs: number): RecurringJob {
  return { kind: WEB_SWEEP, everyMs, payload: null };
}

export const sweepWebSessions: JobHandler = async (deps) => {
  // One instant for the whole run: a session that expires while the sweep runs waits for the next.
  const now = rfc3339(deps.clock.now());
  let sessions = 0;
  let tokens = 0;
  for (;;) {
    const batch = await inTransaction(deps.db, async (tx) => {
      const rows = await expiredSessions(tx, now, BATCH);
      // A token issued for a session alone (single sign-on) ends with it, as at sign-out.
      for (const r of rows) if (r.owns_token === 1) await deleteToken(tx, r.token_id);
      await deleteSessions(tx, rows.map((r) => r.id_hash));
      return rows;
    });
    sessions += batch.length;
    tokens += batch.filter((r) => r.owns_token === 1).length;
    if (batch.length < BATCH) break;
  }
  await deleteExpiredOauthCodes(deps.db, now);
  if (sessions > 0) deps.logger.info({ sessions, tokens }, 'web sweep: expired sessions removed');
};
