package telemetry

import (
	"context"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
)

// execution is one traced execution: a user's turn or a fork. Its fields
// but span and ctx are guarded by Telemetry.mu.
type execution struct {
	span trace.Span
	// ctx carries span: the parent of the execution's tool spans.
	ctx context.Context
	// id is the execution's id, known from its first event ("" before).
	id string
	// tools are the open tool spans, by tool use id.
	tools map[string]trace.Span
}

// intercept traces one run: the interceptor.
func (t *Telemetry) intercept(ctx context.Context, rt *agent.Runtime, req agent.Request, next agent.Next) (res *agent.Result, err error) {
	def := rt.Definition()
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameKey.String(t.provider),
		semconv.GenAIAgentName(def.Name),
		semconv.GenAIConversationID(req.SessionID),
		AttrRuntimeID.String(rt.ID()),
	}
	if def.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(def.Model))
	}
	if req.TurnID != "" {
		attrs = append(attrs, AttrTurnID.String(req.TurnID))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	// An execution that goes on with a turn begun elsewhere is in that
	// turn's trace, linked to its caller's span.
	var parent trace.SpanContext
	var mark attribute.KeyValue
	if st := req.Step; st != nil && st.Steps > 0 && st.TraceParent != "" {
		// A later step of a turn run step by step (a durable engine's
		// activity): under the turn's first step.
		parent, mark = fromTraceParent(st.TraceParent), AttrStep.Int(st.Steps+1)
	} else {
		// The turn that goes on after a parked call was decided: under
		// the turn that parked — in another process, its traceparent came
		// with the parked call, through the store.
		t.mu.Lock()
		sc, ok := t.parked[req.SessionID]
		delete(t.parked, req.SessionID)
		t.mu.Unlock()
		if !ok && req.TraceParent != "" {
			sc = fromTraceParent(req.TraceParent)
		}
		parent, mark = sc, AttrResumed.Bool(true)
	}
	if parent.IsValid() {
		if caller := trace.SpanContextFromContext(ctx); caller.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
		}
		ctx = trace.ContextWithSpanContext(ctx, parent)
		attrs = append(attrs, mark)
	}
	ctx, span := t.tracer.Start(ctx, "invoke_agent "+def.Name, append(opts, trace.WithAttributes(attrs...))...)
	ex := &execution{span: span, ctx: ctx, tools: map[string]trace.Span{}}
	if t.capture && req.Input != "" {
		span.SetAttributes(semconv.GenAIInputMessagesKey.String(inputMessagesJSON([]llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(req.Input)}}})))
	}
	// A turn that parks says where its trace is, for the session to keep
	// with the parked call (the turn that resumes it may run elsewhere).
	onEnd := req.OnEnd
	req.OnEnd = func(res *agent.Result) {
		if res.Parked != nil && res.Depth == 0 {
			res.Parked.TraceParent = traceParent(span)
		}
		if res.StopReason == agent.StopPaused && res.Depth == 0 && res.Progress.TraceParent == "" {
			res.Progress.TraceParent = traceParent(span) // the turn's first step
		}
		if onEnd != nil {
			onEnd(res)
		}
	}
	req.OnEvent = t.watch(ex, req.OnEvent)
	req.OnBackgroundEvent = t.watch(nil, req.OnBackgroundEvent)
	// Deferred: should an inner interceptor panic, the span still ends and
	// the execution is forgotten.
	defer func() { t.finish(ex, res, err) }()
	return next.Proceed(ctx, rt, req)
}

// fromTraceParent is the span context of a W3C traceparent (not valid if
// it is not one).
func fromTraceParent(tp string) trace.SpanContext {
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
}

// traceParent is span's W3C traceparent.
func traceParent(span trace.Span) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), span.SpanContext()), carrier)
	return carrier["traceparent"]
}

// watch returns the OnEvent that traces what the events of root's
// execution (nil: of background forks) and of its forks say, then passes
// them on to then.
func (t *Telemetry) watch(root *execution, then func(event.Event)) func(event.Event) {
	return func(e event.Event) {
		t.observe(root, e)
		if then != nil {
			then(e)
		}
	}
}

