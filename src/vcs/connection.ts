import type { VcsServiceProvider } from '../db/schema.js';

export type { VcsServiceProvider };

export const SERVICE_PROVIDERS: readonly VcsServiceProvider[] = [
  'github',
  'github_enterprise',
  'gitlab_hosted',
  'gitlab_community_edition',
  'gitlab_enterprise_edition',
];

/** HCP's service-provider-display-name for each provider. */
export const PROVIDER_DISPLAY_NAMES: Record<VcsServiceProvider, string> = {
  github: 'GitHub',
  github_enterprise: 'GitHub Enterprise',
  gitlab_hosted: 'GitLab',
  gitlab_community_edition: 'GitLab Community Edition',
  gitlab_enterprise_edition: 'GitLab Enterprise Edition',
};

export function isGitHub(p: VcsServiceProvider): boolean {
  return p === 'github' || p === 'github_enterprise';
}

/** What background work and other domains need to talk to a provider through one OAuth token. */
export interface VcsConnection {
  oauthClientId: string;
  oauthTokenId: string;
  organizationId: string;
  serviceProvider: VcsServiceProvider;
  apiUrl: string;
  httpUrl: string;
  /** The personal access token in clear: never log it, never put it in a URL. */
  token: string;
}
