import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { ApiError } from '../http/errors.js';
import { page } from './layout.js';
import { clearSessionCookie, preSessionCookie, preSessionForm, safeNext, sessionForm, setSessionCookie, type WebEnv } from './security.js';
import { preSessionCsrf, signInWithToken, signOut } from './sessions.js';
import { finishSignIn, startSignIn } from './sso.js';

/** Sign-in with a pasted API token, and sign-out. */
export function authRoutes(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();

  function signInPage(c: Context<WebEnv>, next: string, error?: ApiError) {
    const csrf = preSessionCsrf(deps, preSessionCookie(deps, c));
    return page(
      deps,
      c,
      {
        title: 'Sign in',
        children: (
          <>
            <h1>Sign in</h1>
            {error ? (
              <p class="notice error" role="alert">
                {error.detail}
              </p>
            ) : null}
            {deps.config.oidc ? (
              <p>
                <a class="button" href={`/app/signin/oidc?next=${encodeURIComponent(next)}`}>Sign in with single sign-on</a>
              </p>
            ) : null}
            <form method="post" action="/app/signin">
              <input type="hidden" name="csrf" value={csrf} />
              <input type="hidden" name="next" value={next} />
              <label for="token">API token</label>
              <input id="token" name="token" type="password" autocomplete="off" required />
              <p class="muted">Paste a user API token once; Terrace keeps you signed in with a session and never shows the token again.</p>
              <button type="submit">Sign in</button>
            </form>
          </>
        ),
      },
      error ? (error.status as 401) : 200,
    );
  }

  app.get('/app/signin', (c) => {
    if (c.get('session')) return c.redirect(safeNext(c.req.query('next')), 302);
    return signInPage(c, safeNext(c.req.query('next')));
  });

  app.post('/app/signin', async (c) => {
    const form = await preSessionForm(deps, c);
    const next = safeNext(form.get('next'));
    try {
      const id = await signInWithToken(deps, form.get('token') ?? '');
      setSessionCookie(deps, c, id);
      return c.redirect(next, 303);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return signInPage(c, next, err);
      throw err;
    }
  });

  app.get('/app/signin/oidc', async (c) => c.redirect(await startSignIn(deps, c, c.req.query('next')), 302));

  app.get('/app/signin/oidc/callback', async (c) => {
    const { sessionId, next } = await finishSignIn(deps, c);
    setSessionCookie(deps, c, sessionId);
    return c.redirect(next, 302);
  });

  app.post('/app/signout', async (c) => {
    const { session } = await sessionForm(deps, c);
    await signOut(deps, session);
    clearSessionCookie(deps, c);
    return c.redirect('/app/signin', 303);
  });

  return app;
}
