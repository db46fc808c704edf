package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// orca mcp add, get and remove edit the scopes' files in Claude Code's
// format, keep what else the files hold, and refuse what they could not
// read back.
func TestMCPAddGetRemove(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	writeFileAt(t, ws, ".orca/settings.local.json", `{"permissions": {"allow": ["Read"]}}`)

	out, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", ws, "-e", "LEVEL=${LEVEL:-info}", "files", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", ".")
	if code != 0 || !strings.Contains(out, "Added MCP server files") {
		t.Fatalf("add: exit %d\n%s%s", code, out, stderr)
	}
	// The local scope is the user's, outside the workspace: its servers
	// start trusted or not, and add says so.
	localFile := filepath.Join(o.configDir, "orca", "local.json")
	if !strings.Contains(out, localFile) || !strings.Contains(out, "It is yours: it starts in this workspace's runs, trusted or not") {
		t.Errorf("add in an untrusted workspace says:\n%s", out)
	}
	if out, _, _ := orcaWith(t, t.Context(), o, "", "mcp", "add", "--scope", "user", "mine", "--", "cat"); strings.Contains(out, "trusted") {
		t.Errorf("add to the user's scope speaks of trust:\n%s", out)
	}
	var local struct {
		Projects map[string]struct {
			MCPServers map[string]struct {
				Command string
				Args    []string
				Env     map[string]string
			} `json:"mcpServers"`
		}
	}
	data, _ := os.ReadFile(localFile)
	if err := json.Unmarshal(data, &local); err != nil {
		t.Fatal(err)
	}
	f := local.Projects[ws].MCPServers["files"]
	if f.Command != "npx" || strings.Join(f.Args, " ") != "-y @modelcontextprotocol/server-filesystem ." || f.Env["LEVEL"] != "${LEVEL:-info}" {
		t.Errorf("%s:\n%s", localFile, data)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, ".orca", "settings.local.json")); string(data) != `{"permissions": {"allow": ["Read"]}}` {
		t.Errorf("the workspace's settings.local.json changed:\n%s", data)
	}

	out, _, code = orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", ws, "--scope", "project", "--transport", "http", "-H", "Authorization: Bearer ${TOKEN}", "docs", "https://mcp.example.com/mcp")
	if code != 0 || !strings.Contains(out, "enabledMcpjsonServers") {
		t.Fatalf("add project: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, ".mcp.json")); !strings.Contains(string(data), `"url": "https://mcp.example.com/mcp"`) || !strings.Contains(string(data), `"Authorization": "Bearer ${TOKEN}"`) {
		t.Errorf(".mcp.json:\n%s", data)
	}

	out, _, code = orcaWith(t, t.Context(), o, "", "mcp", "get", "-w", ws, "docs")
	if code != 0 || !strings.Contains(out, "docs (project scope") || !strings.Contains(out, `"type": "http"`) {
		t.Errorf("get: exit %d\n%s", code, out)
	}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", ws, "--transport", "http", "bad", "ftp://x"); code != 2 || !strings.Contains(stderr, "not an http or https URL") {
		t.Errorf("a bad URL: exit %d\n%s", code, stderr)
	}
	if out, _, code := orcaWith(t, t.Context(), o, "", "mcp", "get", "-w", ws, "files"); code != 0 || !strings.Contains(out, "files (local scope, "+localFile+")") {
		t.Errorf("get files: exit %d\n%s", code, out)
	}
	// A name orca could not read back is refused, and the file kept.
	before, _ := os.ReadFile(localFile)
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", ws, "my server", "--", "cat"); code != 2 || !strings.Contains(stderr, "a server's name is letters") {
		t.Errorf("a bad name: exit %d\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(localFile); string(after) != string(before) {
		t.Errorf("a refused add changed the file:\n%s", after)
	}
	out, _, code = orcaWith(t, t.Context(), o, "", "mcp", "remove", "-w", ws, "files")
	if code != 0 || !strings.Contains(out, "Removed MCP server files") {
		t.Errorf("remove: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(localFile); strings.Contains(string(data), "npx") || strings.Contains(string(data), ws) {
		t.Errorf("after remove:\n%s", data)
	}
	if _, _, code := orcaWith(t, t.Context(), o, "", "mcp", "remove", "-w", ws, "files"); code != 2 {
		t.Errorf("removing it again: exit %d", code)
	}
	// A workspace that does not exist is refused, and no folder is made.
	missing := filepath.Join(t.TempDir(), "no", "such")
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", missing, "x", "--", "cat"); code != 2 || !strings.Contains(stderr, missing) {
		t.Errorf("add in a missing workspace: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("add made folders for a missing workspace: %v", err)
	}
}

