package telemetry_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/telemetry"
)

func TestMain(m *testing.M) {
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}

// rig is a node traced into memory.
type rig struct {
	node   *orcatest.Node
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	exec   *intercept.Chain[*agent.Runtime, agent.Request, *agent.Result]
	events []event.Event
}

func newRig(t *testing.T, capture bool, opts ...orcatest.Option) *rig {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Provider: "orca.script", CaptureContent: capture})
	if err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t, append([]orcatest.Option{orcatest.WithDefinition(agent.Definition{Name: "lead", Model: "scripted-1"})}, opts...)...)
	unregister, err := tel.Register(n.Services.Middleware)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)
	return &rig{node: n, spans: spans, reader: reader, exec: intercept.Wrap(n.Executor, tel.Interceptor())}
}

func (r *rig) run(t *testing.T, input string) *agent.Result {
	t.Helper()
	res, err := r.exec.Execute(t.Context(), r.node.Runtime, agent.Request{SessionID: "s", Input: input, OnEvent: func(e event.Event) {
		r.events = append(r.events, e) // the turn's goroutine: no lock needed
	}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func allow(t *testing.T, rules ...string) orcatest.Option {
	t.Helper()
	return withRules(t, rules, nil)
}

func withRules(t *testing.T, allow, ask []string) orcatest.Option {
	t.Helper()
	r, err := policy.ParseRules(allow, nil, ask)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(policy.ModeDefault, r)
	if err != nil {
		t.Fatal(err)
	}
	return orcatest.WithPolicy(p, nil)
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func str(s tracetest.SpanStub, key string) string {
	v, _ := attr(s, key)
	return v.AsString()
}

func num(s tracetest.SpanStub, key string) int64 {
	v, _ := attr(s, key)
	return v.AsInt64()
}

// named returns the spans called name, in the order they ended.
func named(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	got := named(spans, name)
	if len(got) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans %q, want 1; spans: %v", len(got), name, names)
	}
	return got[0]
}

func childOf(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("span %q: parent %v, want %q (%v)", child.Name, child.Parent.SpanID(), parent.Name, parent.SpanContext.SpanID())
	}
}

var forkAgent = subagent.GeneralPurpose.Name

func taskCall() script.Response {
	return script.Call("Task", map[string]string{"description": "look", "prompt": "find the file", "subagent_type": forkAgent})
}

func usage(r script.Response, in, out int64) script.Response {
	r.Usage = &llm.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: 5}
	return r
}

// One turn with a tool call and a Task fork (which makes a tool call of
// its own) is one trace: invoke_agent > chat, execute_tool >
// invoke_agent (the fork) > chat, execute_tool.
func TestTraceNestsTheAgentTree(t *testing.T) {
	r := newRig(t, false, allow(t, "Task", "Glob"))
	r.node.WriteFile("a.txt", "x")
	r.node.Script("s", usage(script.Call("Glob", map[string]string{"pattern": "*.txt"}), 100, 10), taskCall(), script.Text("done"))
	r.node.Script(script.ForkRoute("s", forkAgent), script.Call("Glob", map[string]string{"pattern": "*"}), script.Text("found a.txt"))
	res := r.run(t, "find a.txt")
	if res.StopReason != agent.StopAnswered {
		t.Fatalf("turn: %s %v", res.StopReason, res.Err)
	}
	spans := r.spans.GetSpans()
	for _, s := range spans {
		if s.SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
			t.Errorf("span %q is in trace %v, not %v", s.Name, s.SpanContext.TraceID(), spans[0].SpanContext.TraceID())
		}
	}
	root := one(t, spans, "invoke_agent lead")
	fork := one(t, spans, "invoke_agent "+forkAgent)
	task := one(t, spans, "execute_tool Task")
	globs := named(spans, "execute_tool Glob")
	chats := named(spans, "chat scripted-1")
	if len(globs) != 2 || len(chats) != 5 {
		t.Fatalf("%d Glob spans, %d chat spans; want 2 and 5", len(globs), len(chats))
	}
	if root.Parent.IsValid() {
		t.Errorf("the turn's span has a parent: %v", root.Parent)
	}
	childOf(t, task, root)
	childOf(t, fork, task)
	var rootChats, forkChats, rootGlobs, forkGlobs int
	for _, c := range chats {
		switch c.Parent.SpanID() {
		case root.SpanContext.SpanID():
			rootChats++
		case fork.SpanContext.SpanID():
			forkChats++
		default:
			t.Errorf("chat span under %v, neither agent's", c.Parent.SpanID())
		}
		if c.SpanKind != trace.SpanKindClient {
			t.Errorf("chat span kind %v", c.SpanKind)
		}
	}
	for _, g := range globs {
		switch g.Parent.SpanID() {
		case root.SpanContext.SpanID():
			rootGlobs++
		case fork.SpanContext.SpanID():
			forkGlobs++
		}
	}
	if rootChats != 3 || forkChats != 2 || rootGlobs != 1 || forkGlobs != 1 {
		t.Errorf("chats %d+%d, globs %d+%d; want 3+2 and 1+1", rootChats, forkChats, rootGlobs, forkGlobs)
	}

	// The attributes of the conventions, and orca's ids.
	for key, want := range map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "lead", "gen_ai.conversation.id": "s",
		"gen_ai.provider.name": "orca.script", "gen_ai.request.model": "scripted-1",
		"orca.turn.id": res.TurnID, "orca.execution.id": res.ExecutionID, "orca.stop_reason": "answered",
	} {
		if got := str(root, key); got != want {
			t.Errorf("invoke_agent %s = %q, want %q", key, got, want)
		}
	}
	if str(fork, "orca.parent_execution.id") != res.ExecutionID || num(fork, "orca.depth") != 1 ||
		str(fork, "orca.turn.id") != res.TurnID || str(fork, "gen_ai.conversation.id") != "s" || str(fork, "orca.execution.id") == "" {
		t.Errorf("the fork's ids: %v", fork.Attributes)
	}
	first := chats[0] // ended first: the turn's first call
	for key, want := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-1", "gen_ai.conversation.id": "s",
		"gen_ai.provider.name": "orca.script", "orca.feature": llm.FeatureAgent,
	} {
		if got := str(first, key); got != want {
			t.Errorf("chat %s = %q, want %q", key, got, want)
		}
	}
	if num(first, "gen_ai.usage.input_tokens") != 105 || num(first, "gen_ai.usage.output_tokens") != 10 || num(first, "gen_ai.usage.cache_read.input_tokens") != 5 {
		t.Errorf("chat usage: %v", first.Attributes)
	}
	if v, _ := attr(first, "gen_ai.response.finish_reasons"); len(v.AsStringSlice()) != 1 || v.AsStringSlice()[0] != "tool_call" { // the conventions' name for tool_use
		t.Errorf("finish reasons %v", v.AsStringSlice())
	}
	if str(first, "gen_ai.response.model") == "" {
		t.Errorf("no response model: %v", first.Attributes)
	}
	g := globs[0]
	for key, want := range map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "Glob", "gen_ai.tool.type": "function",
		"gen_ai.conversation.id": "s", "orca.turn.id": res.TurnID,
	} {
		if got := str(g, key); got != want {
			t.Errorf("execute_tool %s = %q, want %q", key, got, want)
		}
	}
	if id := str(g, "gen_ai.tool.call.id"); id == "" || str(task, "gen_ai.tool.call.id") == id {
		t.Errorf("tool call ids: %q, %q", id, str(task, "gen_ai.tool.call.id"))
	}
	for _, s := range spans {
		for _, a := range s.Attributes {
			switch a.Key {
			case "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result":
				t.Errorf("span %q captured %s without being asked to", s.Name, a.Key)
			}
		}
	}

	// The metrics: tokens by type, and the duration of each call.
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	byType := map[string]int64{}
	var durations uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "gen_ai.client.token.usage":
				for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					tt, _ := dp.Attributes.Value("gen_ai.token.type")
					byType[tt.AsString()] += dp.Sum
				}
			case "gen_ai.client.operation.duration":
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					durations += dp.Count
				}
			}
		}
	}
	if byType["input"] < 105 || byType["output"] < 10 || durations != 5 {
		t.Errorf("token usage %v, %d durations; want input ≥ 105, output ≥ 10 and 5 calls", byType, durations)
	}
}

