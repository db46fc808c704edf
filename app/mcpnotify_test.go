package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/store"
)

// An MCP server's log messages are mcp_log events of the runtime, all of
// them, and those from the settings' mcpLogLevel up are the logger's
// warnings (the CLI's stderr); its progress is tool_progress events of
// the call, on the session's feed and in its rows.
func TestMCPLogAndProgress(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{"mcpLogLevel": "error", "mcpServers": map[string]any{
		"faults": map[string]any{"command": exe, "env": map[string]string{mcpServerEnv: "1"}},
	}})
	cfgDir, ws := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", string(settings))
	st := store.NewMemory()
	model := script.New().ScriptAny(
		script.Call("mcp__faults__log", map[string]any{"level": "warning", "text": "disk slow"}),
		script.Call("mcp__faults__log", map[string]any{"level": "error", "text": "disk full"}),
		script.Call("mcp__faults__sleep", map[string]any{"seconds": 0.8, "steps": 2}),
		script.Text("done"))
	var warned syncBuffer
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", Client: model, NoSandbox: true, Store: st,
		Logger: slog.New(slog.NewTextHandler(&warned, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fed []event.Event
	s, err := a.Session(t.Context(), app.SessionOptions{ID: "s1", OnEvent: func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		fed = append(fed, e)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	s.Close(t.Context())
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Observations(context.Background(), store.ObservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	progressed := 0
	for _, r := range rows {
		e, err := event.Decode(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		switch d := e.Data.(type) {
		case *event.MCPLogData:
			logged = append(logged, d.Level+" "+d.Message)
			if r.RuntimeID != a.Runtime().ID() || r.SessionID != "" || d.Server != "faults" || d.Logger != "orca-mcp-faults" {
				t.Errorf("mcp_log %+v in %+v", d, r.Scope)
			}
		case *event.ToolProgressData:
			progressed++
			if r.SessionID != "s1" || r.TurnID == "" || d.ToolName != "mcp__faults__sleep" || d.Total != 2 || d.Message != fmt.Sprintf("step %v of 2", d.Progress) {
				t.Errorf("tool_progress %+v in %+v", d, r.Scope)
			}
		}
	}
	if strings.Join(logged, "; ") != "warning disk slow; error disk full" {
		t.Errorf("mcp_log rows: %q", logged)
	}
	if progressed < 1 {
		t.Error("no tool_progress row")
	}
	mu.Lock()
	onFeed := 0
	for _, e := range fed {
		if e.Name == event.ToolProgress {
			onFeed++
		}
	}
	mu.Unlock()
	if onFeed != progressed {
		t.Errorf("%d tool_progress on the session's feed, %d in the rows", onFeed, progressed)
	}
	w := warned.String()
	if !strings.Contains(w, `msg="MCP server log" server=faults severity=error message="disk full"`) || strings.Contains(w, "disk slow") {
		t.Errorf("the warnings (mcpLogLevel error):\n%s", w)
	}
}

// syncBuffer is a buffer a logger may write from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
