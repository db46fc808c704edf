package orcatest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/toolset"
)

// L4: no bleed between runtimes and sessions; forks inherit the user's
// identity; ownership keeps sessions out of each other's tasks.

var subagents = []subagent.Definition{
	{Name: "explorer", Description: "Finds things.", Prompt: "You explore."},
	{Name: "worker", Description: "Does things.", Prompt: "You work."},
}

func task(agentType, prompt string, background bool) script.Response {
	return script.Call("Task", map[string]any{"description": "d", "prompt": prompt, "subagent_type": agentType, "run_in_background": background})
}

// whoami records the identity every call it gets carries.
type whoami struct {
	mu    sync.Mutex
	calls []tool.Call
}

func (w *whoami) tool() tool.Tool {
	return tool.New("WhoAmI", "Reports identity.", func(ctx context.Context, in struct{}) (string, error) {
		c := tool.CallFrom(ctx)
		w.mu.Lock()
		w.calls = append(w.calls, *c)
		w.mu.Unlock()
		return fmt.Sprintf("session=%q exec=%s parent=%s depth=%d", c.SessionID, c.ExecutionID, c.ParentExecutionID, c.Depth), nil
	})
}

func forkNode(t *testing.T, opts ...orcatest.Option) (*orcatest.Node, *whoami) {
	w := &whoami{}
	providers := append(toolset.Default(), tool.Static("who", w.tool()))
	opts = append([]orcatest.Option{orcatest.WithDefinition(agent.Definition{Name: "parent", Subagents: subagents, ToolProviders: providers})}, opts...)
	return orcatest.NewNode(t, opts...), w
}

// A fork of a fork inherits the user's session id, never the middle
// fork's; each has its own execution id, names the execution that started
// it, and keeps its own tool state (no session of its own).
func TestL4_ForkIdentityTwoLevelsDeep(t *testing.T) {
	n, w := forkNode(t)
	n.Script("s", script.Call("WhoAmI", nil), task("explorer", "look", false), script.Text("parent done"))
	n.Script(script.ForkRoute("s", "explorer"), script.Call("WhoAmI", nil), task("worker", "work", false), script.Text("explorer done"))
	n.Script(script.ForkRoute("s", "worker"), script.Call("WhoAmI", nil), script.Text("worker done"))
	var events []event.Event
	s := n.Open("s")
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Answer != "parent done" {
		t.Fatalf("result %+v, %v", res, err)
	}
	if len(w.calls) != 3 {
		t.Fatalf("identity calls %d", len(w.calls))
	}
	top, fork, grand := w.calls[0], w.calls[1], w.calls[2]
	if top.SessionID != "s" || top.Depth != 0 {
		t.Errorf("top %+v", top)
	}
	for _, c := range []tool.Call{fork, grand} {
		if c.SessionID != "s" || c.TurnID != top.TurnID || c.Root() != top.RuntimeID || c.RuntimeID == top.RuntimeID {
			t.Errorf("fork call %+v: want the user's session %q and turn %q, root runtime %q and a runtime of its own", c.Scope, "s", top.TurnID, top.RuntimeID)
		}
		if k := c.StateKey(); k == top.StateKey() || k != "exec:"+c.ExecutionID {
			t.Errorf("fork call's state key %q, the parent's %q: a fork keeps its own state", k, top.StateKey())
		}
	}
	if fork.Depth != 1 || grand.Depth != 2 || fork.ExecutionID == grand.ExecutionID || fork.ExecutionID == top.ExecutionID {
		t.Errorf("depths %d/%d, exec ids %s %s %s", fork.Depth, grand.Depth, top.ExecutionID, fork.ExecutionID, grand.ExecutionID)
	}
	if fork.ParentExecutionID != top.ExecutionID || grand.ParentExecutionID != fork.ExecutionID || top.ParentExecutionID != "" {
		t.Errorf("parents: top %q, fork %q (want %q), grand %q (want %q)", top.ParentExecutionID, fork.ParentExecutionID, top.ExecutionID, grand.ParentExecutionID, fork.ExecutionID)
	}
	// The forks' model calls are the user's session's, on fork routes.
	for _, route := range []string{script.ForkRoute("s", "explorer"), script.ForkRoute("s", "worker")} {
		calls := n.LLM.CallsTo(route)
		if len(calls) == 0 || calls[0].Metadata.TraceID != "s" || calls[0].Metadata.Feature != llm.FeatureSubagent {
			t.Errorf("%s calls %+v", route, calls)
		}
	}
	if obs := n.LLM.CallsTo("s")[2].Observations(); len(obs) != 1 || obs[0].Content != "explorer done" {
		t.Errorf("the fork's answer is not the observation: %+v", obs)
	}
	// The parent's stream shows the forks' events, marked.
	events = append(events, n.Events()...)
	depths := map[int]bool{}
	for _, e := range events {
		depths[e.Depth] = true
		if e.SessionID != "s" {
			t.Errorf("event %s carries session %q", e.Name, e.SessionID)
		}
	}
	if !depths[1] || !depths[2] {
		t.Errorf("fork events missing from the stream: depths %v", depths)
	}
	if n.LLM.Unrouted() != 0 {
		t.Errorf("unrouted %d", n.LLM.Unrouted())
	}
}