// A call the policy refuses never reaches the tool, yet has its span: with
// the approval asked and refused, and the block, as events.
func TestBlockedCallCarriesTheDecision(t *testing.T) {
	r := newRig(t, false, withRules(t, nil, []string{"Bash"})) // the headless approver refuses what is asked
	r.node.Script("s", script.Call("Bash", map[string]string{"command": "touch x"}), script.Text("ok"))
	r.run(t, "touch x")
	sp := one(t, r.spans.GetSpans(), "execute_tool Bash")
	var names []string
	var blocked map[string]string
	for _, e := range sp.Events {
		names = append(names, e.Name)
		if e.Name == "tool_blocked" {
			blocked = map[string]string{}
			for _, a := range e.Attributes {
				blocked[string(a.Key)] = a.Value.String()
			}
		}
	}
	if blocked == nil || blocked["by"] == "" || blocked["reason"] == "" {
		t.Fatalf("events %v; tool_blocked %v", names, blocked)
	}
	if !strings.Contains(strings.Join(names, ","), "approval_requested,approval_resolved,tool_blocked") {
		t.Errorf("events %v, want approval_requested, approval_resolved, tool_blocked", names)
	}
	if str(sp, "orca.tool.blocked_by") != blocked["by"] || sp.Status.Code != codes.Error {
		t.Errorf("blocked span: %v, status %v", sp.Attributes, sp.Status)
	}
	if r.node.ReadFileOr("x", "absent") != "absent" {
		t.Error("the refused command ran")
	}
}

