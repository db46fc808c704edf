package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

type echoIn struct {
	Text string `json:"text"`
}

// testTools is a provider of small tools whose effects are easy to see.
func testTools(calls *[]string, mu *sync.Mutex, blocked chan<- struct{}) tool.Provider {
	record := func(s string) {
		mu.Lock()
		*calls = append(*calls, s)
		mu.Unlock()
	}
	return tool.Static("test",
		tool.New("Echo", "Echoes text.", func(ctx context.Context, in echoIn) (string, error) {
			record("Echo:" + in.Text)
			return "echo: " + in.Text, nil
		}),
		tool.New("Fail", "Always fails.", func(ctx context.Context, in struct{}) (string, error) {
			record("Fail")
			return "", errors.New("the disk is on fire")
		}),
		tool.New("Panic", "Panics.", func(ctx context.Context, in struct{}) (string, error) {
			record("Panic")
			panic("boom")
		}),
		tool.New("Block", "Waits until cancelled.", func(ctx context.Context, in struct{}) (string, error) {
			record("Block")
			blocked <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}),
	)
}

// blocked receives a value each time the Block tool starts waiting.
var blocked = make(chan struct{}, 1)

func newNode(t *testing.T) (*orcatest.Node, func() []string) {
	var mu sync.Mutex
	var calls []string
	n := orcatest.NewNode(t, orcatest.WithDefinition(agent.Definition{
		Name:          "exec-test",
		SystemPrompt:  "be brief",
		MaxIterations: 5,
		ToolProviders: []tool.Provider{testTools(&calls, &mu, blocked)},
	}))
	return n, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), calls...)
	}
}

func TestAnswerWithoutTools(t *testing.T) {
	n, _ := newNode(t)
	n.Script("s", script.Text("hello"))
	res := n.Run(t.Context(), "s", "hi")
	if res.StopReason != agent.StopAnswered || res.Answer != "hello" || res.Iterations != 1 || res.ToolCalls != 0 || res.Err != nil {
		t.Fatalf("result = %+v", res)
	}
	if len(res.Messages) != 2 || res.Messages[0].Text() != "hi" || res.Messages[1].Role != llm.RoleAssistant {
		t.Errorf("messages = %+v", res.Messages)
	}
	call := n.LLM.CallsTo("s")[0]
	if call.System != "be brief" || call.Metadata.Feature != llm.FeatureAgent || call.Metadata.Component != "exec-test" || call.Metadata.TraceID != "s" {
		t.Errorf("model call = %+v", call)
	}
}

// A response may carry text and several tool calls: every call runs, in
// order, and each gets its own observation in the next prompt.
func TestTextAndSeveralToolCalls(t *testing.T) {
	n, calls := newNode(t)
	n.Script("s",
		script.Response{Text: "Working on it.", ToolCalls: []script.ToolCall{
			{ID: "a", Name: "Echo", Input: json.RawMessage(`{"text":"one"}`)},
			{ID: "b", Name: "Fail"},
			{ID: "c", Name: "Nope", Input: json.RawMessage(`{}`)},
			{ID: "d", Name: "Echo", Input: json.RawMessage(`{"text":7}`)},
			{ID: "e", Name: "Echo", InputRaw: ptr(`{"text":`)},
			{ID: "f", Name: "Panic"},
			{ID: "g", Name: "Echo", Input: json.RawMessage(`{"text":"two"}`)},
		}},
		script.Text("done"),
	)
	res := n.Run(t.Context(), "s", "go")
	if res.StopReason != agent.StopAnswered || res.Answer != "done" || res.Iterations != 2 || res.ToolCalls != 7 {
		t.Fatalf("result = %+v", res)
	}
	if got, want := strings.Join(calls(), ","), "Echo:one,Fail,Panic,Echo:two"; got != want {
		t.Errorf("tools ran %s, want %s", got, want)
	}
	obs := n.LLM.CallsTo("s")[1].Observations()
	want := []struct {
		id, contains string
		isErr        bool
	}{
		{"a", "echo: one", false},
		{"b", "the disk is on fire", true},
		{"c", `unknown tool "Nope"`, true},
		{"d", "at /text", true},
		{"e", "not valid JSON", true},
		{"f", "panic: boom", true},
		{"g", "echo: two", false},
	}
	if len(obs) != len(want) {
		t.Fatalf("next prompt carries %d observations, want %d: %+v", len(obs), len(want), obs)
	}
	for i, w := range want {
		if obs[i].ToolUseID != w.id || obs[i].IsError != w.isErr || !strings.Contains(obs[i].Content, w.contains) {
			t.Errorf("observation %d = %+v, want id %s, is_error %v, containing %q", i, obs[i], w.id, w.isErr, w.contains)
		}
	}
	if !strings.Contains(obs[2].Content, "Echo") {
		t.Errorf("unknown-tool observation should list the available tools: %q", obs[2].Content)
	}
}