// observe applies one event to the spans.
func (t *Telemetry) observe(root *execution, e event.Event) {
	switch e.Name {
	case event.LLMDelta, event.LLMCallStarted, event.LLMCallCompleted, event.LLMCallFailed, event.IterationStarted:
		return // the chat spans say it: the commonest events cost a switch
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ex := t.execs[e.ExecutionID]
	if ex == nil {
		switch {
		case root != nil && root.id == "" && e.Depth == 0 && e.ExecutionID != "":
			ex = root // the turn's first event names it
		case e.Name == event.SubagentStarted:
			ex = t.claimFork(e)
		}
		if ex == nil {
			return
		}
		ex.id = e.ExecutionID
		t.execs[ex.id] = ex
		ex.span.SetAttributes(scopeAttrs(e.Scope)...)
	}
	switch d := e.Data.(type) {
	case *event.ToolStartedData:
		t.toolStarted(ex, e, d)
	case *event.ToolData: // completed or failed
		t.toolEnded(ex, e, d)
	case *event.ToolBlockedData:
		sp := ex.toolSpan(d.ToolUseID)
		sp.SetAttributes(AttrBlockedBy.String(d.By))
		sp.AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(
			attribute.String("by", d.By), attribute.String("reason", d.Reason)))
	case *event.ApprovalData:
		attrs := []attribute.KeyValue{attribute.String("reason", d.Reason)}
		if e.Name == event.ApprovalResolved {
			attrs = append(attrs, attribute.Bool("allowed", d.Allowed), attribute.String("by", d.By), attribute.String("scope", d.Scope))
		}
		ex.toolSpan(d.ToolUseID).AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	case *event.HookFailedData:
		ex.toolSpan(d.ToolUseID).AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(
			attribute.String("hook", d.Hook), attribute.String("handler", d.Handler), attribute.String("error", d.Error),
			attribute.Bool("violation", d.Violation), attribute.Bool("fail_closed", d.FailClosed)))
	case *event.HookMessageData:
		ex.toolSpan(d.ToolUseID).AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(
			attribute.String("hook", d.Hook), attribute.String("handler", d.Handler), attribute.String("message", d.Message)))
	case *event.MiddlewareFailedData:
		ex.toolSpan(d.ToolUseID).AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(
			attribute.String("chain", d.Chain), attribute.String("middleware", d.Middleware), attribute.String("error", d.Error)))
	case *event.CompactionData:
		attrs := []attribute.KeyValue{attribute.String("trigger", d.Trigger), attribute.String("kind", d.Kind), attribute.Int("messages_before", d.MessagesBefore)}
		if e.Name == event.CompactionCompleted {
			attrs = append(attrs, attribute.Int("messages_after", d.MessagesAfter), attribute.String("skipped", d.Skipped), attribute.String("error", d.Error))
		}
		ex.span.AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	case *event.OutputRejectedData:
		ex.span.AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(attribute.Int("correction", d.Correction), attribute.String("error", d.Error)))
	case *event.VerificationData:
		ex.span.AddEvent(string(e.Name), trace.WithTimestamp(e.Time), trace.WithAttributes(attribute.String("command", d.Command), attribute.Bool("passed", d.Passed)))
	case *event.TurnCompletedData:
		ex.span.SetAttributes(AttrStopReason.String(d.StopReason), attribute.Int("orca.iterations", d.Iterations), attribute.Int("orca.tool_calls", d.ToolCalls))
		ex.span.SetAttributes(usageAttrs(d.Usage)...)
	case *event.SubagentData:
		ex.span.SetAttributes(AttrBackground.Bool(d.Background))
		if d.TaskID != "" {
			ex.span.SetAttributes(AttrTaskID.String(d.TaskID))
		}
	}
}

