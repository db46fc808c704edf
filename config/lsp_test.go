package config_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/config"
)

// TestPluginLanguageServers reads two Claude Code plugins others wrote
// (testdata/claude-code-lsps: their manifests name ./.lsp.json) as orca
// reads an installed plugin's language servers.
func TestPluginLanguageServers(t *testing.T) {
	ws := t.TempDir()
	gopls, _ := filepath.Abs("testdata/claude-code-lsps/gopls")
	pyright, _ := filepath.Abs("testdata/claude-code-lsps/pyright")
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", PluginDirs: []string{gopls, pyright}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if len(s.LSPServers) != 2 {
		t.Fatalf("servers: %+v", s.LSPServers)
	}
	g, p := s.LSPServers[0], s.LSPServers[1]
	if g.Name != "go" || g.Command != "gopls" || len(g.Args) != 0 || g.ExtensionToLanguage[".go"] != "go" || g.Env["CLAUDE_PLUGIN_ROOT"] != gopls {
		t.Errorf("gopls: %+v", g)
	}
	if p.Name != "python" || p.Command != "pyright-langserver" || !slices.Equal(p.Args, []string{"--stdio"}) ||
		p.ExtensionToLanguage[".py"] != "python" || p.ExtensionToLanguage[".pyi"] != "python" {
		t.Errorf("pyright: %+v", p)
	}
}

// TestLSPServersSettings: the settings' lspServers as Claude Code's
// entries, false to turn one off, bad entries named; a project's wait for
// trust, but its false does not.
func TestLSPServersSettings(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	writeFile(t, cfgDir, "orca/settings.json", `{"lspServers": {
		"rust-analyzer": false,
		"ts": {"command": "vtsls", "args": ["--stdio"], "extensionToLanguage": {".ts": "typescript"}, "env": {"A": "b"},
			"initializationOptions": {"x": 1}, "settings": {"typescript": {"tsdk": "/x"}}, "startupTimeout": 5000, "maxRestarts": 2}
	}}`)
	writeFile(t, ws, ".orca/settings.json", `{"lspServers": {"evil": {"command": "./evil.sh", "extensionToLanguage": {".go": "go"}}, "gopls": false}}`)
	s, warns, err := config.Load(config.LoadOptions{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "1 language server not applied") {
		t.Errorf("warnings: %v", warns)
	}
	names := map[string]config.LSPServer{}
	for _, l := range s.LSPServers {
		names[l.Name] = l
	}
	if len(names) != 3 || !names["rust-analyzer"].Off || !names["gopls"].Off || !names["gopls"].Project {
		t.Errorf("servers: %+v", s.LSPServers)
	}
	ts := names["ts"]
	if ts.Command != "vtsls" || ts.StartupTimeout != 5*time.Second || ts.MaxRestarts != 2 || ts.Env["A"] != "b" ||
		string(ts.InitializationOptions) != `{"x": 1}` || !strings.Contains(string(ts.Settings), `"tsdk": "/x"`) {
		t.Errorf("ts: %+v", ts)
	}

	for _, c := range []struct{ body, want string }{
		{`{"lspServers": []}`, "lspServers: want an object of language servers by name, got a list"},
		{`{"lspServers": {"x": {"extensionToLanguage": {".x": "x"}}}}`, "lspServers.x.command: missing"},
		{`{"lspServers": {"x": {"command": "x"}}}`, "lspServers.x.extensionToLanguage: missing"},
		{`{"lspServers": {"x": {"command": "x", "extensionToLanguage": {".x": "x"}, "transport": "socket"}}}`, `lspServers.x.transport: "socket": orca speaks to language servers over stdio only`},
		{`{"lspServers": {"x": {"command": "x", "extensionToLanguage": {".x": "x"}, "startupTimeout": -1}}}`, "lspServers.x.startupTimeout: want a positive number of milliseconds"},
		{`{"lspServers": {"x": true}}`, "lspServers.x: want an object (command, args, extensionToLanguage …) or false"},
	} {
		_, err := config.ParseFile("/u/orca/settings.json", []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), "/u/orca/settings.json: "+c.want) {
			t.Errorf("%s: %v\nwant %s", c.body, err, c.want)
		}
	}
}
