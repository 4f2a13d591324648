import { z } from 'zod';
import { MAX_TASK_URL_LENGTH } from './outbound.js';

export const STAGES = ['pre_plan', 'post_plan', 'pre_apply', 'post_apply'] as const;
export type Stage = (typeof STAGES)[number];
export const ENFORCEMENT_LEVELS = ['mandatory', 'advisory'] as const;
export type EnforcementLevel = (typeof ENFORCEMENT_LEVELS)[number];

/** The docs' samples send "true"/"false" as strings: accepted on input, never emitted. */
const looseBool = () =>
  z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')], { error: 'must be true or false' });

const stage = z.enum(STAGES, { error: `must be one of ${STAGES.join(', ')}` });
export const stagesSchema = z.array(stage, { error: `must be an array of stage names (${STAGES.join(', ')})` }).min(1, { error: 'must list at least one stage' }).max(4);
const enforcement = z.enum(ENFORCEMENT_LEVELS, { error: 'must be "mandatory" or "advisory"' });

const globalConfiguration = z.object(
  { enabled: looseBool().optional(), stages: stagesSchema.optional(), 'enforcement-level': enforcement.optional() },
  { error: 'must be an object with enabled, stages and enforcement-level' },
);

const NAME_RE = /^[A-Za-z0-9_-]{1,128}$/;
const name = z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).regex(NAME_RE, {
  error: 'must be 1-128 letters, digits, "-" or "_"',
});
const url = z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(MAX_TASK_URL_LENGTH, {
  error: `must be at most ${MAX_TASK_URL_LENGTH} characters`,
});
const common = {
  description: z.string({ error: 'must be a string or null' }).max(300, { error: 'must be at most 300 characters' }).nullable().optional(),
  category: z.literal('task', { error: 'must be "task"' }).optional(),
  enabled: looseBool().optional(),
  'hmac-key': z.string({ error: 'must be a string or null' }).max(1024, { error: 'must be at most 1024 characters' }).nullable().optional(),
  hmac_key: z.string({ error: 'must be a string or null' }).max(1024, { error: 'must be at most 1024 characters' }).nullable().optional(),
  'global-configuration': globalConfiguration.nullable().optional(),
};
export const createTaskSchema = z.object({ name, url, ...common });
export const updateTaskSchema = z.object({ name: name.optional(), url: url.optional(), ...common });
export type TaskInput = z.output<typeof updateTaskSchema>;

export const workspaceTaskSchema = z.object({
  'enforcement-level': enforcement.optional(),
  stages: stagesSchema.optional(),
  stage: stage.optional(),
});
export type WorkspaceTaskInput = z.output<typeof workspaceTaskSchema>;

export interface GlobalConfiguration {
  enabled: boolean;
  stages: Stage[];
  'enforcement-level': EnforcementLevel;
}

export function parseGlobal(json: string | null): GlobalConfiguration | null {
  if (json === null) return null;
  try {
    return JSON.parse(json) as GlobalConfiguration;
  } catch {
    return null;
  }
}

export function parseStages(json: string): Stage[] {
  try {
    const v = JSON.parse(json) as unknown;
    return Array.isArray(v) ? (v.filter((s) => (STAGES as readonly unknown[]).includes(s)) as Stage[]) : [];
  } catch {
    return [];
  }
}
