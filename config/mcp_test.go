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
	digests := map[string]string{}
	for i := range s.MCPServers {
		s.MCPServers[i].File = ""
		digests[s.MCPServers[i].Name], s.MCPServers[i].Digest = s.MCPServers[i].Digest, ""
	}
	// The digest is of the entry as written: the same reformatted, not
	// the same with another argument.
	writeFile(t, cfgDir, "orca/settings.json", `{"mcpServers": {"files": {"timeout": 30, "env": {"LEVEL": "${LEVEL:-info}"},
		"args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT:-.}"], "command": "npx"},
		"docs": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X": "y"}}}}`)
	again, _, err := config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil || len(again.MCPServers) != 2 {
		t.Fatal(err)
	}
	if d := again.MCPServers[1].Digest; d != digests["files"] || !strings.HasPrefix(d, "sha256:") || len(d) != 71 {
		t.Errorf("files reformatted: digest %s, was %s", d, digests["files"])
	}
	if d := again.MCPServers[0].Digest; d == digests["docs"] {
		t.Errorf("docs with another header: the same digest %s", d)
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

// The servers `claude mcp add` keeps in Claude Code's state file
// (~/.claude.json) start as Claude Code starts them: the user scope's in
// every workspace, the local scope's in theirs only, over a .mcp.json
// server of the same name; the project entry's answers about .mcp.json
// servers approve them. The file's other keys are Claude Code's business;
// a file orca cannot use is a warning, not a refusal.
func TestMCPServersOfClaudeState(t *testing.T) {
	home, cfgDir, ws, other := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	claudeDir := home + "/.claude"
	writeFile(t, home, ".claude/settings.json", `{}`)
	writeFile(t, ws, ".mcp.json", `{"mcpServers": {"files": {"command": "files-mcp"}, "shell": {"command": "shell-mcp"}, "notes": {"command": "project-notes"}}}`)
	state := `{
	  "numStartups": 12, "installMethod": "npm", "autoUpdates": true, "userID": "x",
	  "mcpServers": {"docs": {"type": "http", "url": "https://docs.example.com/mcp"}},
	  "projects": {
	    "` + ws + `": {
	      "allowedTools": [], "history": [{"display": "fix the test"}], "hasTrustDialogAccepted": true,
	      "mcpServers": {"notes": {"type": "stdio", "command": "my-notes", "args": ["--private"], "env": {}}},
	      "enabledMcpjsonServers": ["files"], "disabledMcpjsonServers": ["shell"]
	    },
	    "` + other + `": {"mcpServers": {"elsewhere": {"command": "x"}}}
	  }
	}`
	writeFile(t, home, ".claude.json", state)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claudeDir, TrustOverride: true})
	if err != nil || len(warns) != 0 {
		t.Fatalf("%v, %v", err, warns)
	}
	var got []string
	for _, m := range s.MCPServers {
		got = append(got, m.Name+"="+m.Command+m.URL)
	}
	if want := "docs=https://docs.example.com/mcp files=files-mcp notes=my-notes"; strings.Join(got, " ") != want {
		t.Errorf("servers %q, want %q", got, want)
	}
	// Untrusted: .mcp.json starts nothing; the user's own servers start.
	s, _, err = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claudeDir})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, m := range s.MCPServers {
		got = append(got, m.Name)
	}
	if strings.Join(got, " ") != "docs notes" {
		t.Errorf("untrusted: servers %q, want the user's docs and notes", got)
	}
	// $CLAUDE_CONFIG_DIR's state file is inside it.
	writeFile(t, claudeDir, ".claude.json", `{"mcpServers": {"inside": {"command": "x"}}}`)
	s, _, _ = config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: claudeDir})
	if len(s.MCPServers) != 1 || s.MCPServers[0].Name != "inside" {
		t.Errorf("the state file in Claude Code's folder: %+v", s.MCPServers)
	}
	for _, bad := range []string{`{"mcpServers": [1]`, `{"mcpServers": {"x": {"command": "${NOT_SET_HERE}"}}}`} {
		writeFile(t, claudeDir, ".claude.json", bad)
		s, warns, err := config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: claudeDir})
		if err != nil || len(warns) != 1 || !strings.Contains(warns[0].File, ".claude.json") || !strings.Contains(warns[0].Message, "not used") || strings.Contains(warns[0].Message, warns[0].File) || len(s.MCPServers) != 0 {
			t.Errorf("%s: %v, %+v, %+v", bad, err, warns, s.MCPServers)
		}
	}
	// NoClaude reads none of it.
	s, _, _ = config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claudeDir, NoClaude: true, TrustOverride: true})
	if len(s.MCPServers) != 0 {
		t.Errorf("NoClaude: %+v", s.MCPServers)
	}
}