// claimFork finds the fork whose first event e is (subagent_started, in
// the fork's scope): the one the Forker started for that call of the
// parent execution.
func (t *Telemetry) claimFork(e event.Event) *execution {
	d, ok := e.Data.(*event.SubagentData)
	if !ok {
		return nil
	}
	k := callKey{e.ParentExecutionID, d.ToolUseID}
	q := t.pending[k]
	if len(q) == 0 {
		return nil
	}
	ex := q[0]
	if len(q) == 1 {
		delete(t.pending, k)
	} else {
		t.pending[k] = q[1:]
	}
	return ex
}

// toolSpan returns the open span of call id, else the execution's own (a
// hook of the turn, not of a call).
func (ex *execution) toolSpan(id string) trace.Span {
	if sp, ok := ex.tools[id]; ok && id != "" {
		return sp
	}
	return ex.span
}

// toolAttrs are an execute_tool span's attributes: the call's, in the
// execution sc (its arguments only when content is captured).
func (t *Telemetry) toolAttrs(name, id string, input []byte, sc scope.Scope) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIProviderNameKey.String(t.provider),
		semconv.GenAIToolName(name),
		semconv.GenAIToolCallID(id),
		semconv.GenAIToolType(toolType(name)),
		semconv.GenAIConversationID(sc.SessionID),
		AttrTurnID.String(sc.TurnID),
		AttrExecutionID.String(sc.ExecutionID),
	}
	if t.describe != nil {
		if d := t.describe(name); d != "" {
			attrs = append(attrs, semconv.GenAIToolDescription(d))
		}
	}
	if t.capture && len(input) > 0 {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(input)))
	}
	return attrs
}

func (t *Telemetry) toolStarted(ex *execution, e event.Event, d *event.ToolStartedData) {
	attrs := t.toolAttrs(d.ToolName, d.ToolUseID, d.Input, e.Scope)
	_, sp := t.tracer.Start(ex.ctx, "execute_tool "+d.ToolName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	ex.tools[d.ToolUseID] = sp
}

func (t *Telemetry) toolEnded(ex *execution, e event.Event, d *event.ToolData) {
	sp, ok := ex.tools[d.ToolUseID]
	if !ok {
		return
	}
	delete(ex.tools, d.ToolUseID)
	if t.capture {
		sp.SetAttributes(semconv.GenAIToolCallResultKey.String(d.Output))
	}
	if d.IsError {
		// The observation may quote what the tool touched: it is the
		// description only with content capture.
		desc := "the call failed or was refused"
		if t.capture {
			desc = d.Output
		}
		sp.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		sp.SetStatus(codes.Error, desc)
	}
	sp.End(trace.WithTimestamp(e.Time))
}

// finish ends an execution's span with what its result says, and the
// spans of calls that never ended (a parked call, a turn that failed).
func (t *Telemetry) finish(ex *execution, res *agent.Result, err error) {
	t.mu.Lock()
	if ex.id != "" && t.execs[ex.id] == ex {
		delete(t.execs, ex.id)
	}
	open := ex.tools
	ex.tools = map[string]trace.Span{}
	t.mu.Unlock()
	for id, sp := range open {
		if res != nil && res.Parked != nil && res.Parked.ToolUseID == id {
			sp.AddEvent("parked", trace.WithAttributes(attribute.String("reason", res.Parked.Reason)))
		}
		sp.SetAttributes(attribute.Bool("orca.tool.completed", false))
		sp.End()
	}
	if res != nil {
		if ex.id == "" { // no event came (nobody emits for a run refused before it started)
			ex.span.SetAttributes(scopeAttrs(res.Scope)...)
		}
		ex.span.SetAttributes(AttrStopReason.String(string(res.StopReason)))
		ex.span.SetAttributes(usageAttrs(res.Usage)...)
		if t.capture && res.Answer != "" {
			ex.span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputMessagesJSON(llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(res.Answer)}}, "stop")))
		}
		if res.StopReason == agent.StopFailed && err == nil {
			err = res.Err
		}
		if res.StopReason == agent.StopAwaitingApproval && res.Depth == 0 && res.SessionID != "" {
			t.remember(res.SessionID, ex.span.SpanContext())
		}
	}
	if err != nil {
		ex.span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		ex.span.SetStatus(codes.Error, err.Error())
	}
	ex.span.End()
}