// Forks run through the same hooks, policy and approvals as their parent,
// and their usage counts toward the invoking session's totals.
func TestL4_ForksGoThroughTheParentsControls(t *testing.T) {
	svc := agent.NewServices(nil)
	defer svc.Close()
	var started, stopped, blocked []string
	svc.Hooks.Register(hook.SubagentStart, "start", hook.On(func(ctx context.Context, p *hook.SubagentStartPayload) (*hook.Decision, error) {
		started = append(started, p.Agent+":"+p.SessionID)
		return nil, nil
	}))
	svc.Hooks.Register(hook.SubagentStop, "stop", hook.On(func(ctx context.Context, p *hook.SubagentStopPayload) (*hook.Decision, error) {
		stopped = append(stopped, p.Agent+":"+p.Answer)
		return nil, nil
	}))
	svc.Hooks.Register(hook.PreToolUse, "no-bash", hook.On(func(ctx context.Context, p *hook.PreToolUsePayload) (*hook.Decision, error) {
		if p.ToolName == "Bash" {
			blocked = append(blocked, p.SessionID)
			return &hook.Decision{Action: hook.Block, Reason: "no shell today"}, nil
		}
		return nil, nil
	}))
	asked := 0
	approver := policy.ApproverFunc(func(ctx context.Context, r policy.ApprovalRequest) (policy.Approval, error) {
		asked++
		return policy.Approval{Allow: true, Scope: policy.ScopeSession}, nil
	})
	pol, _ := policy.New(policy.ModeDefault, policy.Rules{})
	n, _ := forkNode(t, orcatest.WithServices(svc), orcatest.WithPolicy(pol, approver))
	u := llm.Usage{InputTokens: 40, OutputTokens: 2}
	forkAnswer := script.Text("wrote b")
	forkAnswer.Usage = &u
	n.Script("s", script.Call("Write", map[string]string{"file_path": "out/a.txt", "content": "a"}), task("worker", "write b", false), script.Text("done"))
	n.Script(script.ForkRoute("s", "worker"),
		script.Call("Bash", map[string]string{"command": "touch shell-ran"}),
		script.Call("Write", map[string]string{"file_path": "out/b.txt", "content": "b"}),
		forkAnswer)
	s := n.Open("s")
	s.Run(t.Context(), "go")
	if asked != 1 || n.ReadFileOr("out/b.txt", "") != "b" {
		t.Errorf("the session's approval did not reach the fork: asked %d times, b.txt %q", asked, n.ReadFileOr("out/b.txt", ""))
	}
	if len(blocked) != 1 || blocked[0] != "s" || n.ReadFileOr("shell-ran", "none") != "none" {
		t.Errorf("the PRE_TOOL_USE hook did not govern the fork: %v", blocked)
	}
	if len(started) != 1 || started[0] != "worker:s" || len(stopped) != 1 || stopped[0] != "worker:wrote b" {
		t.Errorf("subagent hooks: started %v stopped %v", started, stopped)
	}
	tot, _ := s.Totals(t.Context())
	if tot.Usage.InputTokens < 40 {
		t.Errorf("the fork's usage is not in the session's totals: %+v", tot.Usage)
	}
}

func TestL4_DepthLimit(t *testing.T) {
	n, _ := forkNode(t, orcatest.WithDefinition(agent.Definition{Name: "p", Subagents: subagents, MaxDepth: 1}))
	n.Script("s", task("explorer", "go deeper", false), script.Text("done"))
	n.Script(script.ForkRoute("s", "explorer"), task("worker", "even deeper", false), script.Text("could not"))
	n.Open("s").Run(t.Context(), "go")
	obs := n.LLM.CallsTo(script.ForkRoute("s", "explorer"))[1].Observations()
	if len(obs) != 1 || !obs[0].IsError || !strings.Contains(obs[0].Content, "nest 1 deep") {
		t.Errorf("runaway fork: %+v", obs)
	}
}

