import { z } from 'zod';
import { EXECUTION_MODES } from '../organizations/settings.js';

/** Letters, digits, "-" and "_", 1-90 characters (HCP's rule; go-tfe checks the same). */
export const WORKSPACE_NAME_RE = /^[A-Za-z0-9_-]{1,90}$/;

/**
 * HCP workspace settings Terrace stores and shows but does not act on (it runs no plans):
 * kept so clients that write them read back what they wrote. Defaults are HCP's.
 */
export interface InertSettings {
  'allow-destroy-plan': boolean;
  'auto-apply-run-trigger': boolean;
  'assessments-enabled': boolean;
  'file-triggers-enabled': boolean;
  'global-remote-state': boolean;
  'queue-all-runs': boolean;
  'speculative-enabled': boolean;
  'structured-run-output-enabled': boolean;
  'trigger-prefixes': string[];
  'trigger-patterns': string[];
  'source-name': string | null;
  'source-url': string | null;
}

export const INERT_DEFAULTS: Readonly<InertSettings> = Object.freeze({
  'allow-destroy-plan': true,
  'auto-apply-run-trigger': false,
  'assessments-enabled': false,
  'file-triggers-enabled': true,
  'global-remote-state': false,
  'queue-all-runs': false,
  'speculative-enabled': true,
  'structured-run-output-enabled': true,
  'trigger-prefixes': [],
  'trigger-patterns': [],
  'source-name': null,
  'source-url': null,
});

export const INERT_KEYS = Object.keys(INERT_DEFAULTS) as (keyof InertSettings)[];

export function parseInert(json: string): InertSettings {
  let stored: Record<string, unknown> = {};
  try {
    const v = JSON.parse(json) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) stored = v as Record<string, unknown>;
  } catch {
    // A corrupt column reads as the defaults.
  }
  const out = { ...INERT_DEFAULTS } as Record<string, unknown>;
  for (const k of INERT_KEYS) if (k in stored) out[k] = stored[k];
  return out as unknown as InertSettings;
}

/** The stored vcs-repo (API key names; empty strings already dropped). */
export interface VcsRepo {
  identifier: string;
  branch: string;
  'ingress-submodules': boolean;
  'oauth-token-id': string | null;
  'github-app-installation-id': string | null;
  'tags-regex': string | null;
}

const bool = () => z.boolean({ error: 'must be true or false' });
const str = (max: number) => z.string({ error: 'must be a string' }).max(max, { error: `must be at most ${max} characters` });
const strings = () => z.array(str(1000), { error: 'must be an array of strings' }).max(1000, { error: 'must hold at most 1000 items' });

// go-tfe sends vcs-repo as plain nested JSON (not JSON:API attributes) and "" for unset pointers.
const vcsRepoInput = z.object({
  identifier: str(500).optional(),
  branch: str(500).nullable().optional(),
  'ingress-submodules': bool().nullable().optional(),
  'oauth-token-id': str(200).nullable().optional(),
  'github-app-installation-id': str(200).nullable().optional(),
  'tags-regex': str(500).nullable().optional(),
});
export type VcsRepoInput = z.output<typeof vcsRepoInput>;

const workingDirectory = str(1000).refine((v) => !v.startsWith('/') && !v.split('/').includes('..'), {
  error: 'must be a path relative to the repository root, without ".." segments',
});

const common = {
  description: str(10_000).nullable().optional(),
  'working-directory': workingDirectory.nullable().optional(),
  'execution-mode': z.enum(EXECUTION_MODES, { error: `must be one of ${EXECUTION_MODES.join(', ')}` }).optional(),
  'agent-pool-id': str(200).nullable().optional(),
  operations: bool().optional(),
  'auto-apply': bool().optional(),
  'terraform-version': str(100).min(1, { error: 'must not be empty' }).optional(),
  'vcs-repo': vcsRepoInput.nullable().optional(),
  'setting-overwrites': z
    .object({ 'execution-mode': bool().optional(), 'agent-pool': bool().optional() }, { error: 'must be an object' })
    .optional(),
  'allow-destroy-plan': bool().optional(),
  'auto-apply-run-trigger': bool().optional(),
  'assessments-enabled': bool().optional(),
  'file-triggers-enabled': bool().optional(),
  'global-remote-state': bool().optional(),
  'queue-all-runs': bool().optional(),
  'speculative-enabled': bool().optional(),
  'structured-run-output-enabled': bool().optional(),
  'trigger-prefixes': strings().optional(),
  'trigger-patterns': strings().optional(),
  // Validated against the tag rule by the service (tags/rules.ts); stored as tags, not inert.
  'tag-names': z.array(str(255), { error: 'must be an array of strings' }).max(100, { error: 'must hold at most 100 items' }).optional(),
  'source-name': str(500).nullable().optional(),
  'source-url': str(2000).nullable().optional(),
};

const nameSchema = z
  .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
  .regex(WORKSPACE_NAME_RE, { error: 'must be 1-90 letters, digits, "-" or "_"' });

/** Unknown attributes are ignored (HCP has many Terrace does not model). */
export const createWorkspaceSchema = z.object({ name: nameSchema, ...common });
export const updateWorkspaceSchema = z.object({ name: nameSchema.optional(), ...common });
export type WorkspaceInput = z.output<typeof updateWorkspaceSchema>;

export const lockSchema = z.object({ reason: str(1000).nullable().optional() });
