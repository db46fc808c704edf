package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// result decodes --output-format json's one result object.
type result struct {
	Type       string  `json:"type"`
	Subtype    string  `json:"subtype"`
	IsError    bool    `json:"is_error"`
	Result     string  `json:"result"`
	SessionID  string  `json:"session_id"`
	NumTurns   int     `json:"num_turns"`
	StopReason string  `json:"stop_reason"`
	Cost       float64 `json:"total_cost_usd"`
	Usage      struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"usage"`
}

func decodeResult(t *testing.T, stdout string) result {
	t.Helper()
	var r result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Fatalf("stdout is not one result object (%v):\n%s", err, stdout)
	}
	return r
}

// Claude Code's flags work as they do there: orca -p runs a turn,
// --output-format json prints one result object, -c and --resume continue
// a session, --dangerously-skip-permissions is bypass (--disallowedTools
// still deny), --max-turns caps the model calls.
func TestClaudeCodeFlags(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	hi := writeScript(t, `{"text": "hi"}`)
	stdout, stderr, code := orca(t, t.Context(), "", "-p", "--script", hi, "-w", ws, "hello")
	if code != 0 || !strings.Contains(stdout, "hi") || !strings.Contains(stdout, "✓ answered") {
		t.Fatalf("orca -p: exit %d\n%s\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = orca(t, t.Context(), "", "-p", "--script", hi, "-w", ws, "--output-format", "json", "hello")
	first := decodeResult(t, stdout)
	if code != 0 || first.Type != "result" || first.Subtype != "success" || first.IsError || first.Result != "hi" || first.SessionID == "" || first.NumTurns != 1 || first.StopReason != "answered" {
		t.Errorf("--output-format json: exit %d, %+v\n%s", code, first, stderr)
	}
	for _, cont := range [][]string{{"-c"}, {"--resume", first.SessionID}, {"-r", first.SessionID}} {
		stdout, _, _ = orca(t, t.Context(), "", append(append([]string{"run", "--script", hi, "-w", ws, "--output-format", "json"}, cont...), "again")...)
		if r := decodeResult(t, stdout); r.SessionID != first.SessionID {
			t.Errorf("%v continued %s, want %s", cont, r.SessionID, first.SessionID)
		}
	}
	stdout, _, _ = orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "--output-format", "stream-json", "x")
	if evs := parseEvents(t, stdout); evs[len(evs)-1].str("name") != "turn_completed" {
		t.Errorf("stream-json: %v", evs[len(evs)-1])
	}

	// Permissions.
	touch := writeScript(t, bashCalls("touch a.txt", "mkdir b.txt"), `{"text": "done"}`)
	stdout, stderr, code = orca(t, t.Context(), "", "-p", "--script", touch, "-w", ws, "--no-sandbox", "--dangerously-skip-permissions",
		"--disallowedTools", "Bash(touch:*),Edit", "--output-format", "json", "go")
	if r := decodeResult(t, stdout); code != 0 || r.IsError {
		t.Errorf("exit %d, %+v\n%s", code, r, stderr)
	}
	if fileExists(filepath.Join(ws, "a.txt")) {
		t.Error("--disallowedTools Bash(touch:*) did not deny touch")
	}
	if !fileExists(filepath.Join(ws, "b.txt")) {
		t.Error("--dangerously-skip-permissions did not allow mkdir (bypass)")
	}
	allowed := writeScript(t, bashCalls("touch c.txt"), `{"text": "done"}`)
	orca(t, t.Context(), "", "run", "--script", allowed, "-w", ws, "--no-sandbox", "--allowedTools", "Read Bash(touch:*)", "go")
	if !fileExists(filepath.Join(ws, "c.txt")) {
		t.Error("--allowedTools \"Read Bash(touch:*)\" did not allow touch")
	}

	// --max-turns: the turn ends after N model calls, as an error.
	loop := writeScript(t, `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}`, `{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}`, `{"text": "never"}`)
	stdout, _, code = orca(t, t.Context(), "", "-p", "--script", loop, "-w", ws, "--max-turns", "1", "--output-format", "json", "go")
	if r := decodeResult(t, stdout); code != exitTurn || r.Subtype != "error_max_turns" || !r.IsError || r.NumTurns != 1 {
		t.Errorf("--max-turns 1: exit %d, %+v", code, r)
	}

	for _, bad := range [][]string{
		{"--resume", "a", "--session", "b"},
		{"--max-turns", "2", "--max-iterations", "3"},
		{"--dangerously-skip-permissions", "--permission-mode", "plan"},
		{"--output-format", "xml"},
		{"--output-format", "json", "--json"},
	} {
		_, stderr, code := orca(t, t.Context(), "", append(append([]string{"run", "--script", hi, "-w", ws}, bad...), "x")...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want a usage error\n%s", bad, code, stderr)
		}
	}
}

// --append-system-prompt goes after the system prompt (before the
// environment and memory files, as orca's own prompt does); --verbose logs
// every event at debug level.
func TestClaudeCodeSystemPromptFlags(t *testing.T) {
	api := newClaudeAPI(t, say("ok"))
	run := runClaude(t, t.TempDir(), api, "hi", "--append-system-prompt", "Always answer in French.", "--verbose")
	run.answered(t, "ok")
	sys := run.requests[0].system
	if i, j := strings.Index(sys, "You are orca"), strings.Index(sys, "\n\nAlways answer in French.\n"); i < 0 || j < i {
		t.Errorf("the appended text does not follow orca's system prompt:\n%s", sys)
	}
	if !strings.Contains(run.stderr, "level=DEBUG msg=turn_completed") {
		t.Errorf("--verbose logged no debug line:\n%s", run.stderr)
	}
}

// Bare orca at a terminal opens the chat, as claude does, and Claude
// Code's flags go with it (orca -c continues the last session); off a
// terminal it prints its help.
func TestBareOrcaOpensTheChat(t *testing.T) {
	t.Parallel()
	ws, cfg := t.TempDir(), t.TempDir()
	hi := writeScript(t, `{"text": "hi"}`)
	if _, _, code := orca(t, t.Context(), "", "run", "--script", hi, "-w", ws, "--session", "earlier", "x"); code != 0 {
		t.Fatal("the first session")
	}
	p := startPTY(t, cfg, nil, "-c", "--script", writeScript(t, `{"text": "hi"}`), "-w", ws)
	p.waitFor("session earlier · 1 turn", 1) // the chat's status line, on the last session
	p.typ("\x04")                            // Ctrl-D on an empty editor ends the chat
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d:\n%s", code, p.screen())
	}
	stdout, _, code := orca(t, t.Context(), "")
	if code != 0 || !strings.Contains(stdout, "Usage:") {
		t.Errorf("bare orca off a terminal: exit %d\n%s", code, stdout)
	}
	// claude -v prints its version, also at a terminal: not the chat.
	v := startPTY(t, cfg, nil, "-v")
	if code := v.wait(); code != 0 || !strings.Contains(v.Raw(), "orca ") || strings.Contains(v.Raw(), "session") {
		t.Errorf("orca -v at a terminal: exit %d:\n%s", code, v.screen())
	}
}
