package orcatest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
)

// L3: every way a turn ends, and where every hook fires.

func usage(r script.Response, in int64) script.Response {
	r.Usage = &llm.Usage{InputTokens: in}
	return r
}

func TestL3_Endings(t *testing.T) {
	echo := script.Call("Bash", map[string]string{"command": "true"})
	for _, tc := range []struct {
		name   string
		def    agent.Definition
		limits *budget.Limits
		script []script.Response
		want   agent.StopReason
		dim    budget.Dimension
	}{
		{"answer", agent.Definition{}, nil, []script.Response{script.Text("done")}, agent.StopAnswered, ""},
		{"max iterations", agent.Definition{MaxIterations: 2}, nil, []script.Response{echo, echo}, agent.StopMaxIterations, ""},
		{"tokens", agent.Definition{}, &budget.Limits{Tokens: 150}, []script.Response{usage(echo, 100), usage(echo, 100), script.Text("x")}, agent.StopBudgetExhausted, budget.Tokens},
		{"cost", agent.Definition{Prices: budget.Prices{"script": {Input: 10_000}}}, &budget.Limits{CostUSD: 1.5}, []script.Response{usage(echo, 100), usage(echo, 100), script.Text("x")}, agent.StopBudgetExhausted, budget.Cost},
		{"tool calls", agent.Definition{}, &budget.Limits{ToolCalls: 2}, []script.Response{echo, echo, echo}, agent.StopBudgetExhausted, budget.ToolCalls},
		{"prompt too long, recovered", agent.Definition{KeepTurns: 1}, nil, []script.Response{script.Fail(llm.KindPromptTooLong, "too long"), script.Text("recovered")}, agent.StopAnswered, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := tc.def
			def.Name = "l3"
			n := orcatest.NewNode(t, orcatest.WithDefinition(def))
			n.Script("s", script.Text("earlier answer"))
			n.Script("s", tc.script...)
			n.Script(script.CompactionRoute("s"), script.Text("summary"))
			n.LLM.AllowFallback(script.Text("unscripted")) // the compaction route may go unused
			s := n.Open("s")
			s.Run(t.Context(), "earlier turn")
			if tc.limits != nil {
				s.SetBudget(t.Context(), tc.limits)
			}
			res, _ := s.Run(t.Context(), "go")
			if res.StopReason != tc.want || res.BudgetDimension != tc.dim {
				t.Errorf("ended %s/%s (%v), want %s/%s", res.StopReason, res.BudgetDimension, res.Err, tc.want, tc.dim)
			}
		})
	}
}

// The wall-time budget counts the session's earlier turns too, and cancels
// the call running when it runs out.
func TestL3_WallTimeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := tool.New("Slow", "Takes its time.", func(ctx context.Context, in struct {
			Seconds int `json:"seconds"`
		}) (string, error) {
			select {
			case <-time.After(time.Duration(in.Seconds) * time.Second):
				return "finished", nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		})
		n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "w", ToolProviders: []tool.Provider{tool.Static("s", slow)}}))
		n.Script("s", script.Call("Slow", map[string]int{"seconds": 3}), script.Text("first done"),
			script.Call("Slow", map[string]int{"seconds": 30}), script.Text("unreachable"))
		s := n.Open("s")
		s.SetBudget(t.Context(), &budget.Limits{WallTime: 5 * time.Second})
		if res, _ := s.Run(t.Context(), "one"); res.StopReason != agent.StopAnswered {
			t.Fatalf("first turn ended %s", res.StopReason)
		}
		start := time.Now()
		res, _ := s.Run(t.Context(), "two")
		if res.StopReason != agent.StopBudgetExhausted || res.BudgetDimension != budget.WallTime {
			t.Errorf("ended %s/%s", res.StopReason, res.BudgetDimension)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("second turn took %v, want the 2s left", took)
		}
		tot, _ := s.Totals(t.Context())
		if tot.WallTime != 5*time.Second {
			t.Errorf("wall time spent %v", tot.WallTime)
		}
	})
}

