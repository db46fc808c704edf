package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/script"
)

// The scripted client passes the conformance suite every client must pass.
func TestConformance(t *testing.T) {
	llmtest.TestClient(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		sc := script.New()
		var resp script.Response
		if c.Err != nil {
			var le *llm.Error
			errors.As(c.Err, &le)
			resp = script.Fail(le.Kind, "scripted failure")
		} else {
			resp = fromResponse(c.Response)
		}
		for range 16 {
			sc.ScriptAny(resp)
		}
		var mu sync.Mutex
		var seen []*llm.Request
		client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			return sc.Generate(ctx, req, onDelta)
		})
		return client, func() []*llm.Request {
			mu.Lock()
			defer mu.Unlock()
			return append([]*llm.Request(nil), seen...)
		}
	})
}

func fromResponse(r llm.Response) script.Response {
	out := script.Response{StopReason: r.StopReason}
	if r.Usage != (llm.Usage{}) {
		u := r.Usage
		out.Usage = &u
	}
	for _, b := range r.Message.Content {
		switch b.Type {
		case llm.BlockText:
			out.Text += b.Text
		case llm.BlockToolUse:
			out.ToolCalls = append(out.ToolCalls, script.ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return out
}

func TestRoutesAndRecording(t *testing.T) {
	c := script.New()
	c.Script("s1", script.Call("Read", map[string]any{"file_path": "a.go"}), script.Text("done"))
	c.Script(script.CompactionRoute("s1"), script.Text("summary"))

	ctx := context.Background()
	agentReq := &llm.Request{System: "sys", Metadata: llm.Metadata{TraceID: "s1", Feature: llm.FeatureAgent}}
	r1, err := c.Generate(ctx, agentReq, nil)
	if err != nil {
		t.Fatal(err)
	}
	uses := r1.Message.ToolUses()
	if len(uses) != 1 || uses[0].Name != "Read" || uses[0].ID != "call_1_1" || string(uses[0].Input) != `{"file_path":"a.go"}` || r1.StopReason != llm.StopToolUse {
		t.Fatalf("first response = %+v", r1)
	}
	// The summariser's call goes to its own route and does not eat the
	// session's next response.
	sum, err := c.Generate(ctx, &llm.Request{Metadata: llm.Metadata{TraceID: "s1", Feature: llm.FeatureCompaction}}, nil)
	if err != nil || sum.Message.Text() != "summary" {
		t.Fatalf("compaction call = %+v, %v", sum, err)
	}
	r2, err := c.Generate(ctx, agentReq, nil)
	if err != nil || r2.Message.Text() != "done" || r2.StopReason != llm.StopEndTurn {
		t.Fatalf("second response = %+v, %v", r2, err)
	}
	if got := len(c.CallsTo("s1")); got != 2 {
		t.Errorf("calls to s1 = %d, want 2", got)
	}
	if got := c.Calls()[0].System; got != "sys" {
		t.Errorf("recorded system = %q", got)
	}

	// Used up: an error naming the route, not an unrouted call.
	_, err = c.Generate(ctx, agentReq, nil)
	if !errors.Is(err, script.ErrExhausted) || !strings.Contains(err.Error(), `"s1"`) {
		t.Errorf("exhausted route: %v", err)
	}
	if c.Unrouted() != 0 {
		t.Errorf("unrouted = %d, want 0", c.Unrouted())
	}
	// Unknown trace id: unrouted, counted, named.
	_, err = c.Generate(ctx, &llm.Request{Metadata: llm.Metadata{TraceID: "nobody"}}, nil)
	if !errors.Is(err, script.ErrUnrouted) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("unrouted call: %v", err)
	}
	if c.Unrouted() != 1 {
		t.Errorf("unrouted = %d, want 1", c.Unrouted())
	}
	// A fallback is opt-in; unrouted calls are still counted.
	c.SetFallback(script.Text("fallback"))
	r, err := c.Generate(ctx, &llm.Request{Metadata: llm.Metadata{TraceID: "nobody"}}, nil)
	if err != nil || r.Message.Text() != "fallback" || c.Unrouted() != 2 {
		t.Errorf("fallback = %+v, %v, unrouted %d", r, err, c.Unrouted())
	}
}

func TestParse(t *testing.T) {
	f, err := script.Parse(strings.NewReader(`{"responses":[
		{"text":"hi","tool_calls":[{"id":"t1","name":"Read","input":{"file_path":"x"}},{"name":"Bash","input_raw":"{not json"}]},
		{"error":{"kind":"rate_limited","message":"slow down"}},
		{"text":"bye"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := script.New().ScriptAny(f.Responses...)
	r, err := c.Generate(context.Background(), &llm.Request{Metadata: llm.Metadata{TraceID: "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	uses := r.Message.ToolUses()
	if len(uses) != 2 || uses[0].ID != "t1" || string(uses[1].Input) != "{not json" || r.Message.Text() != "hi" {
		t.Errorf("response = %+v", r)
	}
	_, err = c.Generate(context.Background(), &llm.Request{Metadata: llm.Metadata{TraceID: "x"}}, nil)
	if !errors.Is(err, llm.ErrRateLimited) || !strings.Contains(err.Error(), "slow down") {
		t.Errorf("scripted error = %v", err)
	}

	for _, bad := range []struct{ in, want string }{
		{`{"responses":[{"txt":"typo"}]}`, "txt"},
		{`{"responses":[{"tool_calls":[{"input":{}}]}]}`, "responses[0].tool_calls[0]: no name"},
		{`{"responses":[{"tool_calls":[{"name":"A","input":{},"input_raw":"{}"}]}]}`, "not both"},
		{`{"responses":[{"error":{}}]}`, "no kind"},
		{`{"responses":[{"text":"a","output":{"b":1}}]}`, "responses[0]: give text or output, not both"},
		{`{"responses":[{"text":"a","delay_ms":-1}]}`, "responses[0].delay_ms: -1 is negative"},
		{`{"responses":[]} {}`, "trailing"},
		{`[1,2]`, "line 1, column 2: a number where an object is wanted"},
		{`{"responses":[{"tool_calls":"Read"}]}`, "line 1, column 34: responses.tool_calls: a string where a list is wanted"},
		{`{"responses":[{"text":"a","delay_ms":1.5}]}`, "responses.delay_ms: a number 1.5 where a whole number is wanted"},
		{`{"responses":{"text":"a"}}`, "line 1, column 14: responses: an object where a list is wanted"},
		{`{"routes":{"main":[{"usage":{"input_tokens":"12"}}]}}`, "routes.usage.input_tokens: a string where a whole number is wanted"},
		{`{"responses":[{"text":"a"},]}`, "line 1, column 28"},
		{``, "empty file"},
	} {
		_, err := script.Parse(strings.NewReader(bad.in))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%s) error = %v, want it to mention %q", bad.in, err, bad.want)
		}
	}
}

// A list of responses alone is a script: the File's responses. A UTF-8
// byte order mark before it (a Windows editor's) is no matter.
func TestParseList(t *testing.T) {
	f, err := script.Parse(strings.NewReader("\uFEFF" + ` [{"tool_calls":[{"name":"Read","input":{"file_path":"x"}}]}, {"text":"bye"}]`)) // a byte order mark too
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Responses) != 2 || f.Responses[0].ToolCalls[0].Name != "Read" || f.Responses[1].Text != "bye" || f.Routes != nil {
		t.Errorf("file = %+v", f)
	}
	for _, bad := range []struct{ in, want string }{
		{`[{"txt":"typo"}]`, "txt"},
		{`[{"tool_calls":[{"input":{}}]}]`, "responses[0].tool_calls[0]: no name"},
		{`[] []`, "trailing"},
	} {
		if _, err := script.Parse(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%s) error = %v, want it to mention %q", bad.in, err, bad.want)
		}
	}
}

func TestRoutesInAFile(t *testing.T) {
	f, err := script.Parse(strings.NewReader(`{"responses": [{"text": "any"}],
		"routes": {"main": [{"text": "main 1"}], "subagent": [{"text": "some fork"}], "subagent:auditor": [{"text": "auditor"}], "compaction": [{"text": "summary"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := script.New()
	f.Install(c, "s")
	ask := func(md llm.Metadata) string {
		r, err := c.Generate(context.Background(), &llm.Request{Metadata: md}, nil)
		if err != nil {
			return err.Error()
		}
		return r.Message.Text()
	}
	for _, tc := range []struct {
		md   llm.Metadata
		want string
	}{
		{llm.Metadata{TraceID: "s", Feature: llm.FeatureAgent}, "main 1"},
		{llm.Metadata{TraceID: "s", Feature: llm.FeatureSubagent, Component: "auditor"}, "auditor"},
		{llm.Metadata{TraceID: "s", Feature: llm.FeatureSubagent, Component: "explorer"}, "some fork"},
		{llm.Metadata{TraceID: "s", Feature: llm.FeatureCompaction}, "summary"},
		{llm.Metadata{TraceID: "s", Feature: llm.FeatureAgent}, "used up"},
	} {
		if got := ask(tc.md); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: got %q, want %q", tc.md, got, tc.want)
		}
	}
	if _, err := script.Parse(strings.NewReader(`{"routes": {"sideways": []}}`)); err == nil || !strings.Contains(err.Error(), "routes.sideways") {
		t.Errorf("unknown route: %v", err)
	}
}

// An output response answers with the value's JSON as its text; the
// request's Output is recorded.
func TestOutputResponse(t *testing.T) {
	f, err := script.Parse(strings.NewReader(`{"responses":[{"output": {"city": "Oslo"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := script.New().ScriptAny(f.Responses...)
	out := &llm.Output{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}
	r, err := c.Generate(context.Background(), &llm.Request{Metadata: llm.Metadata{TraceID: "x"}, Output: out}, nil)
	if err != nil || r.Message.Text() != `{"city": "Oslo"}` || r.StopReason != llm.StopEndTurn {
		t.Fatalf("%+v, %v", r, err)
	}
	if rec := c.Calls(); len(rec) != 1 || rec[0].Output != out || !llm.HasNativeOutput(c) {
		t.Errorf("recorded %+v", rec)
	}
}

// A response's delay_ms holds the answer back that long; the call's
// context ending cuts it short, and the call fails.
func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := script.Parse(strings.NewReader(`{"responses":[{"text":"slow","delay_ms":1500},{"text":"never","delay_ms":60000}]}`))
		if err != nil {
			t.Fatal(err)
		}
		c := script.New().ScriptAny(f.Responses...)
		req := &llm.Request{Metadata: llm.Metadata{TraceID: "x"}}
		start := time.Now()
		r, err := c.Generate(t.Context(), req, nil)
		if err != nil || r.Message.Text() != "slow" || time.Since(start) != 1500*time.Millisecond {
			t.Errorf("after %v: %v, %v", time.Since(start), r, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if _, err := c.Generate(ctx, req, nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("cancelled after %v: %v", time.Since(start), err)
		}
	})
}

// Given says how many of a session's responses a script gave it: all of
// them when its response at that place is the session's last (the same
// script, run again), none for another script.
func TestGiven(t *testing.T) {
	f, err := script.Parse(strings.NewReader(`{"responses": [{"tool_calls": [{"name": "Bash", "input": {"command": "x"}}]}, {"text": "done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	call := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("id1", "Bash", json.RawMessage(`{ "command":"x" }`))}}
	other := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("id1", "Bash", json.RawMessage(`{"command":"y"}`))}}
	for _, tc := range []struct {
		done []llm.Message
		want int
	}{
		{nil, 0},
		{[]llm.Message{call}, 1},
		{[]llm.Message{other}, 0},
		{[]llm.Message{call, {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}}, 2},
		{[]llm.Message{call, call, call}, 0},
	} {
		if got := f.Given(tc.done); got != tc.want {
			t.Errorf("Given(%d messages) = %d, want %d", len(tc.done), got, tc.want)
		}
	}
}