// With content capture asked for, the prompts, answers and tool calls are
// on the spans, in the conventions' shapes.
func TestContentCaptureIsOptIn(t *testing.T) {
	r := newRig(t, true, allow(t, "Glob"))
	r.node.Script("s", script.Call("Glob", map[string]string{"pattern": "*.secret"}), script.Text("nothing secret"))
	r.run(t, "look for secrets")
	spans := r.spans.GetSpans()
	g := one(t, spans, "execute_tool Glob")
	if !strings.Contains(str(g, "gen_ai.tool.call.arguments"), "*.secret") {
		t.Errorf("tool arguments: %q", str(g, "gen_ai.tool.call.arguments"))
	}
	if _, ok := attr(g, "gen_ai.tool.call.result"); !ok {
		t.Errorf("no tool result: %v", g.Attributes)
	}
	chat := named(spans, "chat scripted-1")[1] // the answer
	var in []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(str(chat, "gen_ai.input.messages")), &in); err != nil || len(in) < 3 || in[0].Role != "user" || in[0].Parts[0].Content != "look for secrets" {
		t.Errorf("input messages %s (%v)", str(chat, "gen_ai.input.messages"), err)
	}
	if !strings.Contains(str(chat, "gen_ai.output.messages"), "nothing secret") {
		t.Errorf("output messages %q", str(chat, "gen_ai.output.messages"))
	}
}

// A background fork outlives its Task call, and its context carries none
// of the call's values: its span is the call's child all the same, in the
// turn's trace.
func TestBackgroundForkJoinsTheTrace(t *testing.T) {
	r := newRig(t, false, allow(t, "Task", "AgentOutput"))
	bg := script.Call("Task", map[string]any{"description": "later", "prompt": "in the background", "subagent_type": forkAgent, "run_in_background": true})
	r.node.Script("s", bg, script.Call("AgentOutput", map[string]any{"task_id": "task_1", "block": true}), script.Text("done"))
	r.node.Script(script.ForkRoute("s", forkAgent), script.Text("the background answer"))
	res := r.run(t, "start it")
	if res.StopReason != agent.StopAnswered || !strings.Contains(observation(res, "call_2_1"), "the background answer") {
		t.Fatalf("turn %s; AgentOutput saw %q", res.StopReason, observation(res, "call_2_1"))
	}
	spans := r.spans.GetSpans()
	root, task, fork := one(t, spans, "invoke_agent lead"), one(t, spans, "execute_tool Task"), one(t, spans, "invoke_agent "+forkAgent)
	childOf(t, task, root)
	childOf(t, fork, task)
	if fork.SpanContext.TraceID() != root.SpanContext.TraceID() {
		t.Error("the background fork is in another trace")
	}
	if v, _ := attr(fork, "orca.background"); !v.AsBool() || str(fork, "orca.task.id") != "task_1" {
		t.Errorf("fork attributes %v", fork.Attributes)
	}
	for _, c := range named(spans, "chat scripted-1") {
		if c.Parent.SpanID() != root.SpanContext.SpanID() && c.Parent.SpanID() != fork.SpanContext.SpanID() {
			t.Errorf("a chat span under %v", c.Parent.SpanID())
		}
	}
}

