package orcatest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
)

// L1: one tool's full round trip through the assembled runtime, checked on
// disk and in the observation the model receives in its next prompt.

// roundTrip runs one turn in which the model calls name with input and then
// answers, and returns the observation carried by the second model call.
func roundTrip(t *testing.T, n *orcatest.Node, name string, input any) llm.Block {
	t.Helper()
	session := t.Name()
	n.Script(session, script.Response{ToolCalls: []script.ToolCall{{ID: "t1", Name: name, Input: raw(input)}}}, script.Text("done"))
	res := n.Run(t.Context(), session, "please")
	if res.StopReason != agent.StopAnswered || res.Answer != "done" {
		t.Fatalf("turn ended %s (%v), want answered", res.StopReason, res.Err)
	}
	calls := n.LLM.CallsTo(session)
	if len(calls) != 2 {
		t.Fatalf("model calls = %d, want 2", len(calls))
	}
	obs := calls[1].Observations()
	if len(obs) != 1 || obs[0].ToolUseID != "t1" {
		t.Fatalf("next prompt carries %+v, want the observation of t1", obs)
	}
	return obs[0]
}

func raw(v any) json.RawMessage {
	if s, ok := v.(string); ok {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(v)
	return b
}

func wantOK(t *testing.T, obs llm.Block, contains ...string) {
	t.Helper()
	if obs.IsError {
		t.Fatalf("observation is an error: %s", obs.Content)
	}
	for _, s := range contains {
		if !strings.Contains(obs.Content, s) {
			t.Errorf("observation does not contain %q:\n%s", s, obs.Content)
		}
	}
}

func wantError(t *testing.T, obs llm.Block, contains ...string) {
	t.Helper()
	if !obs.IsError {
		t.Fatalf("observation is not an error: %s", obs.Content)
	}
	for _, s := range contains {
		if !strings.Contains(obs.Content, s) {
			t.Errorf("error observation does not contain %q:\n%s", s, obs.Content)
		}
	}
}

func TestL1_Read(t *testing.T) {
	n := orcatest.NewNode(t)
	n.WriteFile("notes/a.txt", "alpha\nbeta\ngamma\n")
	wantOK(t, roundTrip(t, n, "Read", map[string]any{"file_path": "notes/a.txt"}), "1\talpha", "2\tbeta", "3\tgamma")
}

func TestL1_ReadAbsolutePathInsideWorkspace(t *testing.T) {
	n := orcatest.NewNode(t)
	n.WriteFile("a.txt", "one\ntwo\nthree\n")
	obs := roundTrip(t, n, "Read", map[string]any{"file_path": n.Path("a.txt"), "offset": 2, "limit": 1})
	wantOK(t, obs, "2\ttwo")
	if strings.Contains(obs.Content, "one") || strings.Contains(obs.Content, "three") {
		t.Errorf("offset/limit not honoured:\n%s", obs.Content)
	}
}

func TestL1_Write(t *testing.T) {
	n := orcatest.NewNode(t)
	wantOK(t, roundTrip(t, n, "Write", map[string]any{"file_path": "deep/er/new.go", "content": "package x\n"}))
	if got := n.ReadFile("deep/er/new.go"); got != "package x\n" {
		t.Errorf("file on disk = %q", got)
	}
}

func TestL1_Edit(t *testing.T) {
	n := orcatest.NewNode(t)
	n.WriteFile("calc.go", "func Sub(a, b int) int { return a + b }\n")
	wantOK(t, roundTrip(t, n, "Edit", map[string]any{"file_path": "calc.go", "old_string": "return a + b", "new_string": "return a - b"}), "1")
	if got := n.ReadFile("calc.go"); got != "func Sub(a, b int) int { return a - b }\n" {
		t.Errorf("file on disk = %q", got)
	}
}

func TestL1_EditNeedsAUniqueMatch(t *testing.T) {
	n := orcatest.NewNode(t)
	n.WriteFile("x.txt", "a\na\n")
	wantError(t, roundTrip(t, n, "Edit", map[string]any{"file_path": "x.txt", "old_string": "a", "new_string": "b"}), "2")
	if got := n.ReadFile("x.txt"); got != "a\na\n" {
		t.Errorf("a refused edit changed the file: %q", got)
	}
}

func TestL1_Glob(t *testing.T) {
	n := orcatest.NewNode(t)
	n.WriteFile(".gitignore", "ignored.go\n")
	n.WriteFile("a.go", "package a")
	n.WriteFile("sub/b.go", "package b")
	n.WriteFile("c.txt", "c")
	n.WriteFile("ignored.go", "package ignored")
	obs := roundTrip(t, n, "Glob", map[string]any{"pattern": "**/*.go"})
	wantOK(t, obs, "a.go", "sub/b.go")
	if strings.Contains(obs.Content, "ignored.go") || strings.Contains(obs.Content, "c.txt") {
		t.Errorf("glob returned ignored or non-matching files:\n%s", obs.Content)
	}
}

func TestL1_Grep(t *testing.T) {
	n := orcatest.NewNode(t)
	n.WriteFile("a.go", "package a\nfunc Add(a, b int) int { return a + b }\n")
	n.WriteFile("b.go", "package b\n")
	obs := roundTrip(t, n, "Grep", map[string]any{"pattern": `func Add\(`, "output_mode": "content", "-n": true})
	wantOK(t, obs, "a.go", "2", "func Add(")
	if strings.Contains(obs.Content, "b.go") {
		t.Errorf("grep matched b.go:\n%s", obs.Content)
	}
}

func TestL1_Bash(t *testing.T) {
	n := orcatest.NewNode(t)
	wantOK(t, roundTrip(t, n, "Bash", map[string]any{"command": "echo hello > out.txt && pwd", "description": "write a file"}), n.Root)
	if got := n.ReadFile("out.txt"); got != "hello\n" {
		t.Errorf("out.txt = %q", got)
	}
}

func TestL1_BashExitCode(t *testing.T) {
	n := orcatest.NewNode(t)
	wantError(t, roundTrip(t, n, "Bash", map[string]any{"command": "echo oops >&2; exit 3"}), "3", "oops")
}

// Cancelling the turn kills every process of a running command.
func TestL1_BashCancelKillsTheProcessGroup(t *testing.T) {
	n := orcatest.NewNode(t)
	hold := proctest.NewHolder(t, n.Root, "hold.fifo")
	n.Script("s", script.Call("Bash", map[string]any{"command": "sleep 1000 3>hold.fifo & wait"}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *agent.Result)
	go func() { done <- n.Run(ctx, "s", "go") }()
	hold.Opened()
	cancel()
	res := <-done
	if res.StopReason != agent.StopFailed {
		t.Errorf("turn ended %s, want failed", res.StopReason)
	}
	hold.RequireGone()
}

func TestL1_TodoWrite(t *testing.T) {
	n := orcatest.NewNode(t)
	todos := []map[string]string{
		{"content": "Find the bug", "status": "completed", "activeForm": "Finding the bug"},
		{"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
		{"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
	}
	wantOK(t, roundTrip(t, n, "TodoWrite", map[string]any{"todos": todos}), "Find the bug", "Fix the bug", "Run the tests")
}

func TestL1_ToolFailureIsAnObservation(t *testing.T) {
	n := orcatest.NewNode(t)
	wantError(t, roundTrip(t, n, "Read", map[string]any{"file_path": "missing.txt"}), "missing.txt")
}

func TestL1_UnknownTool(t *testing.T) {
	n := orcatest.NewNode(t)
	wantError(t, roundTrip(t, n, "Teleport", map[string]any{"to": "mars"}), `unknown tool "Teleport"`, "Read")
}

func TestL1_InvalidArguments(t *testing.T) {
	n := orcatest.NewNode(t)
	wantError(t, roundTrip(t, n, "Read", map[string]any{"file_path": 42}), "file_path")
	n2 := orcatest.NewNode(t)
	wantError(t, roundTrip(t, n2, "Write", map[string]any{"file_path": "x.txt"}), "content")
	n3 := orcatest.NewNode(t)
	wantError(t, roundTrip(t, n3, "Read", `{"file_path": "a.txt"`), "not valid JSON")
}

func TestL1_PathEscapesAreRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t)
	if err := os.Symlink(outside, n.Path("link")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(n.Root, secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tool  string
		input map[string]any
		path  string
	}{
		{"dotdot read", "Read", map[string]any{"file_path": rel}, rel},
		{"absolute read", "Read", map[string]any{"file_path": secret}, secret},
		{"symlink read", "Read", map[string]any{"file_path": "link/secret.txt"}, "link/secret.txt"},
		{"dotdot write", "Write", map[string]any{"file_path": "../escape.txt", "content": "x"}, "../escape.txt"},
		{"symlink write", "Write", map[string]any{"file_path": "link/secret.txt", "content": "pwned"}, "link/secret.txt"},
		{"symlink edit", "Edit", map[string]any{"file_path": "link/secret.txt", "old_string": "top", "new_string": "no"}, "link/secret.txt"},
		{"absolute glob", "Glob", map[string]any{"pattern": "*", "path": outside}, outside},
		{"symlink grep", "Grep", map[string]any{"pattern": "secret", "path": "link"}, "link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, roundTrip(t, n, tc.tool, tc.input), tc.path, "outside the workspace")
		})
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Errorf("the file outside the workspace changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(n.Root), "escape.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
}