func ptr[T any](v T) *T { return &v }

func TestMaxIterations(t *testing.T) {
	n, calls := newNode(t)
	for i := range 5 {
		n.Script("s", script.Call("Echo", map[string]string{"text": fmt.Sprint(i)}))
	}
	res := n.Run(t.Context(), "s", "loop forever")
	if res.StopReason != agent.StopMaxIterations || res.Iterations != 5 || res.ToolCalls != 5 || res.Err != nil {
		t.Fatalf("result = %+v", res)
	}
	if len(calls()) != 5 {
		t.Errorf("tools ran %d times, want 5", len(calls()))
	}
	// Every tool use of the turn has its result: the transcript can be sent
	// again.
	last := res.Messages[len(res.Messages)-1]
	if last.Role != llm.RoleUser || len(last.Content) != 1 || last.Content[0].Type != llm.BlockToolResult {
		t.Errorf("last message = %+v, want the tool result of the last call", last)
	}
}

func TestScriptUsedUpFailsTheTurn(t *testing.T) {
	n, _ := newNode(t)
	n.LLM.OnMiss(nil) // this test expects the miss
	n.Script("s", script.Call("Echo", map[string]string{"text": "x"}))
	res := n.Run(t.Context(), "s", "go")
	if res.StopReason != agent.StopFailed || !errors.Is(res.Err, script.ErrExhausted) || !strings.Contains(res.Err.Error(), `"s"`) {
		t.Fatalf("result = %+v", res)
	}
	if res.ToolCalls != 1 {
		t.Errorf("tool calls = %d, want 1", res.ToolCalls)
	}
}

// Cancelling the context ends the turn promptly; the blocked tool returns,
// no goroutine is left (goleak in TestMain), and the transcript stays valid.
func TestCancelEndsTurn(t *testing.T) {
	n, calls := newNode(t)
	n.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "a", Name: "Block"}, {ID: "b", Name: "Echo", Input: json.RawMessage(`{"text":"never"}`)}}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *agent.Result)
	go func() { done <- n.Run(ctx, "s", "wait") }()
	<-blocked
	cancel()
	res := <-done
	if res.StopReason != agent.StopFailed || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("result = %+v", res)
	}
	if got := calls(); len(got) != 1 {
		t.Errorf("tools ran %v; the second call must not run after cancellation", got)
	}
	results := res.Messages[len(res.Messages)-1].Content
	if len(results) != 2 || !results[1].IsError || !strings.Contains(results[1].Content, "cancelled") {
		t.Errorf("results = %+v, want both uses answered, the second as not run", results)
	}
}

// Retryable provider errors are retried with backoff; the fake clock of a
// synctest bubble makes the wait instant.
func TestRetryableErrorsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNode(t)
		n.Script("s", script.Fail(llm.KindRateLimited, "slow down"), script.Fail(llm.KindOverloaded, "busy"), script.Text("finally"))
		start := time.Now()
		res := n.Run(t.Context(), "s", "hi")
		if res.StopReason != agent.StopAnswered || res.Answer != "finally" {
			t.Fatalf("result = %+v", res)
		}
		// 1s and 2s, each with ±20% jitter.
		if waited := time.Since(start); waited < 2400*time.Millisecond || waited > 3600*time.Millisecond {
			t.Errorf("backoff waited %v, want 1s + 2s ± 20%%", waited)
		}
		failed := n.Events(event.LLMCallFailed)
		if len(failed) != 2 || !failed[0].Data.(*event.LLMCallData).Retrying {
			t.Errorf("llm_call_failed events = %+v", failed)
		}
	})
}