// The servers the user adds — local scope, kept outside the workspace,
// and user scope — start in a workspace that is not trusted, and run as
// the user, outside the OS sandbox (npx can fetch its package, as in
// Claude Code); a repository's own .orca/settings.local.json gains
// nothing.
func TestYourMCPServersStartAsYou(t *testing.T) {
	requireSandbox(t)
	home, cfgDir := attackHome(t)
	ws := t.TempDir()
	marker := filepath.Join(home, "local-ran")
	o := options{configDir: cfgDir}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", ws, "helper", "--", "sh", "-c", "touch "+marker+"; exec cat"); code != 0 {
		t.Fatalf("add: %s", stderr)
	}
	// Planted in the repository, a project file: it waits for trust.
	writeFileAt(t, ws, ".orca/settings.local.json", `{"mcpServers": {"planted": {"command": "sh", "args": ["-c", "touch `+filepath.Join(home, "planted-ran")+`; exec cat"]}}}`)
	stdout, stderr, _ := orcaWith(t, t.Context(), o, "", "mcp", "list", "-w", ws)
	if !fileExists(marker) {
		t.Errorf("the local scope's server did not start as you (outside the sandbox), untrusted:\n%s%s", stdout, stderr)
	}
	if fileExists(filepath.Join(home, "planted-ran")) || strings.Contains(stdout, "planted") {
		t.Errorf("the repository's own server started untrusted:\n%s%s", stdout, stderr)
	}
}

// A server that does not start is a warning on stderr written as orca
// writes its own, not a log record with a time and a level, and the turn
// runs without it.
func TestMCPServerNotStartedWarning(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"broken": {"command": "sh", "args": ["-c", "echo gone >&2; exit 4"]}}}`)
	sc := writeScript(t, `{"text": "ok"}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "go")
	if code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var warned string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "MCP server not started") {
			warned = l
		}
	}
	if !strings.HasPrefix(warned, "orca: warning: MCP server not started: server=broken err=") || !strings.Contains(warned, "gone") || strings.Contains(stderr, "level=") {
		t.Errorf("stderr:\n%s", stderr)
	}
	// orca mcp list says it once: in the list, with the same reason.
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "mcp", "list", "-w", ws)
	if code != exitTurn || !strings.Contains(stdout, "✗ broken (stdio): failed:") || !strings.Contains(stdout, "gone") || strings.Contains(stderr, "MCP server not started") {
		t.Errorf("mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
}

// Files a Windows editor saved with a UTF-8 byte order mark are read as
// Claude Code reads them: a workspace whose settings file has one runs,
// orca mcp add keeps the servers of a .mcp.json that has one, and so do a
// script and an output schema.
func TestFilesWithByteOrderMark(t *testing.T) {
	t.Parallel()
	const bom = "\uFEFF"
	ws := t.TempDir()
	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, ws, ".claude/settings.json", bom+`{"permissions": {"deny": ["Bash(rm:*)"]}}`)
	writeFileAt(t, ws, ".mcp.json", bom+`{"mcpServers": {"old": {"command": "old-mcp"}}}`)
	script := writeFileAt(t, t.TempDir(), "replies.json", bom+`[{"output": {"n": 3}}]`)
	schema := writeFileAt(t, t.TempDir(), "schema.json", bom+`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`)
	out, stderr, code := orcaWith(t, t.Context(), o, "", "run", "-w", ws, "--script", script, "--output-schema", schema, "count")
	if code != 0 || !strings.Contains(out, `"n": 3`) {
		t.Fatalf("run: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "add", "-w", ws, "--scope", "project", "new", "--", "new-mcp"); code != 0 {
		t.Fatalf("mcp add: exit %d\n%s%s", code, out, stderr)
	}
	var top struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	data, _ := os.ReadFile(filepath.Join(ws, ".mcp.json"))
	if err := json.Unmarshal(data, &top); err != nil || top.MCPServers["old"] == nil || top.MCPServers["new"] == nil {
		t.Errorf(".mcp.json after add (%v):\n%s", err, data)
	}
}

// A project's server runs in the OS sandbox: when it fails for what the
// sandbox withholds (the network, here), the failure says so and names
// the fix, with the server's stderr.
func TestSandboxedServerFailureSaysWhy(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	writeFileAt(t, ws, ".mcp.json", `{"mcpServers": {"fetcher": {"command": "sh", "args": ["-c", "echo 'npm error code ENOTFOUND registry.npmjs.org' >&2; exit 1"]}}}`)
	writeFileAt(t, o.configDir, "orca/settings.json", `{"enableAllProjectMcpServers": true}`)
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "trust", ws); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "mcp", "list", "-w", ws)
	for _, want := range []string{"✗ fetcher (stdio): failed:", "its stderr ends: npm error code ENOTFOUND", "it could not reach the network, which the OS sandbox does not give it",
		`sandbox.network.allowedDomains ["*"]`, "sandbox.excludedCommands", "orca mcp add --scope local or user"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("mcp list lacks %q: exit %d\n%s%s", want, code, stdout, stderr)
		}
	}
}
