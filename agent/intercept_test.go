package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/queue"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

type rig struct {
	rt     *agent.Runtime
	exec   *agent.Executor
	model  *script.Client
	bus    *event.Bus
	queues *queue.Manager
	onBus  *collector
}

type collector struct {
	mu     sync.Mutex
	events []event.Event
}

func (c *collector) add(e event.Event) error {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	return nil
}

func (c *collector) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.events {
		out = append(out, string(e.Name))
	}
	return out
}

// newRig builds a runtime with a bus and queues; tools are the given ones.
func newRig(t *testing.T, tools ...tool.Tool) *rig {
	t.Helper()
	r := &rig{exec: agent.NewExecutor(), model: script.New(), bus: event.NewBus(nil), queues: queue.NewManager(), onBus: &collector{}}
	t.Cleanup(func() { r.bus.Close() })
	if _, err := r.bus.SubscribePrefix("test", "", r.onBus.add, event.Buffer(1<<14)); err != nil {
		t.Fatal(err)
	}
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	r.rt, err = agent.New(agent.Definition{Name: "rig", ToolProviders: []tool.Provider{tool.Static("t", tools...)}},
		agent.Collaborators{Client: r.model, FS: fs, Services: &agent.Services{Bus: r.bus, Queues: r.queues}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.rt.Close() })
	return r
}

// A blocked run never reaches the executor: no model call, no event on the
// bus or the per-execution stream.
func TestBlockedRunRunsNothing(t *testing.T) {
	r := newRig(t)
	r.model.Script("s", script.Text("should not be asked"))
	deny := intercept.Named("authz", -50, intercept.Func[*agent.Runtime, agent.Request, *agent.Result](
		func(ctx context.Context, rt *agent.Runtime, req agent.Request, next intercept.Next[*agent.Runtime, agent.Request, *agent.Result]) (*agent.Result, error) {
			return &agent.Result{Scope: scope.Scope{RuntimeID: rt.ID(), SessionID: req.SessionID}, StopReason: agent.StopBlocked}, nil
		}))
	var streamed []event.Event
	res, err := intercept.Wrap(r.exec, deny).Execute(t.Context(), r.rt, agent.Request{
		SessionID: "s", Input: "hi", OnEvent: func(e event.Event) { streamed = append(streamed, e) },
	})
	if err != nil || res.StopReason != agent.StopBlocked {
		t.Fatalf("result = %+v, %v", res, err)
	}
	r.bus.Flush(t.Context())
	if len(r.model.Calls()) != 0 || len(streamed) != 0 || len(r.onBus.names()) != 0 {
		t.Errorf("a blocked run did something: %d model calls, %d streamed events, bus saw %v", len(r.model.Calls()), len(streamed), r.onBus.names())
	}
}

func TestInterceptorErrorReachesTheCaller(t *testing.T) {
	r := newRig(t)
	errRate := errors.New("rate limit exceeded for tenant 7")
	limit := intercept.Func[*agent.Runtime, agent.Request, *agent.Result](
		func(ctx context.Context, rt *agent.Runtime, req agent.Request, next intercept.Next[*agent.Runtime, agent.Request, *agent.Result]) (*agent.Result, error) {
			return nil, errRate
		})
	if _, err := intercept.Wrap(r.exec, limit).Execute(t.Context(), r.rt, agent.Request{SessionID: "s"}); err != errRate {
		t.Errorf("error = %v", err)
	}
}

// The bus and the per-execution stream see the same events, in order.
func TestBusAndStreamSeeEveryEvent(t *testing.T) {
	r := newRig(t, echoTool())
	r.model.Script("s", script.Call("Echo", map[string]string{"text": "x"}), script.Text("done"))
	stream := agent.Start(t.Context(), r.exec, r.rt, agent.Request{SessionID: "s", Input: "go"})
	var names []string
	for e := range stream.Events() {
		names = append(names, string(e.Name))
	}
	res, err := stream.Result()
	if err != nil || res.Answer != "done" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	want := []string{"turn_started", "iteration_started", "llm_call_started", "llm_delta", "llm_delta", "llm_call_completed",
		"tool_exec_started", "tool_exec_completed", "iteration_started", "llm_call_started", "llm_delta", "llm_call_completed", "turn_completed"}
	if !slices.Equal(names, want) {
		t.Errorf("stream:\n got %v\nwant %v", names, want)
	}
	r.bus.Flush(t.Context())
	if got := r.onBus.names(); !slices.Equal(got, want) {
		t.Errorf("bus:\n got %v\nwant %v", got, want)
	}
	// A second range replays from the start; an early stop leaves the rest.
	n := 0
	for range stream.Events() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("early stop yielded %d", n)
	}
}

