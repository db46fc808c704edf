package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/store"
)

// served is orca mcp serve as a process of its own (the test binary as
// orca), driven by the Go SDK's client over its stdin and stdout.
type served struct {
	t      *testing.T
	cmd    *exec.Cmd
	client *mcp.ClientSession
	stderr bytes.Buffer // read once the process has exited
	closed bool
}

func serveMCP(t *testing.T, cfgDir string, args ...string) *served {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{t: t}
	// --no-lsp: the tools served are the same whatever language servers
	// this machine has.
	s.cmd = exec.Command(self, append([]string{"mcp", "serve", "--no-lsp"}, args...)...)
	s.cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir)
	s.cmd.Stderr = &s.stderr
	// A clean exit takes far less: Close waiting this long means orca did
	// not stop when its stdin closed.
	transport := &mcp.CommandTransport{Command: s.cmd, TerminateDuration: 30 * time.Second}
	s.client, err = mcp.NewClient(&mcp.Implementation{Name: "orca-test"}, nil).Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatalf("connecting to orca mcp serve: %v", err)
	}
	t.Cleanup(func() {
		if !s.closed {
			s.client.Close()
		}
	})
	return s
}

// close closes the client's end — orca's stdin — and returns what orca
// wrote on stderr, failing the test unless it exited 0 on its own.
func (s *served) close() string {
	s.t.Helper()
	start := time.Now()
	err := s.client.Close()
	s.closed = true
	if err != nil || s.cmd.ProcessState == nil || s.cmd.ProcessState.ExitCode() != 0 {
		s.t.Errorf("orca mcp serve did not exit cleanly: %v, %v\n%s", err, s.cmd.ProcessState, s.stderr.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		s.t.Errorf("orca mcp serve took %s to exit after its stdin closed", d)
	}
	return s.stderr.String()
}

func (s *served) call(name string, args any) (text string, isError bool) {
	s.t.Helper()
	res, err := s.client.CallTool(s.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: %v", name, err)
	}
	return resultText(res), res.IsError
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// orca mcp serve, driven by the Go SDK's client: the workspace's tools are
// listed with their schemas and annotations; Write writes, Read reads; the
// policy's deny rule, built-in protection and the workspace's PreToolUse
// command hook refuse calls, saying why, with nothing changed on disk;
// Bash runs in the OS sandbox, which stops what the policy did not see;
// every call is an observation row of the session; and orca exits when
// its stdin closes.
func TestMCPServe(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	const settings = `{"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command",
		"command": "case \"$(cat)\" in *hooked*) echo 'hooked files are off limits' >&2; exit 2;; esac"}]}]}}`
	writeFileAt(t, ws, ".orca/settings.json", settings)
	sandboxed := sandbox.Available() == nil
	args := []string{"-w", ws, "--trust", "--session", "mcp-session", "--permission-mode", "accept-edits", "--allow", "Bash", "--deny", "Write(secret/**)"}
	if !sandboxed {
		t.Logf("no OS sandbox here (%v): Bash runs without it", sandbox.Available())
		args = append(args, "--no-sandbox")
	}
	s := serveMCP(t, cfgDir, args...)

	list, err := s.client.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range list.Tools {
		tools[tl.Name], names = tl, append(names, tl.Name)
	}
	want := []string{"AgentOutput", "Bash", "Edit", "Glob", "Grep", "Read", "Skill", "Task", "TaskStop", "TodoWrite", "WebFetch", "WebSearch", "Write"}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if w := tools["Write"]; w == nil || w.Annotations == nil || w.Annotations.ReadOnlyHint || w.Annotations.DestructiveHint == nil || !*w.Annotations.DestructiveHint {
		t.Errorf("Write: %+v", w)
	} else if schema, _ := json.Marshal(w.InputSchema); !strings.Contains(string(schema), `"file_path"`) || !strings.Contains(string(schema), `"required":["file_path","content"]`) {
		t.Errorf("Write's input schema: %s", schema)
	}
	if r := tools["Read"]; r == nil || r.Annotations == nil || !r.Annotations.ReadOnlyHint || r.Description == "" {
		t.Errorf("Read: %+v", r)
	}

	if text, isErr := s.call("Write", map[string]string{"file_path": "notes/todo.md", "content": "- ship it\n"}); isErr {
		t.Errorf("Write: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes", "todo.md")); string(b) != "- ship it\n" {
		t.Errorf("notes/todo.md = %q", b)
	}
	if text, isErr := s.call("Read", map[string]string{"file_path": "notes/todo.md"}); isErr || !strings.Contains(text, "- ship it") {
		t.Errorf("Read: %v %s", isErr, text)
	}
	for _, c := range []struct{ path, why string }{
		{".orca/settings.json", "the path is protected"},
		{"secret/key", "denied by the permission rule Write(secret/**)"},
		{"hooked.txt", "hooked files are off limits"},
	} {
		text, isErr := s.call("Write", map[string]string{"file_path": c.path, "content": "{}"})
		if !isErr || !strings.Contains(text, c.why) {
			t.Errorf("Write %s: %v %s (want an error saying %q)", c.path, isErr, text, c.why)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".orca", "settings.json")); string(b) != settings {
		t.Errorf(".orca/settings.json is now %q", b)
	}
	for _, p := range []string{"secret/key", "hooked.txt"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if sandboxed {
		// A spelling the policy cannot see: the sandbox keeps .orca
		// read-only, and the command goes on to say it ran.
		text, _ := s.call("Bash", map[string]string{"command": `X=.or; echo '{"permissions": {"allow": ["Bash(*)"]}}' > ${X}ca/settings.local.json; echo ran-in-sandbox`})
		if !strings.Contains(text, "ran-in-sandbox") {
			t.Errorf("Bash: %s", text)
		}
		if _, err := os.Stat(filepath.Join(ws, ".orca", "settings.local.json")); err == nil {
			t.Errorf("the sandboxed command wrote .orca/settings.local.json: %s", text)
		}
	}
	if text, isErr := s.call("Bash", map[string]string{"command": "cat notes/todo.md"}); isErr || !strings.Contains(text, "- ship it") {
		t.Errorf("Bash cat: %v %s", isErr, text)
	}

	stderr := s.close()
	if !strings.Contains(stderr, "orca: serving 13 tools of "+ws) || !strings.Contains(stderr, "in session mcp-session") ||
		!strings.Contains(stderr, "orca: the MCP client closed the connection") {
		t.Errorf("stderr:\n%s", stderr)
	}
	rows, err := storeOf(t, ws).(store.Observations).Observations(t.Context(), store.ObservationFilter{SessionID: "mcp-session"})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Name]++
	}
	calls := 6
	if sandboxed {
		calls++
	}
	if counts["session_started"] != 1 || counts["session_ended"] != 1 || counts["tool_exec_started"] != calls || counts["tool_blocked"] != 3 {
		t.Errorf("observation rows: %v", counts)
	}
}

// With --agent, orca_agent runs a turn of the session on the model (here
// a script) and answers with the agent's answer; the turn's tool calls are
// policed as the client's are.
func TestMCPServeAgent(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	sc := writeScript(t,
		`{"tool_calls": [{"id": "w", "name": "Write", "input": {"file_path": "plan.md", "content": "1. test\n"}},
		                 {"id": "p", "name": "Write", "input": {"file_path": ".orca/settings.local.json", "content": "{}"}}]}`,
		`{"text": "Wrote plan.md; .orca is not mine to change."}`)
	s := serveMCP(t, cfgDir, "-w", ws, "--agent", "--script", sc, "--permission-mode", "accept-edits", "--no-sandbox")
	text, isErr := s.call("orca_agent", map[string]string{"prompt": "write a plan"})
	if isErr || text != "Wrote plan.md; .orca is not mine to change." {
		t.Errorf("orca_agent: %v %s", isErr, text)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "plan.md")); string(b) != "1. test\n" {
		t.Errorf("plan.md = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, ".orca", "settings.local.json")); err == nil {
		t.Error("the agent's turn wrote .orca/settings.local.json")
	}
	if text, isErr := s.call("orca_agent", map[string]string{"prompt": "again"}); !isErr || !strings.Contains(text, "The agent's turn ended failed") {
		t.Errorf("a turn the script cannot answer: %v %s", isErr, text)
	}
	s.close()
}

// orca mcp serve in-process: stdout carries MCP messages and nothing else;
// no model is needed to serve the tools (Task says why it cannot run);
// closing stdin ends the command with exit 0.
func TestMCPServeStdoutIsProtocolOnly(t *testing.T) {
	ws := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- execute(t.Context(), []string{"mcp", "serve", "-w", ws, "--permission-mode", "accept-edits"}, inR, outW, &errOut,
			options{configDir: t.TempDir(), getenv: func(string) string { return "" }})
		outW.Close()
	}()
	// Every line orca writes must be a JSON-RPC message; the client reads
	// them through.
	toClient, fromOrca := io.Pipe()
	var bad []string
	var mu sync.Mutex
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer fromOrca.Close()
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var m struct {
				JSONRPC string `json:"jsonrpc"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
				mu.Lock()
				bad = append(bad, sc.Text())
				mu.Unlock()
			}
			fromOrca.Write(append(sc.Bytes(), '\n'))
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "orca-test"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: toClient, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Write", Arguments: map[string]string{"file_path": "a.txt", "content": "in-process"}})
	if err != nil || res.IsError {
		t.Fatalf("Write: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "in-process" {
		t.Errorf("a.txt = %q", b)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Task", Arguments: map[string]string{"description": "d", "prompt": "look", "subagent_type": "general-purpose"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "started without a model") {
		t.Errorf("Task without a model: %v %s", err, resultText(res))
	}
	cs.Close() // closes orca's stdin
	select {
	case c := <-code:
		if c != exitOK {
			t.Errorf("exit %d\n%s", c, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("orca mcp serve did not end when its stdin closed")
	}
	<-scanned
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("stdout lines that are not JSON-RPC:\n%s", strings.Join(bad, "\n"))
	}
	if !strings.Contains(errOut.String(), "the MCP client closed the connection") {
		t.Errorf("stderr: %s", errOut.String())
	}
}

// A call the client cancels is cancelled, its processes with it, and
// orca goes on serving; a call still running when the client leaves (its
// stdin closes) is cancelled too, and orca exits on its own.
func TestMCPServeStopsWhatItStarted(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	args := []string{"-w", ws, "--allow", "Bash"}
	if sandbox.Available() != nil {
		args = append(args, "--no-sandbox")
	}
	s := serveMCP(t, cfgDir, args...)
	h := proctest.NewHolder(t, ws, "hold")
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan error, 1)
	go func() {
		_, err := s.client.CallTool(ctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]string{"command": "sleep 1000 3>hold"}})
		called <- err
	}()
	h.Opened()
	cancel()
	h.RequireGone()
	if err := <-called; err == nil {
		t.Error("the cancelled call returned no error")
	}
	if text, isErr := s.call("Bash", map[string]string{"command": "echo still serving"}); isErr || !strings.Contains(text, "still serving") {
		t.Errorf("after the cancelled call: %v %s", isErr, text)
	}
	s.close()

	// The client leaves without a word: its end of orca's stdin closes
	// while the call runs.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"mcp", "serve", "--no-lsp"}, args...)...)
	cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h2 := proctest.NewHolder(t, ws, "hold2")
	exited := make(chan error, 1)
	go func() {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "orca-test"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
		if err == nil {
			// Ends when orca does, its stdout closing.
			cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Bash", Arguments: map[string]string{"command": "sleep 1000 3>hold2"}})
			cs.Close()
		}
		exited <- cmd.Wait()
	}()
	h2.Opened()
	stdin.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("orca mcp serve: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("orca mcp serve did not exit when its stdin closed\n%s", stderr.String())
	}
	h2.RequireGone()
	if !strings.Contains(stderr.String(), "the MCP client closed the connection") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// The CLI of another MCP client, the MCP inspector's (an npm package;
// ORCA_MCP_INSPECTOR names its folder, which .ci/run installs), lists
// and calls orca's tools.
func TestMCPServeInspectorCLI(t *testing.T) {
	dir := os.Getenv("ORCA_MCP_INSPECTOR")
	if dir == "" {
		t.Skip("ORCA_MCP_INSPECTOR does not name the folder of @modelcontextprotocol/inspector-cli")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws, cfgDir := t.TempDir(), t.TempDir()
	// The inspector starts its server with an environment of its own: a
	// script carries orca's.
	server := writeFileAt(t, t.TempDir(), "orca-mcp.sh", fmt.Sprintf("#!/bin/sh\n%s=1 XDG_CONFIG_HOME=%s exec %s mcp serve --no-lsp -w %s --permission-mode accept-edits\n",
		asCLI, shellQuote(cfgDir), shellQuote(self), shellQuote(ws)))
	inspect := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), node, append([]string{"index.js", server}, args...)...)
		cmd.Dir = filepath.Join(dir, "build") // where it finds its package.json
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var v map[string]any
		if err != nil || json.Unmarshal(out, &v) != nil {
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr.String())
		}
		return v
	}
	list := inspect("--method", "tools/list")
	var names []string
	for _, tl := range list["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "Write") || !slices.Contains(names, "Bash") || len(names) != 13 {
		t.Errorf("tools: %v", names)
	}
	res := inspect("--method", "tools/call", "--tool-name", "Write", "--tool-arg", "file_path=from-inspector.txt", "--tool-arg", "content=hello")
	if res["isError"] == true {
		t.Errorf("Write: %v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "from-inspector.txt")); string(b) != "hello" {
		t.Errorf("from-inspector.txt = %q", b)
	}
	res = inspect("--method", "tools/call", "--tool-name", "Write", "--tool-arg", "file_path=.orca/settings.json", "--tool-arg", "content=x")
	if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "the path is protected") {
		t.Errorf("Write .orca/settings.json: %v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, ".orca", "settings.json")); err == nil {
		t.Error(".orca/settings.json was written")
	}
}
