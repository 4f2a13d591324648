import { z } from 'zod';
import { quoteValue } from '../http/errors.js';
import { SERVICE_PROVIDERS } from './connection.js';

export const MAX_VCS_URL_LENGTH = 2048;
export const MAX_PAT_LENGTH = 4096;

/** go-tfe sends booleans; the docs' samples strings: both accepted, bools emitted. */
const looseBool = () => z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')], { error: 'must be true or false' });
const required = (what: string) => ({ error: (i: { input: unknown }) => (i.input === undefined || i.input === null ? 'is required' : `must be ${what}`) });

const provider = z.enum(SERVICE_PROVIDERS as [string, ...string[]], {
  error: (i) =>
    i.input === undefined || i.input === null
      ? 'is required'
      : `must be one of ${SERVICE_PROVIDERS.join(', ')} (Terrace connects to GitHub and GitLab), got ${quoteValue(i.input)}`,
});
const vcsUrl = z.string(required('a string')).max(MAX_VCS_URL_LENGTH, { error: `must be at most ${MAX_VCS_URL_LENGTH} characters` });
const secretString = (max: number) => z.string({ error: 'must be a string' }).max(max, { error: `must be at most ${max} characters` });

const common = {
  name: z.string({ error: 'must be a string or null' }).max(255, { error: 'must be at most 255 characters' }).nullable().optional(),
  key: z.string({ error: 'must be a string or null' }).max(1024, { error: 'must be at most 1024 characters' }).nullable().optional(),
  secret: secretString(4096).nullable().optional(),
  'rsa-public-key': z.string({ error: 'must be a string or null' }).max(8192, { error: 'must be at most 8192 characters' }).nullable().optional(),
  'organization-scoped': looseBool().nullable().optional(),
  'oauth-token-string': secretString(MAX_PAT_LENGTH).nullable().optional(),
};

export const createClientSchema = z.object({
  ...common,
  'service-provider': provider,
  'api-url': vcsUrl,
  'http-url': vcsUrl,
});
export const updateClientSchema = z.object({
  ...common,
  'service-provider': z.string({ error: 'must be a string' }).optional(),
  'api-url': z.string({ error: 'must be a string' }).optional(),
  'http-url': z.string({ error: 'must be a string' }).optional(),
});
export type CreateClientInput = z.output<typeof createClientSchema>;
export type UpdateClientInput = z.output<typeof updateClientSchema>;

export const updateTokenSchema = z.object({
  'ssh-key': secretString(16384).nullable().optional(),
});
export type UpdateTokenInput = z.output<typeof updateTokenSchema>;

/** Why value cannot be an api-url or http-url, or null: http(s), no credentials, query or fragment. */
export function vcsUrlProblem(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return `must be an absolute http or https URL, got ${quoteValue(value)}`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must use http or https, got ${quoteValue(u.protocol.replace(/:$/, ''))}`;
  if (u.username !== '' || u.password !== '') return 'must not carry a user name or password: the token is sent in a header';
  if (u.search !== '' || value.includes('?')) return 'must not have a query string (?…)';
  if (u.hash !== '' || value.includes('#')) return 'must not have a fragment (#…)';
  return null;
}

/** The URL as stored: without trailing slashes, so paths join cleanly. */
export function normalizeVcsUrl(value: string): string {
  const u = new URL(value);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}