func TestBackoffHonoursRetryAfterAndCaps(t *testing.T) {
	hinted := &llm.Error{Kind: llm.KindRateLimited, RetryAfter: 7 * time.Second}
	if got := agent.Backoff(1, hinted); got != 7*time.Second {
		t.Errorf("Retry-After 7s: waited %v", got)
	}
	if got := agent.Backoff(1, &llm.Error{Kind: llm.KindRateLimited, RetryAfter: time.Hour}); got != time.Minute {
		t.Errorf("Retry-After 1h: waited %v, want the 1m cap", got)
	}
	seen := map[time.Duration]bool{}
	for range 50 {
		d := agent.Backoff(10, llm.ErrOverloaded)
		if d < 24*time.Second || d > 36*time.Second {
			t.Fatalf("attempt 10 waited %v, want 30s ± 20%%", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Error("backoff has no jitter")
	}
}

func TestNonRetryableErrorFailsAtOnce(t *testing.T) {
	n, _ := newNode(t)
	n.Script("s", script.Fail(llm.KindAuthentication, "bad key"), script.Text("unused"))
	res := n.Run(t.Context(), "s", "hi")
	if res.StopReason != agent.StopFailed || !errors.Is(res.Err, llm.ErrAuthentication) {
		t.Fatalf("result = %+v", res)
	}
	if got := len(n.LLM.CallsTo("s")); got != 1 {
		t.Errorf("calls = %d, want 1", got)
	}
}

func TestRetriesGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := newNode(t)
		n.Script("s", script.Fail(llm.KindOverloaded, "1"), script.Fail(llm.KindOverloaded, "2"), script.Fail(llm.KindOverloaded, "3"))
		res := n.Run(t.Context(), "s", "hi")
		if res.StopReason != agent.StopFailed || !errors.Is(res.Err, llm.ErrOverloaded) {
			t.Fatalf("result = %+v", res)
		}
		if got := len(n.LLM.CallsTo("s")); got != 1+agent.DefaultMaxRetries {
			t.Errorf("calls = %d, want %d", got, 1+agent.DefaultMaxRetries)
		}
	})
}

// Concurrent executions on one runtime are safe and do not mix sessions.
func TestConcurrentExecutions(t *testing.T) {
	n, _ := newNode(t)
	const sessions = 8
	for i := range sessions {
		id := fmt.Sprint("s", i)
		n.Script(id, script.Call("Echo", map[string]string{"text": id}), script.Text("answer "+id))
	}
	var wg sync.WaitGroup
	for i := range sessions {
		id := fmt.Sprint("s", i)
		wg.Go(func() {
			res := n.Run(context.Background(), id, "go")
			if res.Answer != "answer "+id {
				t.Errorf("%s: result %+v", id, res)
			}
			if obs := n.LLM.CallsTo(id)[1].Observations(); len(obs) != 1 || obs[0].Content != "echo: "+id {
				t.Errorf("%s observed %+v", id, obs)
			}
		})
	}
	wg.Wait()
}

func TestEventsFrameTheTurn(t *testing.T) {
	n, _ := newNode(t)
	n.Script("s", script.Call("Echo", map[string]string{"text": "x"}), script.Text("ok"))
	res := n.Run(t.Context(), "s", "go")
	evs := n.Events()
	var names []string
	for _, e := range evs {
		names = append(names, string(e.Name))
		if e.SessionID != "s" || e.TurnID != res.TurnID || e.RuntimeID != n.Runtime.ID() || e.ExecutionID != res.ExecutionID {
			t.Errorf("event %s has ids %s/%s/%s/%s", e.Name, e.RuntimeID, e.SessionID, e.TurnID, e.ExecutionID)
		}
	}
	want := "turn_started,iteration_started,llm_call_started,llm_delta,llm_delta,llm_call_completed,tool_exec_started,tool_exec_completed," +
		"iteration_started,llm_call_started,llm_delta,llm_call_completed,turn_completed"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	done := evs[len(evs)-1].Data.(*event.TurnCompletedData)
	if done.StopReason != "answered" || done.Answer != "ok" || done.ToolCalls != 1 {
		t.Errorf("turn_completed = %+v", done)
	}
	line, err := json.Marshal(evs[7])
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]any
	if err := json.Unmarshal(line, &flat); err != nil {
		t.Fatal(err)
	}
	if flat["name"] != "tool_exec_completed" || flat["tool_name"] != "Echo" || flat["output"] != "echo: x" || flat["is_error"] != false || flat["session_id"] != "s" {
		t.Errorf("tool event JSON = %s", line)
	}
}

