package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/toolset"
)

// A call from outside a turn is the session's: its events on the feed
// between session_started and session_ended, its spending in the totals,
// its budget enforced, its SESSION_START variables in the command's
// environment, and nothing added to its conversation.
func TestCallTool(t *testing.T) {
	dir := t.TempDir()
	svc := agent.NewServices(nil)
	defer svc.Close()
	if _, err := svc.Hooks.Register(hook.SessionStart, "env", hook.On(func(ctx context.Context, p *hook.SessionStartPayload) (*hook.Decision, error) {
		return nil, os.WriteFile(p.EnvFile, []byte("export GREETING=from-session-start\n"), 0o600)
	})); err != nil {
		t.Fatal(err)
	}
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "calls"}, agent.Collaborators{Client: script.New(), Workspace: dir, Services: svc,
		Sandbox: &sandbox.Runner{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := store.NewMemory()
	defer st.Close()
	var mu sync.Mutex
	var feed []string
	s, err := session.NewRouter(rt, st, nil).Open(t.Context(), "s1", session.OpenOptions{OnEvent: func(e event.Event) {
		mu.Lock()
		feed = append(feed, string(e.Name))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Runtime() != rt {
		t.Error("Runtime is not the router's")
	}
	ctx := t.Context()
	res, err := s.CallTool(ctx, "Write", json.RawMessage(`{"file_path": "a.txt", "content": "hi"}`))
	if err != nil || res.IsError {
		t.Fatalf("Write: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "hi" {
		t.Errorf("a.txt = %q", b)
	}
	res, err = s.CallTool(ctx, "Bash", json.RawMessage(`{"command": "echo $GREETING"}`))
	if err != nil || res.IsError || !strings.Contains(res.Content, "from-session-start") {
		t.Errorf("Bash: %+v, %v", res, err)
	}
	if tot, err := s.Totals(ctx); err != nil || tot.ToolCalls != 2 || tot.Turns != 0 || tot.WallTime <= 0 {
		t.Errorf("totals %+v, %v", tot, err)
	}
	if n := len(s.Transcript()); n != 0 {
		t.Errorf("the conversation has %d messages", n)
	}
	if err := s.SetBudget(ctx, &budget.Limits{ToolCalls: 2}); err != nil {
		t.Fatal(err)
	}
	res, err = s.CallTool(ctx, "Write", json.RawMessage(`{"file_path": "b.txt", "content": "over"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "tool calls budget is exhausted") {
		t.Errorf("past the budget: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt: %v", err)
	}
	s.Close(ctx)
	if _, err := s.CallTool(ctx, "Read", json.RawMessage(`{"file_path": "a.txt"}`)); !errors.Is(err, session.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(feed, " ")
	want := "session_started tool_exec_started tool_exec_completed tool_exec_started tool_exec_completed session_ended"
	if got != want {
		t.Errorf("feed:\n got %s\nwant %s", got, want)
	}
}
