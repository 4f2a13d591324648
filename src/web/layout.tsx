import type { Child } from 'hono/jsx';
import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import { csrfToken } from './sessions.js';
import type { WebEnv } from './security.js';

export interface PageProps {
  title: string;
  children?: Child;
}

/** One layout for every page: landmarks (banner, navigation, main, contentinfo) and a skip link. */
export function page(deps: Deps, c: Context<WebEnv>, props: PageProps, status: 200 | 201 | 400 | 401 | 403 | 404 | 422 = 200): Response | Promise<Response> {
  const session = c.get('session');
  return c.html(
    '<!doctype html>' +
      (
        <html lang="en">
          <head>
            <meta charset="utf-8" />
            <meta name="viewport" content="width=device-width, initial-scale=1" />
            <title>{`${props.title} · Terrace`}</title>
            <link rel="stylesheet" href="/app/assets/terrace.css" />
            <script src="/app/assets/terrace.js" defer></script>
          </head>
          <body>
            <a class="skip" href="#main">Skip to content</a>
            <header class="top">
              <a class="brand" href="/app">Terrace</a>
              {session ? (
                <nav aria-label="Main">
                  <ul>
                    <li><a href="/app/organizations">Organizations</a></li>
                    <li><a href="/app/modules">Modules</a></li>
                    <li><a href="/app/settings/tokens">Tokens</a></li>
                  </ul>
                </nav>
              ) : null}
              <div class="who">
                {session ? (
                  <>
                    <span>Signed in as <strong>{session.principal.user.username}</strong></span>
                    <form class="inline" method="post" action="/app/signout">
                      <input type="hidden" name="csrf" value={csrfToken(deps, session)} />
                      <button type="submit">Sign out</button>
                    </form>
                  </>
                ) : (
                  <a href="/app/signin">Sign in</a>
                )}
              </div>
            </header>
            <main id="main" tabindex={-1}>
              {props.children}
            </main>
            <footer>Terrace private module registry</footer>
          </body>
        </html>
      ),
    status,
  );
}
