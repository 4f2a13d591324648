import type { ResourceObject } from '../http/jsonapi.js';
import type { Entitlements } from './entitlements.js';
import type { OrganizationRow, OrgAccess } from './access.js';
import type { EffectivePolicy } from './retention.js';
import type { OrgSettings } from './settings.js';
import type { AgentPoolRow } from './store.js';

const orgPath = (name: string) => `/api/v2/organizations/${encodeURIComponent(name)}`;

/** The caller's permissions on the organization, as go-tfe reads them (all JSON booleans). */
export function organizationPermissions(a: OrgAccess): Record<string, boolean> {
  const owner = a.owner;
  const teams = a.owner || a.organizationToken;
  return {
    'can-update': owner,
    'can-destroy': owner,
    'can-access-via-teams': a.member,
    'can-traverse': a.member,
    'can-create-team': teams,
    'can-manage-users': teams,
    'can-update-api-token': owner,
    'can-update-agent-pools': owner,
    'can-create-module': a.permissions['manage-modules'],
    'can-create-workspace': a.permissions['manage-workspaces'],
    'can-update-oauth': a.permissions['manage-vcs-settings'],
    'can-read-run-tasks': a.member,
    'can-manage-run-tasks': a.permissions['manage-run-tasks'],
    'can-update-ssh-keys': owner,
    'can-create-workspace-migration': false,
    'can-create-project': a.member && (a.owner || a.organizationToken || a.permissions['manage-projects']),
    'can-manage-subscription': false,
    'can-manage-sso': false,
    'can-update-sentinel': false,
    'can-start-trial': false,
    'can-manage-tags': false,
    'can-manage-varsets': false,
    'can-read-varsets': false,
    'can-manage-public-providers': false,
    'can-create-provider': false,
    'can-manage-public-modules': false,
    'can-manage-custom-providers': false,
    'can-manage-assessments': false,
    'can-read-assessments': false,
    'can-deploy-no-code-modules': false,
    'can-manage-no-code-modules': false,
  };
}

export interface OrganizationView {
  settings: OrgSettings;
  access: OrgAccess;
  retention: EffectivePolicy | null;
}

/**
 * JSON:API id is the name (HCP addresses organizations by name). Terrace is a self-hosted
 * installation, so two-factor-conformant and assessments-enforced are not returned (HCP returns
 * them only on its hosted service).
 */
export function serializeOrganization(org: OrganizationRow, v: OrganizationView): ResourceObject {
  const s = v.settings;
  const self = orgPath(org.name);
  return {
    id: org.name,
    type: 'organizations',
    attributes: {
      name: org.name,
      'external-id': org.id,
      'created-at': org.created_at,
      email: org.email,
      'session-timeout': s['session-timeout'],
      'session-remember': s['session-remember'],
      'collaborator-auth-policy': s['collaborator-auth-policy'],
      'cost-estimation-enabled': s['cost-estimation-enabled'],
      'send-passing-statuses-for-untriggered-speculative-plans': s['send-passing-statuses-for-untriggered-speculative-plans'],
      'aggregated-commit-status-enabled': s['aggregated-commit-status-enabled'],
      'speculative-plan-management-enabled': s['speculative-plan-management-enabled'],
      'allow-force-delete-workspaces': s['allow-force-delete-workspaces'],
      'owners-team-saml-role-id': s['owners-team-saml-role-id'],
      'default-execution-mode': s['default-execution-mode'],
      'saml-enabled': false,
      'fair-run-queuing-enabled': false,
      'plan-expired': false,
      'plan-expires-at': null,
      'plan-is-trial': false,
      'plan-is-enterprise': true,
      'plan-identifier': 'terrace',
      'trial-expires-at': null,
      'is-unified': false,
      'stacks-enabled': false,
      'enforce-hyok': false,
      'user-tokens-enabled': true,
      'max-ttl-enabled': false,
      permissions: organizationPermissions(v.access),
    },
    relationships: {
      'default-agent-pool': {
        data: s['default-execution-mode'] === 'agent' && s['default-agent-pool-id'] ? { type: 'agent-pools', id: s['default-agent-pool-id'] } : null,
      },
      'entitlement-set': { data: { type: 'entitlement-sets', id: org.id }, links: { related: `${self}/entitlement-set` } },
      'module-producers': { links: { related: `${self}/relationships/module-producers` } },
      'authentication-token': { links: { related: `${self}/authentication-token` } },
      'oauth-tokens': { links: { related: `${self}/oauth-tokens` } },
      subscription: { links: { related: `${self}/subscription` } },
      // go-tfe learns the policy's kind from this relationship's type.
      'data-retention-policy': {
        data: v.retention ? { type: v.retention.type, id: v.retention.id } : null,
        links: { related: `${self}/relationships/data-retention-policy` },
      },
    },
    links: { self },
  };
}

/** Organizations as listed by module-producers and module-consumers: name and external id only. */
export function serializeOrganizationRef(org: OrganizationRow): ResourceObject {
  return {
    id: org.name,
    type: 'organizations',
    attributes: { name: org.name, 'external-id': org.id },
    links: { self: orgPath(org.name) },
  };
}

/** What this installation offers every organization (its edition's entitlements). */
export function serializeEntitlementSet(org: OrganizationRow, ent: Entitlements): ResourceObject {
  return {
    id: org.id,
    type: 'entitlement-sets',
    attributes: {
      agents: ent.agents,
      'audit-logging': false,
      'configuration-designer': false,
      'cost-estimation': false,
      'global-run-tasks': ent['global-run-tasks'],
      infragraph: false,
      'infragraph-with-nrtu': false,
      'module-tests-generation': false,
      operations: false,
      'policy-enforcement': false,
      'private-module-registry': true,
      'private-policy-agents': false,
      'private-run-tasks': false,
      'private-vcs': false,
      'run-tasks': ent['run-tasks'],
      'self-serve-billing': false,
      sentinel: false,
      sso: false,
      'state-storage': true,
      teams: true,
      'usage-reporting': false,
      'vcs-integrations': true,
      'waypoint-actions': false,
      'waypoint-templates-and-addons': false,
      'user-limit': null,
      'policy-limit': null,
      'policy-set-limit': null,
      'policy-mandatory-enforcement-limit': null,
      'run-task-limit': ent['run-task-limit'],
      'run-task-workspace-limit': ent['run-task-workspace-limit'],
      'run-task-mandatory-enforcement-limit': ent['run-task-mandatory-enforcement-limit'],
      'versioned-policy-set-limit': null,
    },
    links: { self: `${orgPath(org.name)}/entitlement-set` },
  };
}

export function serializeAgentPool(pool: AgentPoolRow, orgName: string): ResourceObject {
  return {
    id: pool.id,
    type: 'agent-pools',
    attributes: {
      name: pool.name,
      'created-at': pool.created_at,
      'organization-scoped': pool.organization_scoped === 1,
      'agent-count': 0,
    },
    relationships: {
      organization: { data: { type: 'organizations', id: orgName }, links: { related: orgPath(orgName) } },
      workspaces: { data: [] },
      'allowed-workspaces': { data: [] },
    },
    links: { self: `/api/v2/agent-pools/${pool.id}` },
  };
}

export function serializeRetentionPolicy(p: EffectivePolicy, orgName: string, legacyType = false): ResourceObject {
  return {
    id: p.id,
    type: legacyType ? 'data-retention-policies' : p.type,
    attributes: p.kind === 'delete-older' ? { 'delete-older-than-n-days': p.days } : {},
    relationships: { target: { data: { type: 'organizations', id: orgName } } },
  };
}
