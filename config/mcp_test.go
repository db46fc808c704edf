package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/config"
)

// MCP servers in Claude Code's format: stdio and http, ${VAR} and
// ${VAR:-default} expanded; mistakes name the server and the key.
func TestMCPServersParse(t *testing.T) {
	t.Setenv("DOCS_TOKEN", "tok")
	cfgDir := t.TempDir()
	writeFile(t, cfgDir, "orca/settings.json", `{"mcpServers": {
		"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT:-.}"], "env": {"LEVEL": "${LEVEL:-info}"}, "timeout": 30},
		"docs": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
	}}`)
	s, warns, err := config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil || len(warns) != 0 {
		t.Fatalf("%v, %v", err, warns)
	}
	want := []config.MCPServer{
		{Name: "docs", Type: "http", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer tok"}},
		{Name: "files", Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}, Env: map[string]string{"LEVEL": "info"}, Timeout: 30 * time.Second},
	}
	for i := range s.MCPServers {
		s.MCPServers[i].File = ""
	}
	if !reflect.DeepEqual(s.MCPServers, want) {
		t.Errorf("servers\n%+v\nwant\n%+v", s.MCPServers, want)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"mcpServers": {"x": {"args": []}}}`, `mcpServers["x"]: no command`},
		{`{"mcpServers": {"x": {"type": "http", "url": "ftp://x"}}}`, `mcpServers["x"].url: "ftp://x" is not an http or https URL`},
		{`{"mcpServers": {"x": {"type": "ws", "url": "ws://x"}}}`, `mcpServers["x"].type: "ws" is not stdio, http or sse`},
		{`{"mcpServers": {"x": {"command": "${NOPE_NOT_SET}"}}}`, `mcpServers["x"].command: the variable NOPE_NOT_SET is not set`},
		{`{"mcpServers": {"a b": {"command": "x"}}}`, `mcpServers["a b"]: a server's name is letters`},
	} {
		writeFile(t, cfgDir, "orca/settings.json", tc.json)
		if _, _, err := config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: "-"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.json, err, tc.want)
		}
	}
}

// A workspace's .mcp.json starts nothing in an untrusted workspace, and in
// a trusted one only the servers a settings file approves.
func TestMCPFileNeedsTrustAndApproval(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	writeFile(t, ws, ".mcp.json", `{"mcpServers": {"files": {"command": "files-mcp"}, "shell": {"command": "shell-mcp"}}}`)
	load := func() (*config.Settings, string) {
		t.Helper()
		s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		var text []string
		for _, w := range warns {
			text = append(text, w.Message)
		}
		return s, strings.Join(text, "\n")
	}
	names := func(s *config.Settings) (out []string) {
		for _, m := range s.MCPServers {
			out = append(out, m.Name)
		}
		return out
	}
	s, text := load()
	if len(s.MCPServers) != 0 || !strings.Contains(text, "2 MCP servers not started: the workspace is not trusted") {
		t.Fatalf("untrusted: %v; %s", names(s), text)
	}
	config.NewTrustStore(cfgDir).Trust(ws)
	s, text = load()
	if len(s.MCPServers) != 0 || !strings.Contains(text, `MCP servers files, shell not started: approve them`) {
		t.Fatalf("trusted, not approved: %v; %s", names(s), text)
	}
	writeFile(t, ws, ".claude/settings.local.json", `{"enabledMcpjsonServers": ["files"]}`)
	s, text = load()
	if !reflect.DeepEqual(names(s), []string{"files"}) || !s.MCPServers[0].Project || !strings.Contains(text, "shell not started") {
		t.Fatalf("files approved: %v; %s", names(s), text)
	}
	writeFile(t, ws, ".claude/settings.local.json", `{"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["shell"]}`)
	if s, _ = load(); !reflect.DeepEqual(names(s), []string{"files"}) {
		t.Fatalf("all but shell: %v", names(s))
	}
	if s, _, _ := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", NoClaude: true}); len(s.MCPServers) != 0 {
		t.Errorf("NoClaude read .mcp.json: %v", names(s))
	}
}