// Ownership with a SHARED subagent manager: another runtime's session
// looks into the very store that holds the task, so only the ownership
// check stands between them. (Without that check this test fails: the
// intruder would read the output and stop the task.)
func TestL4_BackgroundTaskOwnership(t *testing.T) {
	svc := agent.NewServices(nil)
	defer svc.Close()
	owner, _ := forkNode(t, orcatest.WithServices(svc), orcatest.WithDefinition(agent.Definition{Name: "owner", Subagents: subagents}))
	intruder, _ := forkNode(t, orcatest.WithServices(svc), orcatest.WithDefinition(agent.Definition{Name: "intruder", Subagents: subagents}))
	owner.Script("s", task("explorer", "background work", true), script.Text("started"))
	owner.Script(script.ForkRoute("s", "explorer"), script.Text("secret findings"))
	first := owner.Open("s")
	first.Run(t.Context(), "go")
	first.Close(t.Context()) // one writer at a time: the checks below open it again
	started := owner.LLM.CallsTo("s")[1].Observations()[0].Content
	id := strings.Fields(strings.TrimPrefix(started, "Started background task "))[0]
	if !strings.HasPrefix(id, "task_") {
		t.Fatalf("Task said %q", started)
	}
	read := func(n *orcatest.Node, session string, tool string, input any) llm.Block {
		n.Script(session, script.Call(tool, input), script.Text("ok"))
		s := n.Open(session)
		defer s.Close(t.Context())
		s.Run(t.Context(), "check")
		calls := n.LLM.CallsTo(session)
		return calls[len(calls)-1].Observations()[0]
	}
	// Another runtime, same session id, shared manager: no such task.
	if o := read(intruder, "s", "AgentOutput", map[string]any{"task_id": id}); !o.IsError || !strings.Contains(o.Content, "no such task") || strings.Contains(o.Content, "secret") {
		t.Errorf("another runtime read the task: %+v", o)
	}
	if o := read(intruder, "s", "TaskStop", map[string]any{"task_id": id}); !o.IsError || !strings.Contains(o.Content, "no such task") {
		t.Errorf("another runtime stopped the task: %+v", o)
	}
	// Another session of the same runtime: no such task either.
	if o := read(owner, "other", "AgentOutput", map[string]any{"task_id": id}); !o.IsError || strings.Contains(o.Content, "secret") {
		t.Errorf("another session read the task: %+v", o)
	}
	// The owner reads it.
	if o := read(owner, "s", "AgentOutput", map[string]any{"task_id": id, "block": true}); o.IsError || !strings.Contains(o.Content, "secret findings") {
		t.Errorf("the owner could not read its task: %+v", o)
	}
}

func TestL4_TaskStopStopsABackgroundFork(t *testing.T) {
	wait := tool.New("Wait", "Waits.", func(ctx context.Context, in struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	providers := append(toolset.Default(), tool.Static("w", wait))
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "p", Subagents: subagents, ToolProviders: providers}))
	n.Script("s", task("worker", "wait forever", true), script.Text("started"))
	n.Script(script.ForkRoute("s", "worker"), script.Call("Wait", nil), script.Text("never"))
	n.LLM.AllowFallback(script.Text("fallback"))
	s := n.Open("s")
	s.Run(t.Context(), "go")
	started := n.LLM.CallsTo("s")[1].Observations()[0].Content
	id := strings.Fields(strings.TrimPrefix(started, "Started background task "))[0]
	n.Script("s", script.Call("TaskStop", map[string]any{"task_id": id}), script.Call("AgentOutput", map[string]any{"task_id": id}), script.Text("ok"))
	s.Run(t.Context(), "stop it")
	calls := n.LLM.CallsTo("s")
	if o := calls[3].Observations()[0]; o.IsError || !strings.Contains(o.Content, "Stopped") {
		t.Errorf("TaskStop: %+v", o)
	}
	if o := calls[4].Observations()[0]; !strings.Contains(o.Content, "was stopped") {
		t.Errorf("AgentOutput after stop: %+v", o)
	}
}

