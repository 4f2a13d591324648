// A real go-tfe client against a running Terrace (see test/gotfe/gotfe.test.ts). Built in
// GOPATH mode against Debian's golang-github-hashicorp-go-tfe-dev. Prints "OK" when every step
// behaved; otherwise the failed step, and exits 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	tfe "github.com/hashicorp/go-tfe"
)

func fail(step string, err error) {
	fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", step, err)
	os.Exit(1)
}

func check(step string, ok bool, format string, args ...interface{}) {
	if !ok {
		fail(step, fmt.Errorf(format, args...))
	}
}

func usernames(users []*tfe.User) []string {
	out := []string{}
	for _, u := range users {
		out = append(out, u.Username)
	}
	sort.Strings(out)
	return out
}

func main() {
	ctx := context.Background()
	client, err := tfe.NewClient(&tfe.Config{Address: os.Getenv("TERRACE_ADDRESS"), Token: os.Getenv("TERRACE_TOKEN")})
	if err != nil {
		fail("NewClient", err)
	}
	owner := os.Getenv("OWNER_USERNAME")
	inviteeEmail := os.Getenv("INVITEE_EMAIL")
	invitee := os.Getenv("INVITEE_USERNAME")

	org, err := client.Organizations.Create(ctx, tfe.OrganizationCreateOptions{Name: tfe.String("gotfe-org"), Email: tfe.String("gotfe@example.com")})
	if err != nil {
		fail("Organizations.Create", err)
	}
	check("Organizations.Create", org.Name == "gotfe-org" && org.Email == "gotfe@example.com" && !org.CreatedAt.IsZero() && org.SessionTimeout == 20160 && org.Permissions != nil && org.Permissions.CanDestroy, "unexpected %+v", org)

	org, err = client.Organizations.Read(ctx, "gotfe-org")
	if err != nil {
		fail("Organizations.Read", err)
	}
	check("Organizations.Read", org.ExternalID != "" && org.CollaboratorAuthPolicy == tfe.AuthPolicyPassword, "unexpected %+v", org)

	list, err := client.Organizations.List(ctx, tfe.OrganizationListOptions{ListOptions: tfe.ListOptions{PageNumber: 1, PageSize: 50}})
	if err != nil {
		fail("Organizations.List", err)
	}
	check("Organizations.List", len(list.Items) == 1 && list.Items[0].Name == "gotfe-org" && list.TotalCount == 1, "unexpected %d items, total %d", len(list.Items), list.TotalCount)

	org, err = client.Organizations.Update(ctx, "gotfe-org", tfe.OrganizationUpdateOptions{Email: tfe.String("new@example.com"), SessionTimeout: tfe.Int(60)})
	if err != nil {
		fail("Organizations.Update", err)
	}
	check("Organizations.Update", org.Email == "new@example.com" && org.SessionTimeout == 60, "unexpected %+v", org)

	org, err = client.Organizations.Update(ctx, "gotfe-org", tfe.OrganizationUpdateOptions{Name: tfe.String("gotfe-renamed")})
	if err != nil {
		fail("Organizations.Update (rename)", err)
	}
	check("Organizations.Update (rename)", org.Name == "gotfe-renamed", "name is %q", org.Name)
	if _, err := client.Organizations.Read(ctx, "gotfe-org"); !errors.Is(err, tfe.ErrResourceNotFound) {
		fail("Organizations.Read (old name)", fmt.Errorf("want resource not found, got %v", err))
	}

	ent, err := client.Organizations.Entitlements(ctx, "gotfe-renamed")
	if err != nil {
		fail("Organizations.Entitlements", err)
	}
	check("Organizations.Entitlements", ent.Teams && ent.PrivateModuleRegistry && ent.StateStorage && !ent.Sentinel, "unexpected %+v", ent)

	team, err := client.Teams.Create(ctx, "gotfe-renamed", tfe.TeamCreateOptions{
		Name:               tfe.String("core"),
		Visibility:         tfe.String("organization"),
		OrganizationAccess: &tfe.OrganizationAccessOptions{ManageWorkspaces: tfe.Bool(true), ManageVCSSettings: tfe.Bool(true)},
	})
	if err != nil {
		fail("Teams.Create", err)
	}
	check("Teams.Create", team.Name == "core" && team.Visibility == "organization" && team.OrganizationAccess.ManageWorkspaces && team.OrganizationAccess.ManageVCSSettings && !team.OrganizationAccess.ManagePolicies, "unexpected %+v", team)

	team, err = client.Teams.Update(ctx, team.ID, tfe.TeamUpdateOptions{Name: tfe.String("core-team")})
	if err != nil {
		fail("Teams.Update", err)
	}
	check("Teams.Update", team.Name == "core-team", "name is %q", team.Name)
	teams, err := client.Teams.List(ctx, "gotfe-renamed", tfe.TeamListOptions{})
	if err != nil {
		fail("Teams.List", err)
	}
	check("Teams.List", len(teams.Items) == 2, "want owners and core-team, got %d", len(teams.Items))

	membership, err := client.OrganizationMemberships.Create(ctx, "gotfe-renamed", tfe.OrganizationMembershipCreateOptions{Email: tfe.String(inviteeEmail)})
	if err != nil {
		fail("OrganizationMemberships.Create", err)
	}
	check("OrganizationMemberships.Create", membership.Status == tfe.OrganizationMembershipInvited, "status %q", membership.Status)

	// By organization membership: works for the invited user.
	if err := client.TeamMembers.Add(ctx, team.ID, tfe.TeamMemberAddOptions{OrganizationMembershipIDs: []string{membership.ID}}); err != nil {
		fail("TeamMembers.Add (memberships)", err)
	}
	// By username: the owner has accepted (they created the organization).
	if err := client.TeamMembers.Add(ctx, team.ID, tfe.TeamMemberAddOptions{Usernames: []string{owner}}); err != nil {
		fail("TeamMembers.Add (usernames)", err)
	}
	users, err := client.TeamMembers.ListUsers(ctx, team.ID)
	if err != nil {
		fail("TeamMembers.ListUsers", err)
	}
	want := []string{invitee, owner}
	sort.Strings(want)
	check("TeamMembers.ListUsers", fmt.Sprint(usernames(users)) == fmt.Sprint(want), "got %v, want %v", usernames(users), want)
	mems, err := client.TeamMembers.ListOrganizationMemberships(ctx, team.ID)
	if err != nil {
		fail("TeamMembers.ListOrganizationMemberships", err)
	}
	check("TeamMembers.ListOrganizationMemberships", len(mems) == 2, "got %d", len(mems))

	if err := client.TeamMembers.Remove(ctx, team.ID, tfe.TeamMemberRemoveOptions{Usernames: []string{owner}}); err != nil {
		fail("TeamMembers.Remove (usernames)", err)
	}
	if err := client.TeamMembers.Remove(ctx, team.ID, tfe.TeamMemberRemoveOptions{OrganizationMembershipIDs: []string{membership.ID}}); err != nil {
		fail("TeamMembers.Remove (memberships)", err)
	}
	team, err = client.Teams.Read(ctx, team.ID)
	if err != nil {
		fail("Teams.Read", err)
	}
	check("Teams.Read", team.UserCount == 0, "users-count %d", team.UserCount)

	tt, err := client.TeamTokens.Generate(ctx, team.ID)
	if err != nil {
		fail("TeamTokens.Generate", err)
	}
	check("TeamTokens.Generate", tt.Token != "", "empty token")
	ot, err := client.OrganizationTokens.Generate(ctx, "gotfe-renamed")
	if err != nil {
		fail("OrganizationTokens.Generate", err)
	}
	check("OrganizationTokens.Generate", ot.Token != "", "empty token")
	if _, err := client.OrganizationTokens.Read(ctx, "gotfe-renamed"); err != nil {
		fail("OrganizationTokens.Read", err)
	}
	if err := client.OrganizationTokens.Delete(ctx, "gotfe-renamed"); err != nil {
		fail("OrganizationTokens.Delete", err)
	}

	if err := client.Teams.Delete(ctx, team.ID); err != nil {
		fail("Teams.Delete", err)
	}
	if err := client.OrganizationMemberships.Delete(ctx, membership.ID); err != nil {
		fail("OrganizationMemberships.Delete", err)
	}
	if err := client.Organizations.Delete(ctx, "gotfe-renamed"); err != nil {
		fail("Organizations.Delete", err)
	}
	if _, err := client.Organizations.Read(ctx, "gotfe-renamed"); !errors.Is(err, tfe.ErrResourceNotFound) {
		fail("Organizations.Read (deleted)", fmt.Errorf("want resource not found, got %v", err))
	}
	fmt.Println("OK")
}