// maxParked bounds the parked turns remembered: sessions whose parked
// call is never decided in this process must not grow the map forever.
const maxParked = 4096

// remember keeps the span of session's turn that parked, for the turn that
// goes on once the call is decided.
func (t *Telemetry) remember(session string, sc trace.SpanContext) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.parked[session]; !ok && len(t.parked) >= maxParked {
		for k := range t.parked { // any one: the map has no order to keep
			delete(t.parked, k)
			break
		}
	}
	t.parked[session] = sc
}

// scopeAttrs are a scope's ids as span attributes.
func scopeAttrs(s scope.Scope) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrExecutionID.String(s.ExecutionID), AttrTurnID.String(s.TurnID), AttrRuntimeID.String(s.RuntimeID)}
	if s.Depth > 0 {
		attrs = append(attrs, AttrParentExecution.String(s.ParentExecutionID), AttrDepth.Int(s.Depth))
	}
	return attrs
}

// usageAttrs are the conventions' usage attributes: input tokens include
// the cached ones (orca counts them apart).
func usageAttrs(u llm.Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens)),
		semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadTokens)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWriteTokens)),
	}
}

// executeTool is the tool_execution middleware: the tool runs in the
// context of its call's span, and a tool that forks gets a Forker that
// traces each fork.
func (t *Telemetry) executeTool(ctx context.Context, call *tool.Call, next middleware.ToolNext) (tool.Result, error) {
	t.mu.Lock()
	var sp trace.Span
	if ex := t.execs[call.ExecutionID]; ex != nil {
		sp = ex.tools[call.ID]
	}
	t.mu.Unlock()
	if sp == nil {
		// A call no traced execution tells of (Runtime.CallTool outside a
		// turn, an executor without the interceptor): its span is this
		// middleware's, around the tool alone.
		return t.untracedTool(ctx, call, next)
	}
	ctx = trace.ContextWithSpan(ctx, sp)
	if f := subagent.ForkerFrom(ctx); f != nil {
		ctx = subagent.WithForker(ctx, &forker{Forker: f, t: t, call: call})
	}
	return next(ctx, call)
}

func (t *Telemetry) untracedTool(ctx context.Context, call *tool.Call, next middleware.ToolNext) (tool.Result, error) {
	attrs := t.toolAttrs(call.Name, call.ID, call.Input, call.Scope)
	ctx, sp := t.tracer.Start(ctx, "execute_tool "+call.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer sp.End()
	if f := subagent.ForkerFrom(ctx); f != nil {
		ctx = subagent.WithForker(ctx, &forker{Forker: f, t: t, call: call})
	}
	res, err := next(ctx, call)
	switch {
	case err != nil:
		sp.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		sp.SetStatus(codes.Error, err.Error())
	case res.IsError:
		sp.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		sp.SetStatus(codes.Error, "the call failed")
	}
	if t.capture && err == nil {
		sp.SetAttributes(semconv.GenAIToolCallResultKey.String(res.Content))
	}
	return res, err
}

// forker wraps the runtime's Forker for one call: each fork it prepares
// runs in an invoke_agent span under the call's span.
type forker struct {
	subagent.Forker
	t    *Telemetry
	call *tool.Call
}

func (f *forker) Fork(ctx context.Context, agentName, prompt string, background bool) (*subagent.Fork, error) {
	fk, err := f.Forker.Fork(ctx, agentName, prompt, background)
	if err != nil || fk == nil {
		return fk, err
	}
	parent := trace.SpanFromContext(ctx) // the call's
	run, t, call := fk.Run, f.t, f.call
	out := *fk
	out.Run = func(ctx context.Context) (string, error) {
		// A background task's context carries nothing of the call's: the
		// call's span is the fork's parent all the same.
		ctx = trace.ContextWithSpan(ctx, parent)
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIProviderNameKey.String(t.provider),
			semconv.GenAIAgentName(fk.Agent),
			semconv.GenAIConversationID(call.SessionID),
			AttrTurnID.String(call.TurnID),
			AttrParentExecution.String(call.ExecutionID),
			AttrBackground.Bool(background),
		}
		if t.capture {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(inputMessagesJSON([]llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(prompt)}}})))
		}
		ctx, span := t.tracer.Start(ctx, "invoke_agent "+fk.Agent, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		ex := &execution{span: span, ctx: ctx, tools: map[string]trace.Span{}}
		k := callKey{call.ExecutionID, call.ID}
		t.mu.Lock()
		t.pending[k] = append(t.pending[k], ex)
		t.mu.Unlock()
		answer, err := run(ctx)
		t.mu.Lock()
		if q := t.pending[k]; len(q) > 0 { // no event claimed it (nobody listened)
			for i, p := range q {
				if p == ex {
					q = append(q[:i:i], q[i+1:]...)
					break
				}
			}
			if len(q) == 0 {
				delete(t.pending, k)
			} else {
				t.pending[k] = q
			}
		}
		t.mu.Unlock()
		if t.capture && err == nil {
			span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputMessagesJSON(llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(answer)}}, "stop")))
		}
		var failed error
		if err != nil {
			failed = fmt.Errorf("subagent %s: %w", fk.Agent, err)
		}
		t.finish(ex, nil, failed)
		return answer, err
	}
	return &out, nil
}

