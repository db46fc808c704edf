package app_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/mcp/mcptest"
	"github.com/orca-agent/orca/store"
)

// mcpServerEnv makes the test binary mcptest's server over stdio.
const mcpServerEnv = "ORCA_APP_TEST_MCP_SERVER"

func serveMCP() {
	if err := mcptest.ServeStdio(context.Background(), mcptest.Faults{}, mcptest.Options{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// The MCP servers of the settings: one that starts, its tool called in a
// turn, and one that cannot. Each says so in an mcp_server_* event in the
// runtime's scope — started with its tools and what it is, failed with
// why — and the observation rows keep them.
func TestMCPServerEvents(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"faults":  map[string]any{"command": exe, "env": map[string]string{mcpServerEnv: "1"}},
		"missing": map[string]any{"command": "no-such-mcp-server-x"},
	}})
	cfgDir, ws := t.TempDir(), t.TempDir()
	write(t, cfgDir, "orca/settings.json", string(settings))
	st := store.NewMemory()
	model := script.New().ScriptAny(script.Call("mcp__faults__echo", map[string]string{"text": "through MCP"}), script.Text("done"))
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", Client: model, NoSandbox: true, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	rt := a.Runtime().ID()
	s, err := a.Session(t.Context(), app.SessionOptions{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "echo it"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Observations(context.Background(), store.ObservationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]*event.MCPServerData{}
	var names []string
	echoed := false
	for _, r := range rows {
		e, err := event.Decode(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := e.Data.(*event.ToolData); ok && e.Name == event.ToolExecCompleted && d.ToolName == "mcp__faults__echo" {
			echoed = d.Output == "through MCP"
		}
		if !strings.HasPrefix(string(e.Name), "mcp_server_") {
			continue
		}
		d := e.Data.(*event.MCPServerData)
		names = append(names, string(e.Name)+" "+d.Server)
		servers[d.Server] = d
		if r.RuntimeID != rt || r.SessionID != "" {
			t.Errorf("%s of %s: scope %+v, want the runtime's (%s)", e.Name, d.Server, r.Scope, rt)
		}
	}
	if !echoed {
		t.Error("no tool_exec_completed row of mcp__faults__echo saying its text")
	}
	slices.Sort(names)
	if want := []string{"mcp_server_failed missing", "mcp_server_started faults"}; !slices.Equal(names, want) {
		t.Fatalf("MCP server rows %v, want %v", names, want)
	}
	if d := servers["faults"]; d.State != "up" || d.Type != "stdio" || d.Info != "orca-mcp-faults v1" || !slices.Contains(d.Tools, "mcp__faults__echo") {
		t.Errorf("started: %+v", d)
	}
	if d := servers["missing"]; d.State != "failed" || !strings.Contains(d.Error, "no-such-mcp-server-x") || len(d.Tools) != 0 {
		t.Errorf("failed: %+v", d)
	}
}
