import type { ResourceObject } from '../http/jsonapi.js';
import type { TokenRow, UserRow } from './store.js';

export function serializeUser(u: UserRow, opts: { showEmail: boolean }): ResourceObject {
  return {
    id: u.id,
    type: 'users',
    attributes: {
      username: u.username,
      email: opts.showEmail ? u.email : null,
      'avatar-url': '',
      'is-service-account': u.is_service_account === 1,
      'two-factor': { enabled: false, verified: false },
      'unconfirmed-email': null,
      'v2-only': false,
      'is-site-admin': u.is_site_admin === 1,
      'is-admin': u.is_site_admin === 1,
      'is-sso-login': false,
      'created-at': u.created_at,
      permissions: {
        'can-create-organizations': true,
        'can-change-email': false,
        'can-change-username': false,
        'can-manage-user-tokens': true,
        'can-view-2fa-settings': false,
        'can-manage-hcp-account': false,
      },
    },
    relationships: {
      'authentication-tokens': { links: { related: `/api/v2/users/${u.id}/authentication-tokens` } },
    },
    links: { self: `/api/v2/users/${u.id}` },
  };
}

/** The plaintext token appears only in the response that created it. */
export function serializeToken(t: TokenRow, plaintext?: string): ResourceObject {
  return {
    id: t.id,
    type: 'authentication-tokens',
    attributes: {
      'created-at': t.created_at,
      'last-used-at': t.last_used_at,
      'expired-at': t.expired_at,
      description: t.description,
      token: plaintext ?? null,
    },
    relationships: {
      'created-by': { data: t.created_by ? { type: 'users', id: t.created_by } : null },
    },
    links: { self: `/api/v2/authentication-tokens/${t.id}` },
  };
}