// messagesJSON is messages as the conventions' gen_ai.*.messages hold
// them: a JSON array of {role, parts}, each part {type, content} for
// text, {type: tool_call, id, name, arguments} and {type:
// tool_call_response, id, response}.
func inputMessagesJSON(msgs []llm.Message) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, messageOf(m))
	}
	return mustJSON(out, "[]")
}

// outputMessagesJSON is gen_ai.output.messages: the model's message, with
// the reason it finished (finishReason), which the conventions require.
func outputMessagesJSON(m llm.Message, finish string) string {
	msg := messageOf(m)
	msg.FinishReason = finish
	return mustJSON([]message{msg}, "[]")
}

// message and part are the conventions' messages (gen-ai-input-messages
// and gen-ai-output-messages JSON schemas): a part's required fields are
// there even when empty.
type message struct {
	Role         string `json:"role"`
	Parts        []any  `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type textPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

type toolCallPart struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

type toolResponsePart struct {
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"`
	Response string `json:"response"`
}

// uriPart is an image or a document by reference (the conventions' uri
// part): its digest, never its bytes, which the session store keeps.
type uriPart struct {
	Type     string `json:"type"`
	Modality string `json:"modality"`
	MimeType string `json:"mime_type,omitempty"`
	URI      string `json:"uri"`
}

func uriOf(m *llm.Media) uriPart {
	p := uriPart{Type: "uri", Modality: "image", URI: "orca-attachment:"}
	if m != nil {
		p.MimeType, p.URI = m.MediaType, "orca-attachment:"+m.Digest
		if m.MediaType == llm.MediaPDF {
			p.Modality = "document"
		}
	}
	return p
}

func messageOf(m llm.Message) message {
	mm := message{Role: string(m.Role), Parts: []any{}}
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			mm.Parts = append(mm.Parts, textPart{Type: "text", Content: b.Text})
		case llm.BlockToolUse:
			mm.Parts = append(mm.Parts, toolCallPart{Type: "tool_call", ID: b.ID, Name: b.Name, Arguments: validJSON(b.Input)})
		case llm.BlockToolResult:
			mm.Parts = append(mm.Parts, toolResponsePart{Type: "tool_call_response", ID: b.ToolUseID, Response: b.Content})
		case llm.BlockImage, llm.BlockDocument:
			mm.Parts = append(mm.Parts, uriOf(b.Media))
		}
	}
	return mm
}

// finishReason is an llm.StopReason as the conventions name it: stop,
// length, content_filter, tool_call or error.
func finishReason(s llm.StopReason) string {
	switch s {
	case llm.StopToolUse:
		return "tool_call"
	case llm.StopMaxTokens:
		return "length"
	case llm.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

func mustJSON(v any, fallback string) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fallback
	}
	return string(b)
}

func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		b, _ := json.Marshal(string(raw))
		return b
	}
	return raw
}
