package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/media"
)

// mcpServersEnv names the folder where .ci/run installs the reference MCP
// servers from npm (@modelcontextprotocol/server-filesystem and
// server-everything, pinned): node_modules/@modelcontextprotocol/….
const mcpServersEnv = "ORCA_MCP_SERVERS"

// referenceServer returns the entry point of the reference MCP server
// name, skipping the test without them.
func referenceServer(t *testing.T, name string) string {
	t.Helper()
	root := os.Getenv(mcpServersEnv)
	if root == "" {
		t.Skipf("%s is not set: it names the folder of the reference MCP servers (npm install --prefix DIR @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything); .ci/run installs them and sets it", mcpServersEnv)
	}
	needPrograms(t, "node")
	p := filepath.Join(root, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// A user's .mcp.json from Claude Code works unchanged in a trusted
// workspace: the reference filesystem server starts (in the OS sandbox,
// as Bash does), its tools are offered as mcp__files__*, the model's call
// writes the file on disk and the next request carries the server's
// answer; orca mcp list says it is up. In an untrusted workspace nothing
// starts, and orca says so.
func TestRunMCPFilesystemServer(t *testing.T) {
	server := referenceServer(t, "server-filesystem")
	ws := t.TempDir()
	real, _ := filepath.EvalSymlinks(ws)
	writeFileAt(t, ws, ".mcp.json", `{"mcpServers": {"files": {"command": "node", "args": ["`+server+`", "`+real+`"]}}}`)
	writeFileAt(t, ws, ".claude/settings.local.json", `{"enableAllProjectMcpServers": true}`)
	target := filepath.Join(real, "hello.txt")
	sc := writeScript(t, `{"tool_calls": [{"id": "m1", "name": "mcp__files__write_file", "input": {"path": "`+target+`", "content": "written by the MCP server"}}]}`,
		`{"tool_calls": [{"id": "m2", "name": "mcp__files__read_text_file", "input": {"path": "`+target+`"}}]}`, `{"text": "done"}`)
	o := options{configDir: t.TempDir()}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if code != 0 || fileExists(target) {
		t.Fatalf("untrusted: exit %d, %s exists: %v\n%s", code, target, fileExists(target), stderr)
	}
	if !strings.Contains(stderr, "MCP server not started: the workspace is not trusted") || !strings.Contains(stdout, "unknown tool") {
		t.Errorf("untrusted: stderr does not say so:\n%s", stderr)
	}

	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--trust", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("trusted: exit %d\n%s", code, stderr)
	}
	if data, _ := os.ReadFile(target); string(data) != "written by the MCP server" {
		t.Fatalf("hello.txt = %q\n%s", data, stdout)
	}
	if ev := toolEventOf(t, parseEvents(t, stdout), "m2"); ev["is_error"] != false || !strings.Contains(ev.str("output"), "written by the MCP server") {
		t.Errorf("read_text_file: %v", ev)
	}

	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "mcp", "list", "-w", ws, "--trust")
	if code != 0 || !strings.Contains(stdout, "✓ files (stdio") || !strings.Contains(stdout, "mcp__files__write_file") {
		t.Errorf("mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
}

// The reference "everything" server: structured content reaches the
// model as JSON, its annotations make its read-only tools run unasked in
// default mode, and a server that fails is listed as failed.
func TestRunMCPEverythingServer(t *testing.T) {
	server := referenceServer(t, "server-everything")
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {
		"everything": {"command": "node", "args": ["`+server+`", "stdio"]},
		"broken": {"command": "node", "args": ["-e", "process.exit(4)"]}}}`)
	sc := writeScript(t, `{"tool_calls": [{"id": "e1", "name": "mcp__everything__get-structured-content", "input": {"location": "Chicago"}}]}`, `{"text": "done"}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ev := toolEventOf(t, parseEvents(t, stdout), "e1")
	if ev["is_error"] != false || !strings.Contains(ev.str("output"), "temperature") {
		t.Errorf("get-structured-content (read-only: no ask in default mode): %v", ev)
	}
	stdout, _, code = orcaWith(t, t.Context(), o, "", "mcp", "list", "-w", ws, "--json")
	if code != 1 || !strings.Contains(stdout, `"name": "broken"`) || !strings.Contains(stdout, `"state": "failed"`) || !strings.Contains(stdout, `"state": "up"`) {
		t.Errorf("mcp list --json: exit %d\n%s", code, stdout)
	}
}

// The reference "everything" server's resources and prompts: its prompt
// is a command ("/mcp__everything__args-prompt Paris France" reaches the
// model as the prompt's text, the arguments given in order), and the
// model lists and reads its resources through ListMcpResourcesTool and
// ReadMcpResourceTool (read-only: unasked in default mode), the next
// request carrying what the server answered. A prompt missing its
// required argument fails the turn, naming it, and sends the model
// nothing.
func TestRunMCPEverythingResourcesAndPrompts(t *testing.T) {
	server := referenceServer(t, "server-everything")
	ws := t.TempDir()
	writeFileAt(t, ws, ".mcp.json", `{"mcpServers": {"everything": {"command": "node", "args": ["`+server+`", "stdio"]}}}`)
	writeFileAt(t, ws, ".claude/settings.local.json", `{"enableAllProjectMcpServers": true}`)
	doc := "demo://resource/static/document/architecture.md"
	api := newClaudeAPI(t,
		use("ListMcpResourcesTool", map[string]string{"server": "everything"}),
		use("ReadMcpResourceTool", map[string]string{"server": "everything", "uri": doc}),
		say("Read."))
	run := runClaude(t, ws, api, "/mcp__everything__args-prompt Paris France", "--permission-mode", "default")
	run.answered(t, "Read.")
	run.requestsWant(t, 3)
	if got := run.requests[0].messages[0].text; !strings.HasPrefix(got, "What's weather in Paris, France?") {
		t.Errorf("the prompt reached the model as %q", got)
	}
	if list := run.requests[1].result(t); list.isError || !strings.Contains(list.text, "MCP server everything:") || !strings.Contains(list.text, "- "+doc) || !strings.Contains(list.text, "- template ") {
		t.Errorf("ListMcpResourcesTool: %+v", list)
	}
	if read := run.requests[2].result(t); read.isError || !strings.Contains(read.text, "[resource "+doc+" (text/markdown)]") || !strings.Contains(read.text, "# Everything Server – Architecture") {
		t.Errorf("ReadMcpResourceTool: %+v", read)
	}

	api = newClaudeAPI(t)
	run = runClaude(t, ws, api, "/mcp__everything__args-prompt")
	run.requestsWant(t, 0)
	if run.code != 1 || !strings.Contains(run.stdout, `the argument \"city\" is required`) {
		t.Errorf("a prompt without its argument: exit %d\n%s\n%s", run.code, run.stdout, run.stderr)
	}
}

// In orca chat, the everything server's prompts are listed by /help and
// /mcp, and "/mcp__everything__simple-prompt" sends the model the prompt's
// text, which the store keeps as the user's message.
func TestChatMCPPrompts(t *testing.T) {
	server := referenceServer(t, "server-everything")
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"everything": {"command": "node", "args": ["`+server+`", "stdio"]}}}`)
	sc := writeScript(t, `{"text": "Noted."}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "/help\n/mcp\n/mcp__everything__simple-prompt\n/exit\n", "chat", "--script", sc, "-w", ws, "--session", "c")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"/mcp__everything__args-prompt <city> [state]", // /help
		"✓ everything (stdio, mcp-servers/everything",  // /mcp
		"    /mcp__everything__simple-prompt\n",        // /mcp
		"Noted.",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if p := show(t, ws, "c").prompts(); len(p) != 1 || p[0] != "This is a simple prompt without arguments." {
		t.Errorf("the model was sent %q", p)
	}
}

