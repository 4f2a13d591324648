import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { capabilityUrl } from '../http/authorized.js';
import { ApiError } from '../http/errors.js';
import { page } from './layout.js';
import { exchangeCode, grantCode, parseAuthorizationRequest, redirectWith } from './oauth.js';
import { readForm, safeNext, sessionForm, type WebEnv } from './security.js';
import { csrfToken } from './sessions.js';

/** terraform login: the consent page and the token endpoint (see oauth.ts). */
export function oauthRoutes(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();

  app.get('/app/oauth/authorize', (c) => {
    const req = parseAuthorizationRequest((n) => c.req.query(n));
    const session = c.get('session');
    if (!session) return c.redirect(`/app/signin?next=${encodeURIComponent(safeNext(c.req.url.slice(new URL(c.req.url).origin.length)))}`, 302);
    // The approval posts here, then redirects to Terraform's listener: the form's policy must allow it.
    c.set('formActions', [new URL(req.redirectUri).origin]);
    const csrf = csrfToken(deps, session);
    return page(deps, c, {
      title: 'Authorize Terraform',
      children: (
        <>
          <h1>Authorize Terraform</h1>
          <p>
            Terraform (<code>terraform login</code>) asks for a new API token that acts as <strong>{session.principal.user.username}</strong>. It will be
            listed under your tokens, where you can revoke it.
          </p>
          <p class="muted">Approve only if you started terraform login on this computer just now.</p>
          <form method="post" action="/app/oauth/authorize">
            <input type="hidden" name="csrf" value={csrf} />
            <input type="hidden" name="client_id" value={req.clientId} />
            <input type="hidden" name="redirect_uri" value={req.redirectUri} />
            <input type="hidden" name="state" value={req.state} />
            <input type="hidden" name="response_type" value="code" />
            <input type="hidden" name="code_challenge" value={req.codeChallenge} />
            <input type="hidden" name="code_challenge_method" value="S256" />
            <button type="submit" name="decision" value="approve">Approve</button>{' '}
            <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
          </form>
        </>
      ),
    });
  });

  app.post('/app/oauth/authorize', async (c) => {
    const { session, form } = await sessionForm(deps, c);
    const req = parseAuthorizationRequest((n) => form.get(n));
    if (form.get('decision') !== 'approve') return c.redirect(redirectWith(req, { error: 'access_denied' }), 303);
    const code = await grantCode(deps, session, req);
    return c.redirect(redirectWith(req, { code }), 303);
  });

  app.post('/app/oauth/token', async (c) => {
    // The code in the body is the credential, checked by exchangeCode; no cookie is involved.
    capabilityUrl();
    const form = await readForm(c).catch((err: unknown) => {
      throw err instanceof ApiError ? new ApiError(err.status, 'invalid_request', err.detail) : err;
    });
    const token = await exchangeCode(deps, form);
    return c.json(token, 200, { 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  });

  return app;
}
