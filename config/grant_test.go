package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/extension"
)

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want config.Grant
	}{
		{"hook:failure-metrics", config.Grant{Extension: "failure-metrics"}},
		{"hook:x:events", config.Grant{Extension: "x", Port: extension.CapabilityEvents}},
		{"hook:x:hooks", config.Grant{Extension: "x", Port: extension.CapabilityHooks}},
		{"hook:x:resource:API.token-2", config.Grant{Extension: "x", Resource: "API.token-2"}},
	} {
		g, err := config.ParseGrant(tc.in)
		if err != nil || g != tc.want || g.String() != tc.in {
			t.Errorf("%s: %+v (%s), %v", tc.in, g, g, err)
		}
	}
	for _, bad := range []string{"", "hook:", "x", "hooks:x", "hook:X", "hook:x:network", "hook:x:resource:", "hook:x:resource:9", "hook:x:events:more", "/abs/path"} {
		if g, err := config.ParseGrant(bad); err == nil {
			t.Errorf("%q accepted: %+v", bad, g)
		}
	}
}

// Grants are per workspace, kept beside the trusted workspaces, and
// revoking an extension's grant revokes its port and resource grants.
func TestTrustStoreGrants(t *testing.T) {
	cfgDir := t.TempDir()
	base := t.TempDir()
	ws, other := filepath.Join(base, "repo"), filepath.Join(base, "other")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(other, 0o755)
	s := config.NewTrustStore(cfgDir)
	if s.Granted(ws, "hook:lint") {
		t.Fatal("granted before Grant")
	}
	if _, err := s.Trust(other); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"hook:lint", "hook:lint:resource:TOKEN", "hook:fmt:events", "hook:lint"} {
		if rec, err := s.Grant(ws, g); err != nil || rec != realPath(t, ws) {
			t.Fatalf("Grant %s: %s, %v", g, rec, err)
		}
	}
	if _, err := s.Grant(ws, "lint"); err == nil || !strings.Contains(err.Error(), `grant "lint"`) {
		t.Errorf("an invalid grant: %v", err)
	}
	if !s.Granted(ws, "hook:lint") || s.Granted(other, "hook:lint") || s.Granted(ws, "hook:fmt") {
		t.Error("Granted is not per workspace and per grant")
	}
	list, err := s.Grants(ws)
	if want := []string{"hook:fmt:events", "hook:lint", "hook:lint:resource:TOKEN"}; err != nil || !slices.Equal(list, want) {
		t.Errorf("Grants = %q, %v", list, err)
	}
	// The workspaces are listed as before, and the file has both.
	if dirs, err := s.List(); err != nil || !slices.Equal(dirs, []string{realPath(t, other)}) {
		t.Errorf("List = %q, %v", dirs, err)
	}
	data, _ := os.ReadFile(s.Path())
	var f struct {
		Workspaces []string
		Grants     map[string][]string
	}
	if err := json.Unmarshal(data, &f); err != nil || len(f.Workspaces) != 1 || len(f.Grants[realPath(t, ws)]) != 3 {
		t.Errorf("trust.json: %s", data)
	}

	rec, removed, err := s.RevokeGrant(ws, "hook:lint")
	if err != nil || rec != realPath(t, ws) || !slices.Equal(removed, []string{"hook:lint", "hook:lint:resource:TOKEN"}) {
		t.Errorf("RevokeGrant: %s %q %v", rec, removed, err)
	}
	if _, removed, _ := s.RevokeGrant(ws, "hook:fmt"); len(removed) != 1 {
		t.Errorf("revoking hook:fmt removes its port grant: %q", removed)
	}
	if all, err := s.AllGrants(); err != nil || len(all) != 0 {
		t.Errorf("AllGrants after revoking everything: %v, %v", all, err)
	}
	if _, removed, err := s.RevokeGrant(ws, "hook:lint"); err != nil || removed != nil {
		t.Errorf("revoked twice: %q %v", removed, err)
	}
	// A resource grant is revoked alone.
	s.Grant(ws, "hook:a")
	s.Grant(ws, "hook:a:resource:K")
	if _, removed, _ := s.RevokeGrant(ws, "hook:a:resource:K"); !slices.Equal(removed, []string{"hook:a:resource:K"}) || !s.Granted(ws, "hook:a") {
		t.Errorf("revoking a resource: %q", removed)
	}
	// Revoking the workspace's trust leaves its grants alone.
	s.Trust(ws)
	s.Revoke(ws)
	if !s.Granted(ws, "hook:a") {
		t.Error("Revoke dropped the grants")
	}
}

func realPath(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
