// Fetches a module version the way Terraform does (see test/registry/go-getter.test.ts): asks the
// registry's download endpoint for X-Terraform-Get, resolves a relative value against the
// download URL, and hands the address to the real go-getter (Debian's
// golang-github-hashicorp-go-getter-dev) with Terraform's settings: http(s) getters only, no
// detectors, every decompressor. go-getter verifies checksum=... before it unpacks.
//
// Usage: getter <download URL> <token> <destination dir>
// Prints "ADDR <address>", one "FETCH <method> <url>" per request go-getter makes, then "OK";
// or "ERROR <reason>" and exits 1.
package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	getter "github.com/hashicorp/go-getter"
)

type logged struct{ next http.RoundTripper }

func (l logged) RoundTrip(r *http.Request) (*http.Response, error) {
	fmt.Printf("FETCH %s %s\n", r.Method, r.URL.String())
	return l.next.RoundTrip(r)
}

func die(format string, args ...interface{}) {
	fmt.Printf("ERROR "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		die("usage: getter <download URL> <token> <destination dir>")
	}
	download, token, dst := os.Args[1], os.Args[2], os.Args[3]

	req, err := http.NewRequest("GET", download, nil)
	if err != nil {
		die("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		die("%v", err)
	}
	res.Body.Close()
	if res.StatusCode != 204 && res.StatusCode != 200 {
		die("download endpoint answered %d", res.StatusCode)
	}
	addr := res.Header.Get("X-Terraform-Get")
	if addr == "" {
		die("no X-Terraform-Get header")
	}
	// Terraform resolves only "/", "./" and "../" values against the download URL.
	if strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, "./") || strings.HasPrefix(addr, "../") {
		base, _ := url.Parse(download)
		rel, err := url.Parse(addr)
		if err != nil {
			die("%v", err)
		}
		addr = base.ResolveReference(rel).String()
	}
	fmt.Printf("ADDR %s\n", addr)

	httpGetter := &getter.HttpGetter{Netrc: true, Client: &http.Client{Transport: logged{http.DefaultTransport}}}
	client := getter.Client{
		Src:           addr,
		Dst:           dst,
		Pwd:           dst,
		Mode:          getter.ClientModeDir,
		Detectors:     []getter.Detector{},
		Decompressors: getter.Decompressors,
		Getters:       map[string]getter.Getter{"http": httpGetter, "https": httpGetter},
	}
	if err := client.Get(); err != nil {
		die("%v", err)
	}
	fmt.Println("OK")
}