// An interrupt names a turn: the running one ends as interrupted; a stale
// or unknown id interrupts nothing.
func TestL3_InterruptByTurnID(t *testing.T) {
	started := make(chan string, 1)
	var s interface{ CurrentTurn() string }
	wait := tool.New("Wait", "Waits.", func(ctx context.Context, in struct{}) (string, error) {
		started <- s.CurrentTurn()
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "i", ToolProviders: []tool.Provider{tool.Static("w", wait)}}))
	n.Script("s", script.Text("first"), script.Call("Wait", nil), script.Text("after"))
	live := n.Open("s")
	s = live
	first, _ := live.Run(t.Context(), "one")
	done := make(chan *agent.Result)
	go func() {
		res, _ := live.Run(context.Background(), "two")
		done <- res
	}()
	running := <-started
	if live.Interrupt(first.TurnID) || live.Interrupt("turn_unknown") {
		t.Error("a stale or unknown turn id interrupted something")
	}
	if !live.Interrupt(running) {
		t.Fatal("interrupting the running turn failed")
	}
	res := <-done
	if res.StopReason != agent.StopInterrupted || res.TurnID != running {
		t.Errorf("ended %s (turn %s)", res.StopReason, res.TurnID)
	}
	if live.Interrupt(running) {
		t.Error("an interrupt for the finished turn reported success")
	}
	if next, _ := live.Run(t.Context(), "three"); next.Answer != "after" {
		t.Errorf("the session did not go on: %+v", next)
	}
}