func TestSecondTurnSeesTheFirst(t *testing.T) {
	n, _ := newNode(t)
	n.Script("s", script.Call("Echo", map[string]string{"text": "x"}), script.Text("first"), script.Text("second"))
	n.Run(t.Context(), "s", "one")
	n.Run(t.Context(), "s", "two")
	msgs := n.LLM.CallsTo("s")[2].Messages
	if len(msgs) != 5 || msgs[0].Text() != "one" || msgs[3].Text() != "first" || msgs[4].Text() != "two" {
		t.Errorf("second turn's prompt = %+v", msgs)
	}
}

func TestFactoryRefusesBadInput(t *testing.T) {
	client := script.New()
	dir := t.TempDir()
	dup := tool.New("Echo", "x", func(ctx context.Context, in echoIn) (string, error) { return "", nil })
	bad := tool.New("Bad", "x", func(ctx context.Context, in chan int) (string, error) { return "", nil })
	for _, tc := range []struct {
		name string
		def  agent.Definition
		c    agent.Collaborators
		want string
	}{
		{"no name", agent.Definition{}, agent.Collaborators{Client: client, Workspace: dir}, "no name"},
		{"no client", agent.Definition{Name: "a"}, agent.Collaborators{Workspace: dir}, "no model client"},
		{"no workspace", agent.Definition{Name: "a"}, agent.Collaborators{Client: client}, "no workspace"},
		{"missing workspace", agent.Definition{Name: "a"}, agent.Collaborators{Client: client, Workspace: dir + "/nope"}, "nope"},
		{"unresolved folder", agent.Definition{Name: "a"}, agent.Collaborators{Client: client, Workspace: dir, Folders: tool.Folders{ConfigDir: "-"}}, "given resolved"},
		{"negative iterations", agent.Definition{Name: "a", MaxIterations: -1}, agent.Collaborators{Client: client, Workspace: dir}, "negative"},
		{"duplicate tool", agent.Definition{Name: "a", ToolProviders: []tool.Provider{tool.Static("p1", dup), tool.Static("p2", dup)}}, agent.Collaborators{Client: client, Workspace: dir}, `"Echo": already registered`},
		{"bad tool type", agent.Definition{Name: "a", ToolProviders: []tool.Provider{tool.Static("p", bad)}}, agent.Collaborators{Client: client, Workspace: dir}, "cannot derive"},
		{"provider error", agent.Definition{Name: "a", ToolProviders: []tool.Provider{tool.NewProvider("broken", func(tool.Env) ([]tool.Tool, error) {
			return nil, errors.New("no licence")
		})}}, agent.Collaborators{Client: client, Workspace: dir}, `provider "broken": no licence`},
	} {
		rt, err := agent.New(tc.def, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.name, err, tc.want)
		}
		if rt != nil {
			t.Errorf("%s: got a runtime with the error", tc.name)
		}
	}
}

type closingTool struct {
	tool.Tool
	closed *int
}

func (c closingTool) Close() error { *c.closed++; return nil }

func TestCloseClosesWhatItCreated(t *testing.T) {
	client := script.New()
	var closed int
	ct := closingTool{Tool: tool.New("C", "x", func(ctx context.Context, in struct{}) (string, error) { return "", nil }), closed: &closed}
	provider := tool.NewProvider("closing", func(tool.Env) ([]tool.Tool, error) { return []tool.Tool{ct}, nil })

	// A workspace folder: the runtime opens the file system and closes it.
	rt, err := agent.New(agent.Definition{Name: "a", ToolProviders: []tool.Provider{provider}}, agent.Collaborators{Client: client, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	created := rt.FS().(*workspace.Local)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if !created.Closed() || closed != 1 {
		t.Errorf("after Close: created fs closed %v, tool closed %d times", created.Closed(), closed)
	}
	rt.Close()
	if closed != 1 {
		t.Errorf("second Close closed the tool again")
	}

	// An injected file system stays open.
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	rt, err = agent.New(agent.Definition{Name: "a", ToolProviders: []tool.Provider{}}, agent.Collaborators{Client: client, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if fs.Closed() {
		t.Error("Close closed the injected file system")
	}
}

func TestExecuteRefusesBadRequest(t *testing.T) {
	n, _ := newNode(t)
	if _, err := n.Executor.Execute(t.Context(), n.Runtime, agent.Request{Input: "x"}); err == nil || !strings.Contains(err.Error(), "session id") {
		t.Errorf("no session id: %v", err)
	}
	if _, err := n.Executor.Execute(t.Context(), nil, agent.Request{SessionID: "s"}); err == nil {
		t.Error("nil runtime: no error")
	}
}
