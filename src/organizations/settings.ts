import { z } from 'zod';

/**
 * The HCP organization attributes Terrace stores in organizations.attributes (JSON, keyed by
 * their API names). Name and email live in their own columns.
 */
export const EXECUTION_MODES = ['remote', 'local', 'agent'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];
export const AUTH_POLICIES = ['password', 'two_factor_mandatory'] as const;

export interface OrgSettings {
  'session-timeout': number;
  'session-remember': number;
  'collaborator-auth-policy': (typeof AUTH_POLICIES)[number];
  'cost-estimation-enabled': boolean;
  'send-passing-statuses-for-untriggered-speculative-plans': boolean;
  'aggregated-commit-status-enabled': boolean;
  'speculative-plan-management-enabled': boolean;
  'owners-team-saml-role-id': string | null;
  'assessments-enforced': boolean;
  'allow-force-delete-workspaces': boolean;
  'default-execution-mode': ExecutionMode;
  'default-agent-pool-id': string | null;
}

export const DEFAULT_SETTINGS: Readonly<OrgSettings> = Object.freeze({
  'session-timeout': 20160,
  'session-remember': 20160,
  'collaborator-auth-policy': 'password',
  'cost-estimation-enabled': false,
  'send-passing-statuses-for-untriggered-speculative-plans': false,
  'aggregated-commit-status-enabled': true,
  'speculative-plan-management-enabled': true,
  'owners-team-saml-role-id': null,
  'assessments-enforced': false,
  'allow-force-delete-workspaces': false,
  'default-execution-mode': 'remote',
  'default-agent-pool-id': null,
});

/** Stored settings over the defaults; keys a later version added fall back to their default. */
export function parseSettings(json: string): OrgSettings {
  let stored: Record<string, unknown> = {};
  try {
    const v = JSON.parse(json) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) stored = v as Record<string, unknown>;
  } catch {
    // A corrupt column reads as the defaults rather than breaking every organization read.
  }
  const out = { ...DEFAULT_SETTINGS } as Record<string, unknown>;
  for (const k of Object.keys(DEFAULT_SETTINGS)) {
    if (k in stored) out[k] = stored[k];
  }
  return out as unknown as OrgSettings;
}

/** Organization names are registry namespaces: 1-64 letters, digits, "-" and "_", not first or last. */
export const ORG_NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$/;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const NAME_RULE = 'must be 1-64 letters, digits, "-" or "_", starting and ending with a letter or digit';

const required = (what: string) => ({
  error: (iss: { input: unknown }) => (iss.input === undefined ? 'is required' : `must be ${what}`),
});
const bool = () => z.boolean({ error: 'must be true or false' });
const minutes = () =>
  z
    .number({ error: 'must be a whole number of minutes' })
    .int({ error: 'must be a whole number of minutes' })
    .min(1, { error: 'must be at least 1 minute' })
    .max(525_600, { error: 'must be at most 525600 minutes (one year)' });

const nameSchema = z.string(required('a string')).regex(ORG_NAME_RE, { error: NAME_RULE });
const emailSchema = z.string(required('a string')).max(254, { error: 'must be at most 254 characters' }).regex(EMAIL_RE, {
  error: 'must be an email address',
});

const optionalAttributes = {
  'session-timeout': minutes().optional(),
  'session-remember': minutes().optional(),
  'collaborator-auth-policy': z.enum(AUTH_POLICIES, { error: `must be one of ${AUTH_POLICIES.join(', ')}` }).optional(),
  'cost-estimation-enabled': bool().optional(),
  'send-passing-statuses-for-untriggered-speculative-plans': bool().optional(),
  'aggregated-commit-status-enabled': bool().optional(),
  'speculative-plan-management-enabled': bool().optional(),
  'owners-team-saml-role-id': z.string({ error: 'must be a string or null' }).max(256, { error: 'must be at most 256 characters' }).nullable().optional(),
  'assessments-enforced': bool().optional(),
  'allow-force-delete-workspaces': bool().optional(),
  'default-execution-mode': z.enum(EXECUTION_MODES, { error: `must be one of ${EXECUTION_MODES.join(', ')}` }).optional(),
  'default-agent-pool-id': z.string({ error: 'must be an agent pool id (apool-…) or null' }).min(1, { error: 'must not be empty' }).nullable().optional(),
};

/** Unknown attributes are ignored (HCP has many Terrace does not model). */
export const createOrganizationSchema = z.object({ name: nameSchema, email: emailSchema, ...optionalAttributes });
export const updateOrganizationSchema = z.object({ name: nameSchema.optional(), email: emailSchema.optional(), ...optionalAttributes });
export type OrganizationInput = z.output<typeof updateOrganizationSchema>;

/** The plain settings an input may set directly; the rules in service.ts handle the rest. */
export const PLAIN_SETTINGS = [
  'session-timeout',
  'session-remember',
  'collaborator-auth-policy',
  'cost-estimation-enabled',
  'send-passing-statuses-for-untriggered-speculative-plans',
  'aggregated-commit-status-enabled',
  'speculative-plan-management-enabled',
  'owners-team-saml-role-id',
  'assessments-enforced',
  'allow-force-delete-workspaces',
  'default-execution-mode',
] as const satisfies readonly (keyof OrgSettings)[];
