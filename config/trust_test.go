package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/config"
)

func TestTrustStore(t *testing.T) {
	cfgDir := t.TempDir()
	base := t.TempDir()
	ws := filepath.Join(base, "repo")
	other := filepath.Join(base, "other")
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.MkdirAll(other, 0o755)
	link := filepath.Join(base, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	s := config.NewTrustStore(cfgDir)
	if s.Path() != filepath.Join(cfgDir, "orca", "trust.json") {
		t.Errorf("path %s", s.Path())
	}
	if s.Trusted(ws) {
		t.Fatal("trusted before Trust")
	}

	// Trusted through a symlink and a relative path: the store keeps the
	// real, absolute path.
	rec, err := s.Trust(link)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)
	if rec != real {
		t.Errorf("recorded %s, want %s", rec, real)
	}
	t.Chdir(base)
	for _, d := range []string{ws, link, "repo", "./repo/", "link/sub/.."} {
		if !s.Trusted(d) {
			t.Errorf("%s is not trusted", d)
		}
	}
	for _, d := range []string{other, filepath.Join(ws, "sub"), base, filepath.Join(base, "missing")} {
		if s.Trusted(d) {
			t.Errorf("%s is trusted", d)
		}
	}
	if _, err := s.Trust(ws); err != nil { // again: no duplicate
		t.Fatal(err)
	}
	if _, err := s.Trust(other); err != nil {
		t.Fatal(err)
	}
	realOther, _ := filepath.EvalSymlinks(other)
	list, err := s.List()
	if want := []string{realOther, real}; err != nil || !slices.Equal(list, want) {
		t.Errorf("List = %q, %v; want %q", list, err, want)
	}

	// The file is what the docs say, and private.
	data, _ := os.ReadFile(s.Path())
	var f struct{ Workspaces []string }
	if err := json.Unmarshal(data, &f); err != nil || len(f.Workspaces) != 2 {
		t.Errorf("trust.json: %s, %v", data, err)
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("trust.json mode %v", fi.Mode().Perm())
	}

	rec, removed, err := s.Revoke("link")
	if err != nil || !removed || rec != real || s.Trusted(ws) || !s.Trusted(other) {
		t.Errorf("Revoke: %s %v %v; trusted %v %v", rec, removed, err, s.Trusted(ws), s.Trusted(other))
	}
	if _, removed, _ := s.Revoke(ws); removed {
		t.Error("revoked twice")
	}
	// A folder that is gone is revoked by its recorded path.
	os.RemoveAll(other)
	if _, removed, err := s.Revoke(realOther); err != nil || !removed {
		t.Errorf("Revoke of a removed folder: %v %v", removed, err)
	}
	if _, err := s.Trust(filepath.Join(base, "missing")); err == nil {
		t.Error("trusted a folder that does not exist")
	}
}

func TestTrustStoreCorrupt(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	s := config.NewTrustStore(cfgDir)
	writeFile(t, cfgDir, "orca/trust.json", `{"workspaces": [`+"\n"+`"`+ws+`",]}`)
	if s.Trusted(ws) {
		t.Error("a corrupt store trusts")
	}
	if _, err := s.Trust(ws); err == nil || !strings.Contains(err.Error(), s.Path()) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Trust over a corrupt store: %v", err)
	}
	if _, err := s.List(); err == nil {
		t.Error("List of a corrupt store")
	}
}

// Concurrent writers do not lose each other's entries.
func TestTrustStoreConcurrent(t *testing.T) {
	cfgDir := t.TempDir()
	var dirs []string
	for range 8 {
		dirs = append(dirs, t.TempDir())
	}
	var wg sync.WaitGroup
	for _, d := range dirs {
		wg.Go(func() {
			if _, err := config.NewTrustStore(cfgDir).Trust(d); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	list, err := config.NewTrustStore(cfgDir).List()
	if err != nil || len(list) != len(dirs) {
		t.Errorf("List = %q, %v", list, err)
	}
}

func TestUserConfigDir(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if d, err := config.Dir(); err != nil || d != "/xdg" {
		t.Errorf("with XDG_CONFIG_HOME: %s, %v", d, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative") // ignored, as the spec says
	t.Setenv("HOME", "/home/u")
	if d, err := config.Dir(); err != nil || d != "/home/u/.config" {
		t.Errorf("without: %s, %v", d, err)
	}
}