func echoTool() tool.Tool {
	return tool.New("Echo", "Echoes.", func(ctx context.Context, in echoIn) (string, error) { return "echo: " + in.Text, nil })
}

// A message the user sends while a tool runs enters the running turn at the
// next iteration boundary, beside the tool's result.
func TestQueuedMessageEntersTheRunningTurn(t *testing.T) {
	var r *rig
	typing := tool.New("Work", "Works while the user types.", func(ctx context.Context, in struct{}) (string, error) {
		r.queues.Enqueue(tool.CallFrom(ctx).SessionID, "also update the README")
		return "worked", nil
	})
	r = newRig(t, typing)
	r.model.Script("s", script.Call("Work", nil), script.Text("done, README too"))
	res, err := r.exec.Execute(t.Context(), r.rt, agent.Request{SessionID: "s", Input: "fix it"})
	if err != nil || res.Answer != "done, README too" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	last := r.model.CallsTo("s")[1].Messages
	msg := last[len(last)-1]
	if msg.Role != llm.RoleUser || len(msg.Content) != 2 || msg.Content[0].Type != llm.BlockToolResult || msg.Content[1].Text != "also update the README" {
		t.Errorf("second prompt ends with %+v", msg)
	}
	if r.queues.Depth("s") != 0 {
		t.Errorf("queue not drained")
	}
	r.bus.Flush(t.Context())
	if !slices.Contains(r.onBus.names(), "user_message_injected") {
		t.Errorf("no user_message_injected event: %v", r.onBus.names())
	}
}

// A message that arrives while the model writes its answer keeps the turn
// going instead of waiting for the next turn.
func TestQueuedMessageAfterAnswerContinuesTheTurn(t *testing.T) {
	r := newRig(t)
	first := true
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		if first {
			first = false
			r.queues.Enqueue("s", "and one more thing")
		}
		return r.model.Generate(ctx, req, onDelta)
	})
	rt, err := agent.New(agent.Definition{Name: "rig", ToolProviders: []tool.Provider{}}, agent.Collaborators{Client: client, FS: r.rt.FS(), Services: &agent.Services{Queues: r.queues}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	r.model.Script("s", script.Text("first answer"), script.Text("answer to one more thing"))
	res, _ := r.exec.Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "hello"})
	if res.StopReason != agent.StopAnswered || res.Answer != "answer to one more thing" || res.Iterations != 2 {
		t.Fatalf("result = %+v", res)
	}
	msgs := r.model.CallsTo("s")[1].Messages
	if got := msgs[len(msgs)-1]; got.Role != llm.RoleUser || got.Text() != "and one more thing" {
		t.Errorf("second prompt ends with %+v", got)
	}
}

// The queue-metrics interceptor reports the depth at turn start and the
// traffic during the turn.
func TestQueueMetricsInterceptor(t *testing.T) {
	var r *rig
	typing := tool.New("Work", "x", func(ctx context.Context, in struct{}) (string, error) {
		r.queues.Enqueue("s", "two")
		r.queues.Enqueue("s", "three")
		return "ok", nil
	})
	r = newRig(t, typing)
	r.queues.Enqueue("s", "one") // waiting before the turn starts
	r.model.Script("s", script.Call("Work", nil), script.Text("done"))
	var logs strings.Builder
	m := agent.NewQueueMetrics(r.queues, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	var turns []queue.TurnStats
	m.OnTurn = func(s queue.TurnStats) { turns = append(turns, s) }
	chain := intercept.Wrap(r.exec, m)
	if chain.Names()[0] != "queue-metrics" || m.Order() != -1000 {
		t.Errorf("names %v, order %d", chain.Names(), m.Order())
	}
	if _, err := chain.Execute(t.Context(), r.rt, agent.Request{SessionID: "s", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	want := queue.TurnStats{SessionID: "s", DepthAtStart: 1, Enqueued: 2, Dequeued: 3}
	if len(turns) != 1 || turns[0] != want {
		t.Errorf("turn stats = %+v, want %+v", turns, want)
	}
	if snap := m.Snapshot(); snap.Turns != 1 || snap.Enqueued != 2 || snap.Dequeued != 3 || snap.MaxDepthAtStart != 1 {
		t.Errorf("snapshot = %+v", snap)
	}
	if !strings.Contains(logs.String(), "level=DEBUG msg=\"queue metrics\" session=s depth_at_start=1 enqueued=2 dequeued=3") {
		t.Errorf("log = %q", logs.String())
	}
	// The listener is detached after the run.
	r.queues.Enqueue("s", "later")
	if snap := m.Snapshot(); snap.Enqueued != 2 {
		t.Errorf("counted traffic after the run: %+v", snap)
	}
}