// observation returns the result of call id among res's messages.
func observation(res *agent.Result, id string) string {
	for _, m := range res.Messages {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult && b.ToolUseID == id {
				return b.Content
			}
		}
	}
	return ""
}

// A nil Telemetry is off: no interceptor, no middleware.
func TestNilIsOff(t *testing.T) {
	var tel *telemetry.Telemetry
	if tel.Interceptor() != nil || tel.CaptureContent() || tel.Shutdown(t.Context()) != nil {
		t.Error("a nil Telemetry does something")
	}
	n := orcatest.NewNode(t)
	unregister, err := tel.Register(n.Services.Middleware)
	if err != nil || !n.Services.Middleware.Empty() {
		t.Errorf("Register on nil: %v, chains %v", err, n.Services.Middleware.Names("llm_execution"))
	}
	unregister()
}

// A PRE_TOOL_USE hook that blocks a call: its message and its block are
// events of the call's span, the block naming the hook.
func TestHookDecisionsAreToolSpanEvents(t *testing.T) {
	r := newRig(t, false, allow(t, "Glob"))
	r.node.Services.Hooks.Register(hook.PreToolUse, "guard", hook.HandlerFunc(func(context.Context, hook.Payload) (*hook.Decision, error) {
		return &hook.Decision{Action: hook.Block, Reason: "not today", Message: "guard looked"}, nil
	}))
	r.node.Script("s", script.Call("Glob", map[string]string{"pattern": "*"}), script.Text("ok"))
	r.run(t, "look")
	sp := one(t, r.spans.GetSpans(), "execute_tool Glob")
	events := map[string]map[string]string{}
	for _, e := range sp.Events {
		events[e.Name] = map[string]string{}
		for _, a := range e.Attributes {
			events[e.Name][string(a.Key)] = a.Value.String()
		}
	}
	if m := events["hook_message"]; m["handler"] != "guard" || m["message"] != "guard looked" || m["hook"] != string(hook.PreToolUse) {
		t.Errorf("hook_message %v (events %v)", m, events)
	}
	if b := events["tool_blocked"]; b["by"] != "hook:guard" || !strings.Contains(b["reason"], "not today") {
		t.Errorf("tool_blocked %v", b)
	}
}

// The read-only calls of one response run at once: each in its own span,
// each under the turn.
func TestParallelCallsEachHaveTheirSpan(t *testing.T) {
	r := newRig(t, false, allow(t, "Glob", "Read"))
	r.node.WriteFile("a.txt", "x")
	both := script.Response{ToolCalls: []script.ToolCall{
		{Name: "Glob", Input: json.RawMessage(`{"pattern": "*"}`)},
		{Name: "Read", Input: json.RawMessage(`{"file_path": "a.txt"}`)},
		{Name: "Glob", Input: json.RawMessage(`{"pattern": "*.txt"}`)},
	}}
	r.node.Script("s", both, script.Text("ok"))
	r.run(t, "look")
	spans := r.spans.GetSpans()
	root := one(t, spans, "invoke_agent lead")
	tools := append(named(spans, "execute_tool Glob"), named(spans, "execute_tool Read")...)
	ids := map[string]bool{}
	for _, s := range tools {
		childOf(t, s, root)
		ids[str(s, "gen_ai.tool.call.id")] = true
		if s.Status.Code == codes.Error {
			t.Errorf("%s failed", s.Name)
		}
	}
	if len(tools) != 3 || len(ids) != 3 {
		t.Errorf("%d tool spans, %d call ids", len(tools), len(ids))
	}
}

