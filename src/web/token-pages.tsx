import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { createUserToken, deleteUserToken, MAX_TOKEN_DESCRIPTION_CHARS, userTokens } from '../identity/service.js';
import { csrfToken, type WebSession } from './sessions.js';
import { page } from './layout.js';
import { requireSession, sessionForm, type WebEnv } from './security.js';

const MAX_LISTED = 100;
const MAX_EXPIRY_DAYS = 3650;

/** /app/settings/tokens: the signed-in user's API tokens, created (shown once) and revoked here. */
export function tokenPages(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();

  async function render(c: Context<WebEnv>, session: WebSession, shown?: { token: string; description: string | null }, error?: string) {
    const p = session.principal;
    const { rows, total } = await userTokens(deps, p, p.user.id, { limit: MAX_LISTED, offset: 0 });
    const csrf = csrfToken(deps, session);
    return page(
      deps,
      c,
      {
        title: 'API tokens',
        children: (
          <>
            <h1>API tokens</h1>
            {shown ? (
              <div class="notice" role="status">
                <p>{`New token${shown.description ? ` "${shown.description}"` : ''}. Copy it now: it is shown only once.`}</p>
                <p class="secret" id="new-token">{shown.token}</p>
                <button type="button" class="secondary" data-copy="new-token" hidden>Copy</button>
              </div>
            ) : null}
            {error ? <p class="notice error" role="alert">{error}</p> : null}
            <h2>Create a token</h2>
            <form method="post" action="/app/settings/tokens">
              <input type="hidden" name="csrf" value={csrf} />
              <label for="description">Description</label>
              <input id="description" name="description" type="text" maxlength={MAX_TOKEN_DESCRIPTION_CHARS} />
              <label for="expires-in-days">Expires after (days, empty for never)</label>
              <input id="expires-in-days" name="expires-in-days" type="text" inputmode="numeric" pattern="[0-9]*" />{' '}
              <button type="submit">Create token</button>
            </form>
            <h2>Your tokens</h2>
            <p class="muted">{`${total} token${total === 1 ? '' : 's'}${total > MAX_LISTED ? `, the first ${MAX_LISTED} shown` : ''}.`}</p>
            <table>
              <thead><tr><th scope="col">Description</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="skip">Actions</span></th></tr></thead>
              <tbody>
                {rows.map((t) => (
                  <tr>
                    <td>{t.description ?? <span class="muted">none</span>}{t.id === p.tokenId ? <> <span class="badge">this session</span></> : null}</td>
                    <td><time datetime={t.created_at}>{t.created_at.slice(0, 16).replace('T', ' ')}</time></td>
                    <td>{t.last_used_at ? t.last_used_at.slice(0, 16).replace('T', ' ') : 'never'}</td>
                    <td>{t.expired_at ? t.expired_at.slice(0, 10) : 'never'}</td>
                    <td>
                      <form class="inline" method="post" action={`/app/settings/tokens/${encodeURIComponent(t.id)}/delete`}>
                        <input type="hidden" name="csrf" value={csrf} />
                        <button type="submit" class="danger" aria-label={`Revoke ${t.description ?? t.id}`}>Revoke</button>
                      </form>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        ),
      },
      error ? 400 : 200,
    );
  }

  app.get('/app/settings/tokens', (c) => render(c, requireSession(c)));

  app.post('/app/settings/tokens', async (c) => {
    const { session, form } = await sessionForm(deps, c);
    const description = (form.get('description') ?? '').trim();
    const days = (form.get('expires-in-days') ?? '').trim();
    if (description.length > MAX_TOKEN_DESCRIPTION_CHARS) return render(c, session, undefined, `the description must be at most ${MAX_TOKEN_DESCRIPTION_CHARS} characters`);
    if (days !== '' && (!/^[0-9]{1,4}$/.test(days) || Number(days) < 1 || Number(days) > MAX_EXPIRY_DAYS)) {
      return render(c, session, undefined, `expiry must be a whole number of days from 1 to ${MAX_EXPIRY_DAYS}, or empty for a token that does not expire`);
    }
    const expiredAt = days === '' ? null : new Date(deps.clock.now().getTime() + Number(days) * 86_400_000).toISOString();
    const { token } = await createUserToken(deps, session.principal, session.principal.user.id, { description: description || null, expiredAt });
    return render(c, session, { token, description: description || null });
  });

  app.post('/app/settings/tokens/:id/delete', async (c) => {
    const { session } = await sessionForm(deps, c);
    await deleteUserToken(deps, session.principal, c.req.param('id'));
    // Revoking the token this session acts as ends the session with it.
    return c.redirect(c.req.param('id') === session.principal.tokenId ? '/app/signin' : '/app/settings/tokens', 303);
  });

  return app;
}