// Between runtimes: registries, files and approvals do not bleed.
func TestL4_RuntimesDoNotBleed(t *testing.T) {
	extra := tool.New("OnlyInA", "x", func(ctx context.Context, in struct{}) (string, error) { return "a", nil })
	a := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{Name: "a", ToolProviders: append(toolset.Default(), tool.Static("x", extra))}))
	b := orcatest.NewNode(t)
	if _, ok := b.Runtime.Tools().Lookup("OnlyInA"); ok {
		t.Error("b's registry has a's tool")
	}
	a.Script("s", script.Call("Write", map[string]string{"file_path": "mine.txt", "content": "a"}), script.Text("ok"))
	a.Run(t.Context(), "s", "go")
	b.Script("s", script.Call("Read", map[string]string{"file_path": "mine.txt"}), script.Text("ok"))
	b.Run(t.Context(), "s", "go")
	if o := b.LLM.CallsTo("s")[1].Observations()[0]; !o.IsError {
		t.Errorf("b sees a's file: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(b.Root, "mine.txt")); err == nil {
		t.Error("a's write landed in b's workspace")
	}
}

// Between sessions of one runtime: todo lists and transcripts do not bleed,
// and a call without any context id gets no shared fallback list.
func TestL4_SessionsDoNotBleed(t *testing.T) {
	n := orcatest.NewNode(t)
	todo := map[string]any{"todos": []map[string]string{{"content": "secret plan", "status": "pending", "activeForm": "planning"}}}
	n.Script("a", script.Call("TodoWrite", todo), script.Text("ok"))
	n.Script("b", script.Text("nothing"))
	n.Open("a").Run(t.Context(), "plan")
	n.Open("b").Run(t.Context(), "hello")
	tw, _ := n.Runtime.Tools().Lookup("TodoWrite")
	if list, ok := builtin.Todos(tw, "a"); !ok || len(list) != 1 {
		t.Errorf("a's list %v", list)
	}
	if list, ok := builtin.Todos(tw, "b"); ok || len(list) != 0 {
		t.Errorf("b sees a list: %v", list)
	}
	if msgs := n.LLM.CallsTo("b")[0].Messages; len(msgs) != 1 {
		t.Errorf("b's prompt carries a's transcript: %+v", msgs)
	}
	raw, _ := json.Marshal(todo)
	if res := tool.Run(t.Context(), tw, &tool.Call{Name: "TodoWrite", Input: raw}); !res.IsError {
		t.Error("a call with no session and no execution got a todo list (a shared fallback bucket)")
	}
}

// Load: 64 concurrent sessions over 4 runtimes, each with its own route,
// tools touching files, under -race; every session's transcript and files
// are exactly its own, and no goroutine is left (goleak in TestMain).
func TestL4_ConcurrentSessions(t *testing.T) {
	svc := agent.NewServices(nil)
	defer svc.Close()
	client := orcatest.NewScriptedClient(t)
	var nodes []*orcatest.Node
	for i := range 4 {
		nodes = append(nodes, orcatest.NewNode(t, orcatest.WithServices(svc), orcatest.WithClient(client), orcatest.WithDefinition(agent.Definition{Name: fmt.Sprint("rt", i)})))
	}
	var wg sync.WaitGroup
	for i := range 64 {
		n := nodes[i%4]
		id := fmt.Sprintf("load-%02d", i)
		client.Script(id,
			script.Call("Write", map[string]string{"file_path": id + "/note.txt", "content": id}),
			script.Call("Read", map[string]string{"file_path": id + "/note.txt"}),
			script.Text("done "+id))
		wg.Go(func() {
			res, err := n.Open(id).Run(context.Background(), "write your note "+id)
			if err != nil || res.Answer != "done "+id {
				t.Errorf("%s: %+v %v", id, res, err)
			}
		})
	}
	wg.Wait()
	for i := range 64 {
		n := nodes[i%4]
		id := fmt.Sprintf("load-%02d", i)
		if got := n.ReadFile(id + "/note.txt"); got != id {
			t.Errorf("%s/note.txt = %q", id, got)
		}
		recs := records(t, n, id, true)
		for _, r := range recs {
			for _, b := range r.Message.Content {
				text := b.Text + b.Content + string(b.Input)
				if strings.Contains(text, "load-") && !strings.Contains(text, id) {
					t.Errorf("%s's transcript holds another session's content: %q", id, text)
				}
			}
		}
		if len(recs) != 6 {
			t.Errorf("%s has %d records", id, len(recs))
		}
	}
	if client.Unrouted() != 0 {
		t.Errorf("unrouted %d", client.Unrouted())
	}
}