// A turn that parks a call and the turn that goes on once a person
// approved it are one trace: the second under the first, marked resumed.
func TestResumedTurnJoinsTheParkedTrace(t *testing.T) {
	pol, err := policy.New(policy.ModeDefault, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, false, orcatest.WithPolicy(pol, policy.Parking{}))
	r.node.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "a", Name: "Bash", Input: json.RawMessage(`{"command":"echo a >> ran"}`)}}}, script.Text("ran it"))
	router := session.NewRouter(r.node.Runtime, r.node.Store, r.exec)
	s, err := router.Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	res, err := s.Run(t.Context(), "run a")
	if err != nil || res.StopReason != agent.StopAwaitingApproval {
		t.Fatalf("first turn: %+v, %v", res, err)
	}
	if _, err := router.Decide(t.Context(), s.Parked().ID, true, "ana", ""); err != nil {
		t.Fatal(err)
	}
	if res, err = s.Run(t.Context(), "go on"); err != nil || res.Answer != "ran it" {
		t.Fatalf("resumed turn: %+v, %v", res, err)
	}
	turns := named(r.spans.GetSpans(), "invoke_agent lead")
	if len(turns) != 2 {
		t.Fatalf("%d turn spans", len(turns))
	}
	parked, resumed := turns[0], turns[1]
	if str(parked, "orca.stop_reason") != "awaiting_approval" || resumed.SpanContext.TraceID() != parked.SpanContext.TraceID() {
		t.Errorf("parked %v, resumed in trace %v, not %v", parked.Attributes, resumed.SpanContext.TraceID(), parked.SpanContext.TraceID())
	}
	childOf(t, resumed, parked)
	if v, _ := attr(resumed, "orca.resumed"); !v.AsBool() {
		t.Errorf("resumed turn's attributes %v", resumed.Attributes)
	}
	var ran bool
	for _, sp := range named(r.spans.GetSpans(), "execute_tool Bash") {
		ran = ran || sp.Parent.SpanID() == resumed.SpanContext.SpanID()
	}
	if !ran {
		t.Error("no Bash span in the resumed turn")
	}
}

// With metrics only, nothing watches the runs: no interceptor, no
// tool_execution middleware; the model calls are still measured.
func TestMetricsOnly(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, err := telemetry.New(telemetry.Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t)
	unregister, err := tel.Register(n.Services.Middleware)
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	if tel.Interceptor() != nil || n.Services.Middleware.Has("tool_execution") || !n.Services.Middleware.Has("llm_execution") {
		t.Fatalf("interceptor %v, chains tool %v llm %v", tel.Interceptor(), n.Services.Middleware.Names("tool_execution"), n.Services.Middleware.Names("llm_execution"))
	}
	n.Script("s", script.Text("hi"))
	n.Run(t.Context(), "s", "hello")
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil || len(rm.ScopeMetrics) != 1 || len(rm.ScopeMetrics[0].Metrics) != 2 {
		t.Errorf("metrics %+v, %v", rm.ScopeMetrics, err)
	}
}

