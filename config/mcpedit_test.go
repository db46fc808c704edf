package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/config"
)

// Editing a file's MCP servers keeps its other keys, reads a missing file
// as empty and one saved with a byte order mark as without it, and writes
// what the settings then read.
func TestMCPServersFileEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".orca", "settings.local.json")
	f, err := config.ReadMCPServersFile(path)
	if err != nil || len(f.Servers) != 0 {
		t.Fatalf("a missing file: %+v, %v", f, err)
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("\uFEFF"+`{"permissions": {"allow": ["Read"]}, "mcpServers": {"old": {"command": "cat"}}}`), 0o644)
	if f, err = config.ReadMCPServersFile(path); err != nil || len(f.Servers) != 1 {
		t.Fatalf("%+v, %v", f, err)
	}
	raw, err := config.MCPEntry{Command: "npx", Args: []string{"-y", "server"}, Env: map[string]string{"LEVEL": "${LEVEL:-info}"}}.JSON()
	if err != nil {
		t.Fatal(err)
	}
	f.Servers["files"] = raw
	delete(f.Servers, "old")
	os.Chmod(path, 0o600) // a file kept private stays so
	if err := f.Write(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file written: %v, %v; want mode 0600 kept", fi.Mode(), err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".orca", ".*")); len(tmps) > 0 {
		t.Errorf("temporary files left: %q", tmps)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"allow": [`) || strings.Contains(string(b), `"old"`) || !strings.Contains(string(b), `"LEVEL": "${LEVEL:-info}"`) {
		t.Errorf("the file written:\n%s", b)
	}
	s, _, err := config.Load(config.LoadOptions{Workspace: dir, ConfigDir: "-", TrustOverride: true, NoClaude: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range s.MCPServers {
		names = append(names, m.Name)
	}
	if len(names) != 1 || names[0] != "files" {
		t.Errorf("the settings read the servers %q", names)
	}

	for _, bad := range []string{`[1]`, `{"mcpServers": [1]}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := config.ReadMCPServersFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", bad, err)
		}
	}
}

func TestMCPEntryChecks(t *testing.T) {
	for _, tc := range []struct {
		e    config.MCPEntry
		want string // in the error; "" for none
	}{
		{config.MCPEntry{Command: "cat"}, ""},
		{config.MCPEntry{Transport: "http", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${T}"}}, ""},
		{config.MCPEntry{Transport: "sse", URL: "${DOCS_URL}"}, ""},
		{config.MCPEntry{Command: " "}, "the command is empty"},
		{config.MCPEntry{Command: "cat", Headers: map[string]string{"a": "b"}}, "headers are for http and sse servers"},
		{config.MCPEntry{Transport: "http", URL: "ftp://x"}, `"ftp://x" is not an http or https URL`},
		{config.MCPEntry{Transport: "http", Command: "cat", URL: "http://x"}, "not a command"},
		{config.MCPEntry{Transport: "ws", URL: "http://x"}, `transport "ws" is not stdio, http or sse`},
		{config.MCPEntry{Command: "cat", Timeout: -1}, "negative"},
	} {
		_, err := tc.e.JSON()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.e, err, tc.want)
		}
	}
}

// A settings file that is a symbolic link (kept in a dotfiles repository)
// is edited where it leads, and stays a link.
func TestMCPServersFileThroughALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "settings.json")
	link := filepath.Join(dir, "orca", "settings.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.WriteFile(target, []byte(`{"permissions": {"allow": ["Read"]}}`), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f, err := config.ReadMCPServersFile(link)
	if err != nil {
		t.Fatal(err)
	}
	f.Servers["files"] = []byte(`{"command": "cat"}`)
	if err := f.Write(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer one: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), `"files"`) || !strings.Contains(string(b), `"allow"`) {
		t.Errorf("the file the link leads to:\n%s", b)
	}
}
