import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Deps } from '../deps.js';
import { payloadTooLarge } from '../http/errors.js';
import { assetRoutes } from './assets.js';
import { authRoutes } from './auth-pages.js';
import { browsePages } from './browse-pages.js';
import { oauthRoutes } from './oauth-pages.js';
import { runPages } from './run-pages.js';
import { MAX_FORM_BYTES, securityHeaders, webSession, type WebEnv } from './security.js';
import { tokenPages } from './token-pages.js';
import { vcsPages } from './vcs-pages.js';

/** Pages anyone may open signed out: the rest redirect to sign-in (and come back after). */
function openToAnyone(deps: Deps, path: string): boolean {
  if (path === '/app/signin' || path.startsWith('/app/signin/') || path.startsWith('/app/assets/') || path.startsWith('/app/oauth/')) return true;
  return deps.config.publicRead && path.startsWith('/app/modules');
}

/** The web UI under /app: server-rendered pages calling the same services as the API. */
export function webRoutes(deps: Deps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  // '/app/*' matches /app itself too.
  app.use('/app/*', securityHeaders);
  app.use('/app/*', webSession(deps));
  app.use(
    '/app/*',
    bodyLimit({
      maxSize: MAX_FORM_BYTES,
      onError: () => {
        throw payloadTooLarge(`a form may be at most ${MAX_FORM_BYTES} bytes`);
      },
    }),
  );
  app.use('/app/*', async (c, next) => {
    const read = c.req.method === 'GET' || c.req.method === 'HEAD';
    if (!read || c.get('session') || openToAnyone(deps, c.req.path)) return next();
    const here = c.req.url.slice(new URL(c.req.url).origin.length);
    return c.redirect(`/app/signin?next=${encodeURIComponent(here)}`, 302);
  });

  app.get('/', securityHeaders, (c) => c.redirect('/app', 302));
  app.get('/app', (c) => c.redirect('/app/modules', 302));
  app.route('/', assetRoutes());
  app.route('/', authRoutes(deps));
  app.route('/', browsePages(deps));
  app.route('/', runPages(deps));
  app.route('/', tokenPages(deps));
  app.route('/', vcsPages(deps));
  app.route('/', oauthRoutes(deps));
  return app;
}