// The parked turn ran in another process (another Telemetry, another
// runtime over the same workspace and store): its traceparent travelled
// with the parked call through the store, and the turn that resumes the
// approved call is its child, in its trace.
func TestResumedTurnJoinsTheParkedTraceAcrossProcesses(t *testing.T) {
	pol, err := policy.New(policy.ModeDefault, policy.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	first := newRig(t, false, orcatest.WithPolicy(pol, policy.Parking{}))
	client := first.node.LLM
	client.Script("s", script.Response{ToolCalls: []script.ToolCall{{ID: "a", Name: "Bash", Input: json.RawMessage(`{"command":"echo a >> ran"}`)}}}, script.Text("ran it"))
	s, err := session.NewRouter(first.node.Runtime, first.node.Store, first.exec).Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Run(t.Context(), "run a"); err != nil || res.StopReason != agent.StopAwaitingApproval {
		t.Fatalf("first turn: %+v, %v", res, err)
	}
	parkedID := s.Parked().ID
	s.Close(context.Background())
	stored, err := first.node.Store.ParkedCalls(t.Context(), store.ParkFilter{SessionID: "s"})
	if err != nil || len(stored) != 1 || stored[0].TraceParent == "" {
		t.Fatalf("the parked call in the store: %+v, %v", stored, err)
	}

	second := newRig(t, false, orcatest.WithPolicy(pol, policy.Parking{}), orcatest.WithStore(first.node.Store),
		orcatest.WithRoot(first.node.Root), orcatest.WithClient(client))
	router := session.NewRouter(second.node.Runtime, second.node.Store, second.exec)
	if _, err := router.Decide(t.Context(), parkedID, true, "ana", ""); err != nil {
		t.Fatal(err)
	}
	s2, err := router.Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	if res, err := s2.Run(t.Context(), "go on"); err != nil || res.Answer != "ran it" {
		t.Fatalf("resumed turn: %+v, %v", res, err)
	}
	parked := named(first.spans.GetSpans(), "invoke_agent lead")
	resumed := named(second.spans.GetSpans(), "invoke_agent lead")
	if len(parked) != 1 || len(resumed) != 1 {
		t.Fatalf("%d and %d turn spans", len(parked), len(resumed))
	}
	if resumed[0].SpanContext.TraceID() != parked[0].SpanContext.TraceID() || resumed[0].Parent.SpanID() != parked[0].SpanContext.SpanID() {
		t.Errorf("resumed in trace %v under %v; the parked turn is %v/%v", resumed[0].SpanContext.TraceID(), resumed[0].Parent.SpanID(),
			parked[0].SpanContext.TraceID(), parked[0].SpanContext.SpanID())
	}
	if v, _ := attr(resumed[0], "orca.resumed"); !v.AsBool() {
		t.Errorf("resumed turn's attributes %v", resumed[0].Attributes)
	}
}

// A turn run step by step (what the Temporal engine does, one activity a
// step) is one trace: each later step's invoke_agent span is a child of
// the first step's, numbered, whatever process runs it (the traceparent
// travels in agent.Progress); the calls' spans are under their steps.
func TestStepsShareTheTurnsTrace(t *testing.T) {
	r := newRig(t, false)
	r.node.LLM.Script("s", script.Call("Bash", map[string]string{"command": "echo a"}), script.Text("done"))
	s, err := session.NewRouter(r.node.Runtime, r.node.Store, r.exec).Open(t.Context(), "s", session.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var p agent.Progress
	for step := 1; ; step++ {
		res, err := s.Run(t.Context(), "run a", session.WithTurnID("t1"), session.Retry(), session.Step(p))
		if err != nil || step > 5 {
			t.Fatalf("step %d: %+v, %v", step, res, err)
		}
		if res.StopReason != agent.StopPaused {
			break
		}
		if res.Progress.TraceParent == "" {
			t.Fatalf("step %d paused with no traceparent", step)
		}
		p = res.Progress
	}
	steps := named(r.spans.GetSpans(), "invoke_agent lead")
	if len(steps) != 3 {
		t.Fatalf("%d turn spans, want 3 steps", len(steps))
	}
	first := steps[0]
	for i, sp := range steps[1:] {
		if sp.SpanContext.TraceID() != first.SpanContext.TraceID() || sp.Parent.SpanID() != first.SpanContext.SpanID() {
			t.Errorf("step %d in trace %v under %v; the first step is %v/%v", i+2, sp.SpanContext.TraceID(), sp.Parent.SpanID(), first.SpanContext.TraceID(), first.SpanContext.SpanID())
		}
		if v, _ := attr(sp, "orca.step"); v.AsInt64() != int64(i+2) {
			t.Errorf("step %d's attributes %v", i+2, sp.Attributes)
		}
	}
	tools := named(r.spans.GetSpans(), "execute_tool Bash")
	if len(tools) != 1 || tools[0].Parent.SpanID() != steps[1].SpanContext.SpanID() {
		t.Errorf("the Bash span is not under the second step: %v", tools)
	}
}