// An http server's "oauth": Claude Code's keys (scopes as it writes them,
// one string) and orca's, ${VAR}s expanded; what cannot be used is an
// error naming the key.
func TestMCPServersOAuth(t *testing.T) {
	t.Setenv("LINEAR_SECRET", "s3cret")
	cfgDir := t.TempDir()
	writeFile(t, cfgDir, "orca/settings.json", `{"mcpServers": {
		"linear": {"type": "http", "url": "https://mcp.linear.app/mcp", "oauth": {"clientId": "orca-cli", "clientSecret": "${LINEAR_SECRET}",
			"callbackPort": 8080, "scopes": "read write", "authServerMetadataUrl": "https://auth.example.com/meta"}},
		"robot": {"type": "http", "url": "https://mcp.example.com/mcp", "oauth": {"grant": "client_credentials", "clientId": "bot",
			"privateKeyFile": "/keys/bot.pem", "scopes": ["tools"]}}
	}}`)
	s, _, err := config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]config.MCPOAuth{
		"linear": {ClientID: "orca-cli", ClientSecret: "s3cret", CallbackPort: 8080, Scopes: []string{"read", "write"}, AuthServerMetadataURL: "https://auth.example.com/meta"},
		"robot":  {ClientID: "bot", ClientCredentials: true, PrivateKeyFile: "/keys/bot.pem", Scopes: []string{"tools"}},
	}
	for _, m := range s.MCPServers {
		if m.OAuth == nil || !reflect.DeepEqual(*m.OAuth, want[m.Name]) {
			t.Errorf("%s: %+v, want %+v", m.Name, m.OAuth, want[m.Name])
		}
	}
	for _, tc := range []struct{ oauth, want string }{
		{`{"client_id": "x"}`, `mcpServers["x"].oauth: want an object of clientId`},
		{`{"callbackPort": 70000}`, `callbackPort: 70000 is not a port`},
		{`{"callbackPort": 80.5}`, `callbackPort: 80.5 is not a port`},
		{`{"scopes": ""}`, `scopes: empty`},
		{`{"scopes": 5}`, `scopes: want a string of scopes`},
		{`{"clientMetadataUrl": "http://x/doc.json"}`, `clientMetadataUrl: "http://x/doc.json" is not an https URL`},
		{`{"grant": "password"}`, `grant: "password" is not authorization_code or client_credentials`},
		{`{"grant": "client_credentials", "clientId": "a"}`, `needs clientSecret or privateKeyFile`},
		{`{"privateKeyFile": "/k.pem"}`, `privateKeyFile is for grant client_credentials`},
		{`{"clientSecret": "${NOPE_NOT_SET}"}`, `oauth.clientSecret: the variable NOPE_NOT_SET is not set`},
	} {
		body := `{"mcpServers": {"x": {"type": "http", "url": "https://x/mcp", "oauth": ` + tc.oauth + `}}}`
		writeFile(t, cfgDir, "orca/settings.json", body)
		if _, _, err := config.Load(config.LoadOptions{ConfigDir: cfgDir, ClaudeDir: "-"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.oauth, err, tc.want)
		}
	}
}
