package session_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

type noop struct{}

func (noop) Name() string        { return "Noop" }
func (noop) Description() string { return "Does nothing." }
func (noop) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
}
func (noop) Execute(ctx context.Context, call *tool.Call) tool.Result {
	return tool.Result{Content: "ok"}
}

// BenchmarkStep is the standing target: one loop step (a model call and a
// no-op tool call) with every layer present — schema validation, the full
// default registry, hook and middleware registries (empty), a bus with a
// subscriber, the per-execution stream, and a live session writing every
// message to the in-memory store.
func BenchmarkStep(b *testing.B) {
	const steps = 100
	call := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("c", "Noop", json.RawMessage(`{"n":1}`))}}, StopReason: llm.StopToolUse}
	answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
	var sent int
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		sent++
		if sent%(steps+1) == 0 {
			return answer, nil
		}
		return call, nil
	})
	svc := agent.NewServices(slog.New(slog.DiscardHandler))
	defer svc.Close()
	svc.Bus.SubscribePrefix("metrics", "tool_exec_", func(event.Event) error { return nil })
	fs, err := workspace.OpenLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	st := store.NewMemory()
	defer st.Close()
	rt, err := agent.New(agent.Definition{Name: "bench", MaxIterations: steps + 1, CompactAt: -1,
		ToolProviders: []tool.Provider{tool.Static("noop", noop{})}},
		agent.Collaborators{Client: client, FS: fs, Services: svc, Approvals: session.Approvals(st)})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	router := session.NewRouter(rt, st, nil)
	var events int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		s, err := router.Open(context.Background(), session.NewID(), session.OpenOptions{OnEvent: func(event.Event) { events++ }})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if res, err := s.Run(context.Background(), "go"); err != nil || res.ToolCalls != steps {
			b.Fatalf("turn: %+v, %v", res, err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N * steps)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/step")
}
