package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The reference filesystem server started without folders takes them
// from the client's roots: in orca, the workspace. It lists the workspace
// as its one allowed folder and reads a file there.
func TestRunMCPFilesystemRoots(t *testing.T) {
	server := referenceServer(t, "server-filesystem")
	ws := t.TempDir()
	real, _ := filepath.EvalSymlinks(ws)
	target := writeFileAt(t, real, "notes/plan.txt", "read through the roots")
	o := options{configDir: t.TempDir()}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"files": {"command": "node", "args": ["`+server+`"]}}}`)
	// The server asks for the roots once the handshake is over, and takes
	// them in its own time: the model takes a second, as a real one would.
	sc := writeScript(t, `{"delay_ms": 1000, "tool_calls": [{"id": "r1", "name": "mcp__files__list_allowed_directories", "input": {}}]}`,
		`{"tool_calls": [{"id": "r2", "name": "mcp__files__read_text_file", "input": {"path": "`+target+`"}}]}`, `{"text": "done"}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "--permission-mode", "bypass", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	if ev := toolEventOf(t, evs, "r1"); ev["is_error"] != false || strings.TrimSpace(strings.TrimPrefix(ev.str("output"), "Allowed directories:")) != real {
		t.Errorf("list_allowed_directories (the roots): %v", ev)
	}
	if ev := toolEventOf(t, evs, "r2"); ev["is_error"] != false || ev.str("output") != "read through the roots" {
		t.Errorf("read_text_file: %v", ev)
	}
}

// The reference "everything" server: its long-running operation's
// progress notifications are tool_progress events of the call in orca
// run --json; it sees the workspace as the client's root; what it logs
// (the roots it received, at info) is on stderr once the user's
// mcpLogLevel lets info through, and not at the default (warning).
func TestRunMCPEverythingProgressRootsAndLog(t *testing.T) {
	server := referenceServer(t, "server-everything")
	ws := t.TempDir()
	real, _ := filepath.EvalSymlinks(ws)
	sc := writeScript(t, `{"tool_calls": [{"id": "p1", "name": "mcp__everything__trigger-long-running-operation", "input": {"duration": 1.5, "steps": 3}}]}`,
		`{"tool_calls": [{"id": "r1", "name": "mcp__everything__get-roots-list", "input": {}}]}`, `{"text": "done"}`)
	for _, level := range []string{"", "info"} {
		o := options{configDir: t.TempDir()}
		settings := `"mcpServers": {"everything": {"command": "node", "args": ["` + server + `", "stdio"]}}`
		if level != "" {
			settings += `, "mcpLogLevel": "` + level + `"`
		}
		writeFileAt(t, o.configDir, "orca/settings.json", "{"+settings+"}")
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "go")
		if code != 0 {
			t.Fatalf("mcpLogLevel %q: exit %d\n%s", level, code, stderr)
		}
		evs := parseEvents(t, stdout)
		progress := named(evs, "tool_progress")
		for i, ev := range progress {
			if ev.str("tool_use_id") != "p1" || ev.str("tool_name") != "mcp__everything__trigger-long-running-operation" || ev["progress"] != float64(i+1) || ev["total"] != float64(3) {
				t.Errorf("tool_progress %d: %v", i+1, ev)
			}
		}
		if len(progress) < 2 {
			t.Errorf("mcpLogLevel %q: %d tool_progress events of the long operation (3 steps, the last may race its answer)\n%s", level, len(progress), stdout)
		}
		if ev := toolEventOf(t, evs, "r1"); !strings.Contains(ev.str("output"), "URI: file://"+real) {
			t.Errorf("get-roots-list: %v", ev)
		}
		said := strings.Contains(stderr, `orca: warning: MCP server log: server=everything severity=info message="Roots updated: 1 root(s) received from client"`)
		if said != (level == "info") {
			t.Errorf("mcpLogLevel %q: stderr says the info message: %v\n%s", level, said, stderr)
		}
	}
}

// A call that overruns the server's timeout is cancelled on the wire —
// the fault server's log says it received notifications/cancelled and cut
// its sleep short — while the call beside it on the same server
// completes; the server is not restarted: the next call is its third.
func TestRunMCPCallTimeoutCancels(t *testing.T) {
	faults := faultsCommand(t)
	ws := t.TempDir()
	log := filepath.Join(t.TempDir(), "faults.log")
	o := options{configDir: t.TempDir()}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"mcpServers": {"faults": {"command": "`+faults+`", "args": ["-log", "`+log+`"], "timeout": 2}}}`)
	sc := writeScript(t, `{"tool_calls": [{"id": "slow", "name": "mcp__faults__sleep", "input": {"seconds": 60}},
		{"id": "quick", "name": "mcp__faults__sleep", "input": {"seconds": 0.5}}]}`,
		`{"tool_calls": [{"id": "n", "name": "mcp__faults__counter", "input": {}}]}`, `{"text": "done"}`)
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--json", "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	if ev := toolEventOf(t, evs, "slow"); ev["is_error"] != true || !strings.Contains(ev.str("output"), "did not answer sleep within 2s: the call was cancelled") {
		t.Errorf("the call that overran: %v", ev)
	}
	if ev := toolEventOf(t, evs, "quick"); ev["is_error"] != false || ev.str("output") != "slept 0.5s" {
		t.Errorf("the call beside it: %v", ev)
	}
	if ev := toolEventOf(t, evs, "n"); ev["is_error"] != false || ev.str("output") != `{"call":3}` {
		t.Errorf("the call after (the same process counts on): %v", ev)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `msg="mcptest: notifications/cancelled received"`) || !strings.Contains(s, `reason="context deadline exceeded"`) ||
		!strings.Contains(s, `msg="mcptest: sleep cut short"`) {
		t.Errorf("the server's log does not say the call was cancelled:\n%s", s)
	}
}

// faultsCommand builds cmd/orca-mcp-faults into a folder of the test's.
func faultsCommand(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build orca-mcp-faults with")
	}
	path := filepath.Join(t.TempDir(), "orca-mcp-faults")
	if out, err := exec.Command(goTool, "build", "-o", path, "github.com/orca-agent/orca/cmd/orca-mcp-faults").CombinedOutput(); err != nil {
		t.Fatalf("building orca-mcp-faults: %v\n%s", err, out)
	}
	return path
}
