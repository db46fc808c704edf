package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) != "" {
		serveMCP() // the test binary is the MCP server of TestMCPServerEvents
		return
	}
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}

func write(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Open builds what `orca run` runs on: the settings' command hooks, the
// policy, the model from a script file, the workspace's SQLite store with
// an observation row per event, and the timeline.
func TestOpenRunsATurnAsTheCLIDoes(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", `{"permissions": {"allow": ["Write(notes/**)"]},
		"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo seen >> hook.log"}]}]}}`)
	script := write(t, t.TempDir(), "script.json", `{"responses": [
		{"tool_calls": [{"name": "Write", "input": {"file_path": "notes/a.md", "content": "hello"}}]},
		{"tool_calls": [{"name": "Bash", "input": {"command": "touch bash-ran"}}]},
		{"text": "done"}]}`)
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, Model: app.ModelConfig{Script: script}, Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	var feed []event.Name
	s, err := a.Session(t.Context(), app.SessionOptions{ID: "s1", OnEvent: func(e event.Event) { feed = append(feed, e.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "write the note")
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	st := a.Store()
	timeline := a.TimelinePath()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The effects: the allowed write, no unasked command (default mode,
	// no one to ask), the user's hook, the rows, the timeline.
	if b, _ := os.ReadFile(filepath.Join(ws, "notes/a.md")); string(b) != "hello" {
		t.Errorf("notes/a.md = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "bash-ran")); err == nil {
		t.Error("Bash ran without approval in default mode")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "hook.log")); string(b) != "seen\n" {
		t.Errorf("the settings' hook ran %q", b)
	}
	if len(feed) == 0 || feed[0] != event.SessionStarted || feed[len(feed)-1] != event.SessionEnded {
		t.Errorf("feed %v", feed)
	}
	if b, err := os.ReadFile(timeline); err != nil || !strings.Contains(string(b), `"name":"turn_completed"`) {
		t.Errorf("timeline %s: %v", timeline, err)
	}
	// The store was closed with the App; reopened, it has the session and
	// a row per event.
	if _, err := st.Session(context.Background(), "s1"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("the store is still open after Close: %v", err)
	}
	reopened, err := app.OpenStore(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	rows, err := reopened.Observations(t.Context(), store.ObservationFilter{SessionID: "s1"})
	deltas := 0
	for _, name := range feed {
		if name == event.LLMDelta {
			deltas++
		}
	}
	if err != nil || len(rows) != len(feed)-deltas || deltas == 0 {
		t.Errorf("%d observation rows for %d events, %d of them deltas (no rows): %v", len(rows), len(feed), deltas, err)
	}
}

// A configuration that cannot be used is a ConfigError that says what to
// fix, and leaves nothing open (goleak checks the goroutines).
func TestOpenRefusesBadConfiguration(t *testing.T) {
	ws := t.TempDir()
	bad := write(t, t.TempDir(), "ws/.orca/settings.json", `{"permissions": {"allow": 3}}`)
	for _, tc := range []struct {
		name string
		cfg  app.Config
		want string
	}{
		{"no workspace", app.Config{Workspace: filepath.Join(ws, "nowhere"), Model: app.ModelConfig{Provider: "openai", BaseURL: "http://127.0.0.1:1"}}, "does not exist"},
		{"no provider", app.Config{Workspace: ws, ConfigDir: "-", Getenv: func(string) string { return "" }}, "no model provider chosen"},
		{"unknown provider", app.Config{Workspace: ws, ConfigDir: "-", Model: app.ModelConfig{Provider: "mistral"}}, `unknown provider "mistral"`},
		{"bad rule", app.Config{Workspace: ws, ConfigDir: "-", Model: app.ModelConfig{Provider: "openai", BaseURL: "http://127.0.0.1:1"}, Deny: []string{"Bash(ls"}}, "invalid permission rule"},
		{"bad settings", app.Config{Workspace: filepath.Dir(filepath.Dir(bad)), ConfigDir: "-", Model: app.ModelConfig{Provider: "openai", BaseURL: "http://127.0.0.1:1"}}, "permissions.allow"},
		{"unknown mode", app.Config{Workspace: ws, ConfigDir: "-", Model: app.ModelConfig{Provider: "openai", BaseURL: "http://127.0.0.1:1"}, Mode: "yolo"}, `Config.Mode: unknown permission mode "yolo"`},
	} {
		a, err := app.Open(t.Context(), tc.cfg)
		var ce *app.ConfigError
		if a != nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (want a ConfigError saying %q)", tc.name, err, tc.want)
		}
		if errors.Is(err, app.ErrNoProvider) != (tc.name == "no provider") {
			t.Errorf("%s: errors.Is(%v, ErrNoProvider) = %v", tc.name, err, !(tc.name == "no provider"))
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".orca", "orca.db")); err == nil {
		t.Error("a refused configuration created the store")
	}
}

// Close closes the sessions left open, firing SESSION_END, before the
// rest; a session of another agent is a ConfigError.
func TestCloseClosesSessionsAndSessionsStayWithTheirRuntime(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".orca/settings.json", `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "echo ended >> ended.log"}]}]}}`)
	script := write(t, t.TempDir(), "s.json", `{"responses": [{"text": "hi"}]}`)
	open := func(name string) *app.App {
		a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: "-", Trust: true, Name: name, Model: app.ModelConfig{Script: script}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := open("")
	if _, err := a.Session(t.Context(), app.SessionOptions{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if b, _ := os.ReadFile(filepath.Join(ws, "ended.log")); string(b) != "ended\n" {
		t.Errorf("SESSION_END ran %q times", b)
	}
	other := open("reviewer")
	defer other.Close()
	_, err := other.Session(t.Context(), app.SessionOptions{ID: "s"})
	var ce *app.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "session s cannot be opened here: it is agent orca's") {
		t.Errorf("another agent's session: %v", err)
	}
	if _, err := other.Session(t.Context(), app.SessionOptions{Continue: true}); err == nil || !strings.Contains(err.Error(), "no session to continue") {
		t.Errorf("continue with none of this runtime's: %v", err)
	}
}

// Sessions an orca without workspace ids started (their runtime id came
// from the folder's path) are adopted; another agent's are not, and say so.
func TestEarlierSessionsAreAdopted(t *testing.T) {
	ws := t.TempDir()
	st, err := app.OpenStore(ws)
	if err != nil {
		t.Fatal(err)
	}
	old := "/where/it/was"
	for _, s := range []store.Session{
		{ID: "before", Agent: app.DefaultName, RuntimeID: agent.RuntimeID(app.DefaultName, old), Workspace: old},
		{ID: "theirs", Agent: "reviewer", RuntimeID: agent.RuntimeID("reviewer", ws), Workspace: ws},
	} {
		if _, err := st.Provision(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	script := write(t, t.TempDir(), "script.json", `{"responses": [{"text": "again"}]}`)
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: "-", Model: app.ModelConfig{Script: script}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.Session(t.Context(), app.SessionOptions{Continue: true})
	if err != nil || s.ID() != "before" {
		t.Fatalf("--continue: %v", err)
	}
	if _, err := a.Session(t.Context(), app.SessionOptions{ID: "theirs"}); err == nil || !strings.Contains(err.Error(), "it is agent reviewer's") {
		t.Errorf("another agent's session: %v", err)
	}
	id, err := app.ReadWorkspaceID(ws)
	if err != nil || !strings.HasPrefix(id, "ws_") {
		t.Errorf("workspace id %q, %v", id, err)
	}
	theirs, _ := a.Store().Session(t.Context(), "theirs")
	if ok, why := app.Opens(app.DefaultName, id, ws, theirs); ok || why == "" {
		t.Errorf("Opens(theirs) = %v, %q", ok, why)
	}
}