// Every hook built so far fires at its point, in the order of a session.
func TestL3_HookFiringPoints(t *testing.T) {
	svc := agent.NewServices(nil)
	defer svc.Close()
	var mu sync.Mutex
	var fired []string
	for _, name := range []hook.Name{hook.SessionStart, hook.SessionEnd, hook.UserPromptSubmit, hook.TurnStart, hook.PreToolUse,
		hook.PermissionRequest, hook.PostToolUse, hook.PostToolUseFailure, hook.PreCompact, hook.Stop} {
		svc.Hooks.Register(name, "witness", hook.HandlerFunc(func(ctx context.Context, p hook.Payload) (*hook.Decision, error) {
			mu.Lock()
			fired = append(fired, string(p.Hook()))
			mu.Unlock()
			if p.Hook() == hook.PermissionRequest {
				return &hook.Decision{Action: hook.Allow}, nil
			}
			return nil, nil
		}))
	}
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	n := orcatest.NewNode(t, orcatest.WithServices(svc), orcatest.WithPolicy(pol, nil), orcatest.WithDefinition(agent.Definition{Name: "h", KeepTurns: 1}))
	n.Script("s",
		script.Call("Write", map[string]string{"file_path": "a.txt", "content": "x"}),
		script.Call("Read", map[string]string{"file_path": "missing.txt"}),
		script.Text("done"))
	n.Script(script.CompactionRoute("s"), script.Text("summary"))
	s := n.Open("s")
	s.Run(t.Context(), "go")
	s.Run(t.Context(), "/compact")
	s.Close(t.Context())
	want := []string{"SESSION_START", "USER_PROMPT_SUBMIT", "TURN_START",
		"PRE_TOOL_USE", "PERMISSION_REQUEST", "POST_TOOL_USE",
		"PRE_TOOL_USE", "POST_TOOL_USE_FAILURE",
		"STOP", "PRE_COMPACT", "SESSION_END"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(fired, want) {
		t.Errorf("fired:\n %s\nwant\n %s", strings.Join(fired, " "), strings.Join(want, " "))
	}
}

// The interceptors see every execution of a session: a manual compaction
// too, and a streamed turn. One that blocks runs blocks them: no model
// call, no event, nothing recorded.
func TestL3_InterceptorsSeeCompactionsAndStreams(t *testing.T) {
	n := orcatest.NewNode(t)
	n.LLM.AllowFallback(script.Text("should not be asked"))
	var seen []string
	deny := agent.InterceptorFunc(func(ctx context.Context, rt *agent.Runtime, req agent.Request, next agent.Next) (*agent.Result, error) {
		seen = append(seen, fmt.Sprintf("compact=%v input=%q", req.Compact, req.Input))
		return &agent.Result{StopReason: agent.StopBlocked, Reason: "the quota is used up"}, nil
	})
	exec := intercept.Wrap(n.Executor, deny)
	var events []event.Event
	s, err := session.NewRouter(n.Runtime, n.Store, exec).Open(t.Context(), "s", session.OpenOptions{OnEvent: func(e event.Event) {
		if e.Name != event.SessionStarted { // the session's own, outside any run
			events = append(events, e)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	res, err := s.Run(t.Context(), "/compact keep the paths")
	if err != nil || res.StopReason != agent.StopBlocked {
		t.Errorf("/compact: %+v, %v; want blocked", res, err)
	}
	stream := agent.Start(t.Context(), exec, n.Runtime, agent.Request{SessionID: "s2", Input: "go"})
	for e := range stream.Events() {
		events = append(events, e)
	}
	if res, err := stream.Result(); err != nil || res.StopReason != agent.StopBlocked {
		t.Errorf("stream: %+v, %v; want blocked", res, err)
	}
	if want := []string{`compact=true input="keep the paths"`, `compact=false input="go"`}; !slices.Equal(seen, want) {
		t.Errorf("the interceptor saw %q, want %q", seen, want)
	}
	if calls := n.LLM.Calls(); len(calls) != 0 || len(events) != 0 {
		t.Errorf("a blocked run reached the model (%d calls) or emitted %d events", len(calls), len(events))
	}
}

// A long autonomous turn — 300 tool calls, each a 2,000-character result,
// in a 20,000-token context window — finishes: old results are cleared,
// the turn's oldest exchanges summarised (its input kept verbatim), and no
// request ever separates a tool call from its result.
func TestL3_LongTurnFitsTheContext(t *testing.T) {
	fetch := tool.New("Fetch", "Fetches page n.", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return strings.Repeat(fmt.Sprintf("page %03d ", in.N), 222), nil // 1,998 characters
	}, tool.ReadOnly())
	const calls = 300
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{
		Name: "long", ContextWindow: 20_000, CompactAt: 0.6, MaxIterations: calls + 5,
		ToolProviders: []tool.Provider{tool.Static("fetch", fetch)},
	}))
	var steps []script.Response
	for i := range calls {
		steps = append(steps, script.Call("Fetch", map[string]int{"n": i}))
	}
	n.Script("s", append(steps, script.Text("all fetched"))...)
	n.LLM.AllowFallback(script.Text("Fetched the pages so far; nothing failed."))
	s := n.Open("s")
	res, err := s.Run(t.Context(), "Fetch pages 0 to 299 and tell me when done.")
	if err != nil || res.StopReason != agent.StopAnswered || res.ToolCalls != calls {
		t.Fatalf("%s after %d tool calls: %v %v", res.StopReason, res.ToolCalls, err, res.Err)
	}
	for i, call := range n.LLM.CallsTo("s") {
		chars := 0
		for j, m := range call.Messages {
			for _, b := range m.Content {
				chars += len(b.Text) + len(b.Content) + len(b.Input)
				if b.Type == llm.BlockToolResult && (j == 0 || !slices.ContainsFunc(call.Messages[j-1].ToolUses(), func(u llm.Block) bool { return u.ID == b.ToolUseID })) {
					t.Fatalf("request %d: the result of %s without its call", i, b.ToolUseID)
				}
			}
			if uses := m.ToolUses(); len(uses) > 0 && (j+1 >= len(call.Messages) || len(call.Messages[j+1].Content) < len(uses)) {
				t.Fatalf("request %d: message %d's calls without their results", i, j)
			}
		}
		if chars/4 > 20_000 {
			t.Fatalf("request %d is about %d tokens, over the window", i, chars/4)
		}
		if got := call.Messages[0].Content[0].Text; got != "Fetch pages 0 to 299 and tell me when done." {
			t.Fatalf("request %d lost the turn's input: %q", i, got)
		}
	}
	kinds := map[string]int{}
	for _, e := range n.Events() {
		if d, ok := e.Data.(*event.CompactionData); ok && e.Name == event.CompactionCompleted && d.Error == "" && d.Skipped == "" {
			kinds[d.Kind]++
		}
	}
	t.Logf("compactions %v in %d requests", kinds, len(n.LLM.CallsTo("s")))
	if kinds[agent.KindClear] == 0 || kinds[agent.KindTurnSummary] == 0 || len(n.LLM.CallsTo(script.CompactionRoute("s"))) != kinds[agent.KindTurnSummary] {
		t.Errorf("compactions %v, summariser calls %d", kinds, len(n.LLM.CallsTo(script.CompactionRoute("s"))))
	}
	// The store keeps every result whole, the compacted records included.
	recs, _ := n.Store.Records(t.Context(), "s", store.RecordFilter{IncludeCompacted: true})
	whole := 0
	for _, r := range recs {
		for _, b := range r.Message.Content {
			if b.Type == llm.BlockToolResult && len(b.Content) == 9*222 {
				whole++
			}
		}
	}
	if whole < calls {
		t.Errorf("the store keeps %d whole results of %d", whole, calls)
	}
}
