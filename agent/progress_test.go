package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/tool"
)

// What a call reports of its progress, from a goroutine of its own, is a
// tool_progress event of the call, in its scope, between its start and
// its end on a feed that takes both streams as a live session does; a
// report after the call returned reaches no one, and neither does one
// whose numbers are not finite.
func TestToolProgress(t *testing.T) {
	late := make(chan func(), 1)
	slow := tool.New("Index", "Indexes things, slowly.", func(ctx context.Context, _ struct{}) (string, error) {
		var wg sync.WaitGroup
		wg.Go(func() {
			tool.Report(ctx, tool.Progress{Progress: 1, Total: 2, Message: "half"})
			tool.Report(ctx, tool.Progress{Progress: 2, Total: 2})
			tool.Report(ctx, tool.Progress{Progress: 3, Total: 1.0 / zero()})
		})
		wg.Wait()
		late <- func() { tool.Report(ctx, tool.Progress{Progress: 9}) }
		return "indexed", nil
	}, tool.ReadOnly(), tool.Reports())
	model := script.New().Script("s", script.Call("Index", map[string]any{}), script.Text("done"))
	rt, err := agent.New(agent.Definition{Name: "progress", ToolProviders: []tool.Provider{tool.Static("custom", slow)}},
		agent.Collaborators{Client: model, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var mu sync.Mutex
	var feed []event.Event
	take := func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		feed = append(feed, e)
	}
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", OnEvent: take, OnBackgroundEvent: take})
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	(<-late)()
	mu.Lock()
	defer mu.Unlock()
	var seen []string
	var started event.Event
	for _, e := range feed {
		switch d := e.Data.(type) {
		case *event.ToolStartedData:
			started = e
			seen = append(seen, "started")
		case *event.ToolProgressData:
			if e.Scope != started.Scope || d.ToolUseID != started.Data.(*event.ToolStartedData).ToolUseID || d.ToolName != "Index" || d.Iteration != 1 {
				t.Errorf("progress %+v in %+v: not the call's (%+v)", d, e.Scope, started)
			}
			seen = append(seen, d.Message)
		case *event.ToolData:
			seen = append(seen, "ended")
		}
	}
	if want := []string{"started", "half", "", "ended"}; !slices.Equal(seen, want) {
		t.Errorf("the call's events %q, want %q", seen, want)
	}
}

func zero() float64 { return 0 }
