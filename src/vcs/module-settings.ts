import { z } from 'zod';
import { quoteValue, unprocessable } from '../http/errors.js';
import { canonicalPublishVersion, MODULE_NAME_RE, PROVIDER_RE } from '../registry/names.js';
import { normalizeSourceDirectory } from './git.js';

/**
 * The request shapes of VCS-backed registry modules (contract-wave2 §4.3). go-tfe sends vcs-repo
 * as plain nested JSON with "" for what is unset, so "" is absent for the token, the GitHub App
 * installation, the tag prefix and the source directory, and "tag mode" for branch.
 */

const emptyIsAbsent = z
  .string()
  .nullable()
  .optional()
  .transform((v) => (v === '' || v === null ? undefined : v));

const vcsRepoSchema = z.object({
  identifier: z.string().max(500).optional(),
  'oauth-token-id': emptyIsAbsent,
  'display-identifier': emptyIsAbsent,
  display_identifier: emptyIsAbsent,
  'github-app-installation-id': emptyIsAbsent,
  'organization-name': emptyIsAbsent,
  branch: z.string().max(250).nullable().optional(),
  tags: z.boolean().nullable().optional(),
  'tag-prefix': emptyIsAbsent,
  'source-directory': emptyIsAbsent,
  'ingress-submodules': z.boolean().nullable().optional(),
  'tags-regex': emptyIsAbsent,
});

export type VcsRepoInput = z.output<typeof vcsRepoSchema>;

export const createVcsModuleSchema = z.object({
  name: emptyIsAbsent,
  provider: emptyIsAbsent,
  'registry-name': z.literal('private', { message: 'only "private" modules can be published to Terrace' }).optional(),
  'no-code': z.boolean().optional(),
  'initial-version': emptyIsAbsent,
  'test-config': z.object({ 'tests-enabled': z.boolean().nullable().optional() }).passthrough().nullable().optional(),
  'vcs-repo': vcsRepoSchema,
});

export const updateVcsModuleSchema = z.object({
  'no-code': z.boolean().optional(),
  'test-config': z.object({ 'tests-enabled': z.boolean().nullable().optional() }).passthrough().nullable().optional(),
  'vcs-repo': vcsRepoSchema.nullable().optional(),
});

export const createVcsVersionSchema = z.object({
  version: z.string().min(1, 'is required'),
  'commit-sha': z.string().max(100).nullable().optional(),
  description: z.string().max(2000).nullable().optional(),
});

const REPO = '/data/attributes/vcs-repo';
const SEGMENT = /^[A-Za-z0-9_.-]{1,100}$/;
const PREFIX_RE = /^[\x21-\x7e]{1,100}$/;
const SHA_RE = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;

/** owner/repository (GitHub) or group/project (GitLab), without dot segments or URL syntax. */
export function checkIdentifier(raw: string | undefined, gitHub: boolean): string {
  if (raw === undefined || raw.trim() === '') throw unprocessable('vcs-repo.identifier is required: the repository as owner/name (GitHub) or group/project (GitLab)', `${REPO}/identifier`);
  const id = raw.trim().replace(/\.git$/, '');
  const parts = id.split('/');
  const shapeOk = gitHub ? parts.length === 2 : parts.length >= 2 && parts.length <= 20;
  if (!shapeOk || parts.some((p) => !SEGMENT.test(p) || p === '.' || p === '..')) {
    throw unprocessable(
      `vcs-repo.identifier ${quoteValue(raw)} is not a repository: use ${gitHub ? 'owner/repository' : 'group/project'} with letters, digits, ".", "-" and "_"`,
      `${REPO}/identifier`,
    );
  }
  return id;
}

/** terraform-<provider>-<name>: split on "-" into at most three parts, so the name may hold hyphens. */
export function inferNameAndProvider(identifier: string): { name: string; provider: string } | null {
  const repo = identifier.split('/').at(-1)!;
  const parts = repo.split('-');
  if (parts.length < 3 || parts[0] !== 'terraform') return null;
  const provider = parts[1]!;
  const name = parts.slice(2).join('-');
  if (!PROVIDER_RE.test(provider) || !MODULE_NAME_RE.test(name)) return null;
  return { name, provider };
}

export function checkTagPrefix(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  if (!PREFIX_RE.test(raw)) throw unprocessable(`vcs-repo.tag-prefix ${quoteValue(raw)} must be 1-100 printable characters without spaces`, `${REPO}/tag-prefix`);
  return raw;
}

export function checkSourceDirectory(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const dir = normalizeSourceDirectory(raw);
  if (dir === null) {
    throw unprocessable(`vcs-repo.source-directory ${quoteValue(raw)} must be a relative path inside the repository, without "." or ".." segments`, `${REPO}/source-directory`);
  }
  return dir === '' ? null : dir;
}

export function checkBranch(raw: string | null | undefined): string {
  const b = (raw ?? '').trim();
  if (b === '') return '';
  if (b.length > 250 || !/^[A-Za-z0-9._/-]+$/.test(b) || b.startsWith('-') || b.startsWith('/') || b.endsWith('/') || b.includes('..') || b.endsWith('.lock')) {
    throw unprocessable(`vcs-repo.branch ${quoteValue(raw)} is not a valid branch name`, `${REPO}/branch`);
  }
  return b;
}

export function checkVersion(raw: string, pointer: string): string {
  const v = canonicalPublishVersion(raw);
  if (!v) throw unprocessable(`version ${quoteValue(raw)} is not valid semantic versioning (for example 1.2.0 or v1.2.0-rc.1)`, pointer);
  return v;
}

export function checkCommitSha(raw: string | null | undefined): string {
  if (raw === undefined || raw === null || raw === '') {
    throw unprocessable('commit-sha is required for a branch-based module: the full SHA of the commit to publish', '/data/attributes/commit-sha');
  }
  const sha = raw.trim().toLowerCase();
  if (!SHA_RE.test(sha)) throw unprocessable(`commit-sha ${quoteValue(raw)} must be a full 40-character commit SHA`, '/data/attributes/commit-sha');
  return sha;
}

/** The version a tag publishes: the tag without the prefix, as semver with an optional "v"; null when it publishes none. */
export function tagVersion(tag: string, prefix: string | null): { version: string } | { skipped: 'prefix' | 'semver' } {
  let rest = tag;
  if (prefix) {
    if (!tag.startsWith(prefix)) return { skipped: 'prefix' };
    rest = tag.slice(prefix.length);
  }
  const v = canonicalPublishVersion(rest);
  return v && !/\s/.test(rest) ? { version: v } : { skipped: 'semver' };
}