// A server the user added with `claude mcp add` (local scope: kept in
// Claude Code's state file, .claude.json, under the project's path)
// starts in orca too, in a workspace orca does not trust: the user added
// it, not the project.
func TestMCPServerOfClaudeCodeState(t *testing.T) {
	server := referenceServer(t, "server-everything")
	ws, claudeDir := t.TempDir(), t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", claudeDir)
	writeFileAt(t, claudeDir, ".claude.json", `{"numStartups": 3, "projects": {"`+ws+`": {"hasTrustDialogAccepted": true,
		"mcpServers": {"everything": {"type": "stdio", "command": "node", "args": ["`+server+`", "stdio"], "env": {}}}}}}`)
	stdout, stderr, code := orcaWith(t, t.Context(), options{configDir: t.TempDir()}, "", "mcp", "list", "-w", ws)
	if code != 0 || !strings.Contains(stdout, "✓ everything (stdio") || !strings.Contains(stdout, "/mcp__everything__simple-prompt") || !strings.Contains(stdout, ", resources") {
		t.Errorf("mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
}

// The reference "everything" server's get-tiny-image: its image reaches
// the model as an image, inside the tool result, in the form the API
// takes — not as a line that describes it.
func TestRunMCPImageReachesTheModel(t *testing.T) {
	server := referenceServer(t, "server-everything")
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	api := newFakeModelAPI(t, true, reply{tool: "mcp__everything__get-tiny-image", input: `{}`}, reply{text: "A tiny image."})
	ws := t.TempDir()
	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"everything": {"command": "node", "args": ["`+server+`", "stdio"]}}}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", ws,
		"--permission-mode", "bypass", "--json", "Show me the tiny image")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs := api.seen()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Messages []struct {
			Content []struct {
				Type    string `json:"type"`
				Content []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Source struct {
						MediaType string `json:"media_type"`
						Data      string `json:"data"`
					} `json:"source"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(reqs[1].raw), &body); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range body.Messages {
		for _, b := range m.Content {
			for _, c := range b.Content {
				if b.Type == "tool_result" && c.Type == "image" && c.Source.MediaType == "image/png" {
					data, err := base64.StdEncoding.DecodeString(c.Source.Data)
					found = err == nil && media.Sniff(data) == "image/png"
				}
			}
		}
	}
	if !found {
		t.Errorf("no PNG image in the tool result sent to the model:\n%.2000s", reqs[1].raw)
	}
}