// A foreground fork's tool calls are the invoking session's: they are in
// the session's stored totals, so the session's tool-call budget counts
// them in the next turn too.
func TestL4_ForkToolCallsCountTowardTheSessionsBudget(t *testing.T) {
	n, _ := forkNode(t)
	n.Script("s", task("worker", "look twice", false), script.Text("done"), script.Text("should not be asked"))
	n.Script(script.ForkRoute("s", "worker"), script.Call("WhoAmI", nil), script.Call("WhoAmI", nil), script.Text("looked"))
	s := n.Open("s")
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("turn 1: %+v, %v", res, err)
	}
	tot, err := s.Totals(t.Context())
	if err != nil || tot.ToolCalls != 3 {
		t.Fatalf("stored tool calls %d, want 3 (Task and the fork's two): %v", tot.ToolCalls, err)
	}
	if err := s.SetBudget(t.Context(), &budget.Limits{ToolCalls: 3}); err != nil {
		t.Fatal(err)
	}
	res, err = s.Run(t.Context(), "again")
	if err != nil || res.StopReason != agent.StopBudgetExhausted || res.BudgetDimension != budget.ToolCalls {
		t.Errorf("turn 2: %s (%s), %v; want the tool-call budget exhausted", res.StopReason, res.BudgetDimension, err)
	}
	if got := len(n.LLM.CallsTo("s")); got != 2 {
		t.Errorf("the model was asked %d times, want 2 (turn 2 never reached it)", got)
	}
}

// The session's feed is one ordered stream of everything the session does:
// its own start and end, its turns, its foreground forks within their turn
// and its background forks as they run, also between turns — one call at
// a time (the race detector watches the unlocked slice).
func TestL4_SessionFeedIncludesForks(t *testing.T) {
	n, _ := forkNode(t)
	n.Script("s", task("worker", "look", false), task("explorer", "look later", true), script.Text("started it"),
		script.Call("AgentOutput", map[string]any{"task_id": "task_1", "block": true}), script.Text("read it"))
	n.Script(script.ForkRoute("s", "worker"), script.Call("WhoAmI", nil), script.Text("worker done"))
	n.Script(script.ForkRoute("s", "explorer"), script.Call("WhoAmI", nil), script.Text("explorer done"))
	var feed []event.Event
	s, err := n.Router.Open(t.Context(), "s", session.OpenOptions{OnEvent: func(e event.Event) { feed = append(feed, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Run(t.Context(), "read the task"); err != nil || res.Answer != "read it" {
		t.Fatalf("turn 2: %+v, %v", res, err)
	}
	s.Close(t.Context())
	var names []string
	index := func(pred func(e event.Event) bool) int { return slices.IndexFunc(feed, pred) }
	for _, e := range feed {
		names = append(names, fmt.Sprintf("%d:%s", e.Depth, e.Name))
	}
	if len(feed) == 0 || feed[0].Name != event.SessionStarted || feed[len(feed)-1].Name != event.SessionEnded {
		t.Fatalf("the feed does not begin with session_started and end with session_ended: %v", names)
	}
	started := func(agent string) func(event.Event) bool {
		return func(e event.Event) bool {
			d, ok := e.Data.(*event.SubagentData)
			return ok && e.Name == event.SubagentStarted && d.Agent == agent
		}
	}
	completed := func(agent string) func(event.Event) bool {
		return func(e event.Event) bool {
			d, ok := e.Data.(*event.SubagentData)
			return ok && e.Name == event.SubagentCompleted && d.Agent == agent && d.StopReason == "answered"
		}
	}
	turnEnd := func(k int) int { // the index of the k-th turn_completed of depth 0
		for i, e := range feed {
			if e.Depth == 0 && e.Name == event.TurnCompleted {
				if k--; k == 0 {
					return i
				}
			}
		}
		return -1
	}
	worker, workerDone := index(started("worker")), index(completed("worker"))
	bg, bgDone := index(started("explorer")), index(completed("explorer"))
	agentOutput := index(func(e event.Event) bool {
		d, ok := e.Data.(*event.ToolData)
		return ok && e.Name == event.ToolExecCompleted && d.ToolName == "AgentOutput"
	})
	switch {
	case worker < 0 || workerDone < worker || workerDone > turnEnd(1):
		t.Errorf("the foreground fork is not inside turn 1: %v", names)
	case bg < 0 || bgDone < bg || agentOutput < 0 || bgDone > agentOutput:
		t.Errorf("the background fork's events are not in the feed before AgentOutput read its answer: %v", names)
	}
	if d := feed[bg].Data.(*event.SubagentData); !d.Background || d.TaskID != "task_1" || d.ToolUseID == "" || feed[bg].ParentExecutionID == "" || feed[bg].Depth != 1 {
		t.Errorf("subagent_started of the background fork: %+v in %+v", d, feed[bg].Scope)
	}
}
