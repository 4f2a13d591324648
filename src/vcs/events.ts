import { rfc3339 } from '../clock.js';
import type { Deps } from '../deps.js';
import { truncate } from '../http/errors.js';
import { newId } from '../ids.js';
import { insertVcsEvent } from './store.js';

/** Messages are stored and shown as given, cut to this many characters. */
export const MAX_EVENT_MESSAGE_CHARS = 2000;

export interface VcsEventInput {
  organizationId: string;
  level: 'info' | 'error';
  message: string;
  suggestedAction?: string | null;
  oauthClientId?: string | null;
  oauthTokenId?: string | null;
}

/**
 * Appends one entry to the organization's VCS event log (at the injected clock's now). Callers
 * must not put a token or secret in the message: it is shown to every VCS manager.
 */
export async function recordVcsEvent(deps: Deps, e: VcsEventInput): Promise<void> {
  const row = {
    id: newId('ve'),
    organization_id: e.organizationId,
    level: e.level,
    message: truncate(e.message, MAX_EVENT_MESSAGE_CHARS),
    suggested_action: e.suggestedAction ? truncate(e.suggestedAction, MAX_EVENT_MESSAGE_CHARS) : null,
    oauth_client_id: e.oauthClientId ?? null,
    oauth_token_id: e.oauthTokenId ?? null,
    created_at: rfc3339(deps.clock.now()),
  };
  await insertVcsEvent(deps.db, row);
  const fields = { organization: e.organizationId, event: row.id, oauthClient: row.oauth_client_id, oauthToken: row.oauth_token_id };
  if (e.level === 'error') deps.logger.warn(fields, `VCS event: ${row.message}`);
  else deps.logger.info(fields, `VCS event: ${row.message}`);
}
