import type { OrgAccess, OrganizationRow } from '../organizations/access.js';
import { canManageVcs } from '../vcs/service.js';

/** Who sees an organization's workspaces list (the same grants the workspaces API checks). */
export function seesWorkspaces(access: OrgAccess): boolean {
  return access.owner || access.organizationToken || access.permissions['manage-workspaces'] || access.permissions['read-state-outputs'];
}

/** An organization's pages, each linked only for those the API would show it to. */
export function OrgNav(props: { org: OrganizationRow; access: OrgAccess; current: 'modules' | 'vcs-events' }) {
  const base = `/app/organizations/${encodeURIComponent(props.org.name)}`;
  const tabs: [string, string, string][] = [['modules', base, 'Modules']];
  if (seesWorkspaces(props.access)) tabs.push(['workspaces', `${base}/workspaces`, 'Workspaces and their outputs']);
  if (canManageVcs(props.access)) tabs.push(['vcs-events', `${base}/vcs-events`, 'VCS events']);
  return (
    <nav class="tabs" aria-label="Organization">
      <ul>
        {tabs.map(([id, href, label]) => (
          <li><a href={href} aria-current={id === props.current ? 'page' : undefined}>{label}</a></li>
        ))}
      </ul>
    </nav>
  );
}
