// A real go-tfe client (Debian's golang-github-hashicorp-go-tfe-dev) pushing a state to Terrace
// and reading it back (see test/state/gotfe.test.ts). Prints "OK" when every step behaved;
// otherwise the failed step, and exits 1.
package main

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io/ioutil"
	"os"
	"strings"
	"time"

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

func main() {
	ctx := context.Background()
	client, err := tfe.NewClient(&tfe.Config{Address: os.Getenv("TERRACE_ADDRESS"), Token: os.Getenv("TERRACE_TOKEN")})
	if err != nil {
		fail("NewClient", err)
	}
	org := os.Getenv("ORG")
	raw, err := ioutil.ReadFile(os.Getenv("STATE_FILE"))
	if err != nil {
		fail("read state file", err)
	}

	ws, err := client.Workspaces.Create(ctx, org, tfe.WorkspaceCreateOptions{Name: tfe.String("gotfe-ws"), WorkingDirectory: tfe.String("infra")})
	if err != nil {
		fail("Workspaces.Create", err)
	}
	check("Workspaces.Create", strings.HasPrefix(ws.ID, "ws-") && ws.Name == "gotfe-ws" && ws.WorkingDirectory == "infra" && ws.ExecutionMode == "remote" && ws.Operations && !ws.CreatedAt.IsZero() && ws.Permissions != nil && ws.Permissions.CanLock && ws.Organization != nil && ws.Organization.Name == org, "unexpected %+v", ws)

	byName, err := client.Workspaces.Read(ctx, org, "gotfe-ws")
	if err != nil {
		fail("Workspaces.Read", err)
	}
	byID, err := client.Workspaces.ReadByID(ctx, ws.ID)
	if err != nil {
		fail("Workspaces.ReadByID", err)
	}
	check("Workspaces.Read", byName.ID == ws.ID && byID.Name == "gotfe-ws", "unexpected %+v / %+v", byName, byID)

	list, err := client.Workspaces.List(ctx, org, tfe.WorkspaceListOptions{ListOptions: tfe.ListOptions{PageNumber: 1, PageSize: 10}, Search: tfe.String("gotfe")})
	if err != nil {
		fail("Workspaces.List", err)
	}
	check("Workspaces.List", len(list.Items) == 1 && list.TotalCount == 1 && list.CurrentPage == 1, "unexpected %+v", list.Pagination)

	locked, err := client.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{Reason: tfe.String("Locked by Terraform")})
	if err != nil {
		fail("Workspaces.Lock", err)
	}
	check("Workspaces.Lock", locked.Locked, "not locked")
	_, err = client.Workspaces.Lock(ctx, ws.ID, tfe.WorkspaceLockOptions{})
	check("Workspaces.Lock twice", err == tfe.ErrWorkspaceLocked, "expected ErrWorkspaceLocked, got %v", err)

	sum := fmt.Sprintf("%x", md5.Sum(raw))
	_, err = client.StateVersions.Create(ctx, ws.ID, tfe.StateVersionCreateOptions{
		Lineage: tfe.String("a1f4c7e2-5b3d-9e8f-0c1a-2b3c4d5e6f70"),
		MD5:     tfe.String(fmt.Sprintf("%x", md5.Sum([]byte("not it")))),
		Serial:  tfe.Int64(3),
		State:   tfe.String(base64.StdEncoding.EncodeToString(raw)),
	})
	check("StateVersions.Create with a wrong md5", err != nil && strings.Contains(err.Error(), "does not match"), "expected a refusal, got %v", err)

	sv, err := client.StateVersions.Create(ctx, ws.ID, tfe.StateVersionCreateOptions{
		Lineage: tfe.String("a1f4c7e2-5b3d-9e8f-0c1a-2b3c4d5e6f70"),
		MD5:     tfe.String(sum),
		Serial:  tfe.Int64(3),
		State:   tfe.String(base64.StdEncoding.EncodeToString(raw)),
	})
	if err != nil {
		fail("StateVersions.Create", err)
	}
	check("StateVersions.Create", strings.HasPrefix(sv.ID, "sv-") && sv.Serial == 3 && !sv.CreatedAt.IsZero() && sv.DownloadURL != "", "unexpected %+v", sv)

	// Outputs appear once processing is done (it runs in the background).
	var current *tfe.StateVersion
	for i := 0; i < 200; i++ {
		current, err = client.StateVersions.Current(ctx, ws.ID)
		if err != nil {
			fail("StateVersions.Current", err)
		}
		if len(current.Outputs) == 2 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	check("StateVersions.Current", current.ID == sv.ID && len(current.Outputs) == 2, "unexpected %+v", current)

	values := map[string]string{}
	for _, o := range current.Outputs {
		out, err := client.StateVersionOutputs.Read(ctx, o.ID)
		if err != nil {
			fail("StateVersionOutputs.Read", err)
		}
		check("StateVersionOutputs.Read", out.Type == "string", "unexpected %+v", out)
		values[out.Name] = out.Value
		if out.Name == "admin_password" {
			check("StateVersionOutputs.Read sensitive", out.Sensitive, "not sensitive")
		}
	}
	check("output values", values["admin_password"] == "s3cr3t-from-go-tfe" && values["bucket_name"] == "acme-artifacts", "unexpected %v", values)

	downloaded, err := client.StateVersions.Download(ctx, current.DownloadURL)
	if err != nil {
		fail("StateVersions.Download", err)
	}
	check("StateVersions.Download", string(downloaded) == string(raw), "downloaded %d bytes, not the state", len(downloaded))

	svs, err := client.StateVersions.List(ctx, tfe.StateVersionListOptions{Organization: tfe.String(org), Workspace: tfe.String("gotfe-ws")})
	if err != nil {
		fail("StateVersions.List", err)
	}
	check("StateVersions.List", len(svs.Items) == 1 && svs.Items[0].ID == sv.ID, "unexpected %+v", svs.Items)

	unlocked, err := client.Workspaces.Unlock(ctx, ws.ID)
	if err != nil {
		fail("Workspaces.Unlock", err)
	}
	check("Workspaces.Unlock", !unlocked.Locked, "still locked")

	updated, err := client.Workspaces.Update(ctx, org, "gotfe-ws", tfe.WorkspaceUpdateOptions{Name: tfe.String("gotfe-renamed"), AutoApply: tfe.Bool(true)})
	if err != nil {
		fail("Workspaces.Update", err)
	}
	check("Workspaces.Update", updated.Name == "gotfe-renamed" && updated.AutoApply, "unexpected %+v", updated)

	if err := client.Workspaces.DeleteByID(ctx, ws.ID); err != nil {
		fail("Workspaces.DeleteByID", err)
	}
	_, err = client.Workspaces.ReadByID(ctx, ws.ID)
	check("Workspaces.ReadByID after delete", err == tfe.ErrResourceNotFound, "expected ErrResourceNotFound, got %v", err)

	fmt.Println("OK")
}
