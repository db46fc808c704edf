// Package telemetry traces and measures orca's runs with OpenTelemetry,
// following the GenAI semantic conventions (v1.41.0): an invoke_agent span
// around each execution (the user's turn and each subagent fork), a chat
// span around each attempt of each model call, an execute_tool span around
// each tool call, and the metrics gen_ai.client.token.usage and
// gen_ai.client.operation.duration. The whole agent tree is one trace: a
// fork's invoke_agent span is a child of the execute_tool span of the Task
// (or Skill) call that started it, in the foreground or in the background.
//
// It is the one package of orca that links OpenTelemetry; the core does
// not. It plugs in through the seams every program has: an interceptor
// (Interceptor) and two middleware (Register), over the events each
// execution streams to its Request.OnEvent.
//
//	tel, err := telemetry.FromEnv(ctx, os.Getenv, telemetry.Options{Provider: "anthropic"})
//	// tel is nil unless the OTEL_* variables name an exporter endpoint
//	unregister, err := tel.Register(services.Middleware)
//	exec := intercept.Wrap(agent.NewExecutor(), tel.Interceptor())
//	…
//	defer tel.Shutdown(ctx) // flushes what is buffered
//
// # Where each span comes from
//
// invoke_agent of a user's turn is the interceptor's: it starts the span
// in the run's context, so that a caller's span (a server's request) is
// its parent, and wraps the request's OnEvent and OnBackgroundEvent, which
// see every event of the execution and of its forks synchronously, on the
// goroutines that run them.
//
// execute_tool spans the call's whole pipeline, from tool_exec_started to
// tool_exec_completed or tool_exec_failed: the tool_request middleware,
// the hooks, the policy and the approval, then the tool. So a call that was
// refused before it ran still has its span, and the decisions about it —
// approval_requested, approval_resolved, tool_blocked, hook_failed,
// hook_message, middleware_failed — are events of that span. The
// tool_execution middleware puts the span in the tool's context, so that
// what the tool does (an MCP server's HTTP call, a fork) nests under it.
//
// chat is the llm_execution middleware's: once per attempt, in the context
// of the execution that calls the model, whose span is its parent.
//
// invoke_agent of a fork comes from the tool_execution middleware too: it
// hands the tool a subagent.Forker that wraps the runtime's, and each fork
// that Forker prepares runs inside its own invoke_agent span, a child of
// the call's span, whichever context the fork runs in (a background
// task's has none of the call's values).
//
// A turn that goes on after a parked call was decided is a child of the
// turn that parked, in its trace: remembered when both ran through this
// Telemetry, else from the traceparent the parked turn left with the
// parked call (agent.Parked.TraceParent, kept by the session in the store
// and given back as agent.Request.TraceParent), so across processes too.
// The caller's span, if any, is then a link.
//
// Content — prompts, answers, tool arguments and results — is recorded
// only when Options.CaptureContent says so
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true with FromEnv).
package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/middleware"
)

// ScopeName is the instrumentation scope of orca's spans and metrics.
const ScopeName = "github.com/orca-agent/orca/telemetry"

// Order is the interceptor's order: among the infrastructure observers
// (see intercept), outside security and business interceptors, so that a
// run they block is still traced.
const Order = -900

// MiddlewareName is the name of both middleware Register adds.
const MiddlewareName = "telemetry"

// Priority is the middleware's priority: outermost, so that a chat span
// covers whatever other middleware does around the provider.
const Priority = -1000

// orca's own attributes: the ids of the scope, beside the conventions'.
const (
	AttrTurnID          = attribute.Key("orca.turn.id")
	AttrExecutionID     = attribute.Key("orca.execution.id")
	AttrParentExecution = attribute.Key("orca.parent_execution.id")
	AttrRuntimeID       = attribute.Key("orca.runtime.id")
	AttrDepth           = attribute.Key("orca.depth")
	AttrFeature         = attribute.Key("orca.feature")
	AttrStopReason      = attribute.Key("orca.stop_reason")
	AttrBlockedBy       = attribute.Key("orca.tool.blocked_by")
	AttrBackground      = attribute.Key("orca.background")
	AttrTaskID          = attribute.Key("orca.task.id")
	// AttrResumed marks a turn that went on after a parked call was
	// decided, in the parked turn's trace.
	AttrResumed = attribute.Key("orca.resumed")
	// AttrStep numbers a later step of a turn run step by step (a durable
	// engine's activity): its invoke_agent span is a child of the first
	// step's, in its trace.
	AttrStep = attribute.Key("orca.step")
)

// Options configure a Telemetry.
type Options struct {
	// TracerProvider makes the spans; nil: none are made.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil: none are recorded.
	MeterProvider metric.MeterProvider
	// Provider is the model provider, gen_ai.provider.name ("anthropic",
	// "openai", …); "" records "unknown". Every span has it. orca's names
	// of providers (llm/provider's) are recorded as the GenAI conventions
	// name them: vertex as gcp.vertex_ai, bedrock as aws.bedrock, …
	Provider string
	// ServerAddress and ServerPort are where the model's API is
	// (server.address, server.port of the chat spans); "" and 0: not
	// recorded.
	ServerAddress string
	ServerPort    int
	// ToolDescription, if set, gives a tool's description by its name
	// (gen_ai.tool.description of the execute_tool spans); "" for none.
	ToolDescription func(name string) string
	// CaptureContent records prompts, answers, tool arguments and tool
	// results on the spans. They may hold secrets and personal data: off
	// unless asked for.
	CaptureContent bool
	// shutdown releases the providers FromEnv made.
	shutdown func(context.Context) error
}

// Telemetry traces and measures runs. It is safe for concurrent use; one
// value serves every runtime and session of a process. A nil *Telemetry
// is off: its Interceptor is nil (intercept.Wrap skips it), Register adds
// nothing, Shutdown does nothing.
type Telemetry struct {
	tracer trace.Tracer
	// tracing: spans are made (a TracerProvider was given); without it
	// only the metrics are, and nothing watches the runs' events.
	tracing  bool
	provider string
	capture  bool
	server   []attribute.KeyValue // server.address and server.port of chat spans
	describe func(string) string
	shutdown func(context.Context) error

	tokens   metric.Int64Histogram
	duration metric.Float64Histogram

	mu sync.Mutex
	// execs are the executions being traced, by execution id; pending the
	// forks whose invoke_agent span started before the fork's first event
	// named its execution, by the parent's execution and the call.
	execs   map[string]*execution
	pending map[callKey][]*execution
	// parked are the spans of turns that parked a call, by session: the
	// session's next turn, which goes on once the call is decided, joins
	// their trace.
	parked map[string]trace.SpanContext
}

type callKey struct{ exec, toolUseID string }

// New returns a Telemetry over the providers opts names.
func New(opts Options) (*Telemetry, error) {
	tp, mp := opts.TracerProvider, opts.MeterProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &Telemetry{
		tracer:   tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		tracing:  opts.TracerProvider != nil,
		provider: ProviderName(opts.Provider),
		capture:  opts.CaptureContent,
		describe: opts.ToolDescription,
		shutdown: opts.shutdown,
		execs:    make(map[string]*execution),
		pending:  make(map[callKey][]*execution),
		parked:   make(map[string]trace.SpanContext),
	}
	if opts.ServerAddress != "" {
		t.server = append(t.server, semconv.ServerAddress(opts.ServerAddress))
		if opts.ServerPort > 0 {
			t.server = append(t.server, semconv.ServerPort(opts.ServerPort))
		}
	}
	if t.provider == "" {
		t.provider = "unknown"
	}
	meter := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	// The buckets are the ones the conventions advise.
	if t.tokens, err = meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)); err != nil {
		return nil, err
	}
	if t.duration, err = meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
		return nil, err
	}
	return t, nil
}

// CaptureContent reports whether content is recorded.
func (t *Telemetry) CaptureContent() bool { return t != nil && t.capture }

// Interceptor returns the interceptor that traces each run as an
// invoke_agent span (order Order); nil for a nil Telemetry or one that
// makes no spans.
func (t *Telemetry) Interceptor() agent.Interceptor {
	if t == nil || !t.tracing {
		return nil
	}
	return intercept.Named[*agent.Runtime, agent.Request, *agent.Result](MiddlewareName, Order, t.intercept)
}

// Start starts a span of the caller's own (orca eval's case), under the
// span ctx carries if any: the runs started with the context it returns
// nest under it. For a nil Telemetry, or one that makes no spans, the
// span does nothing and ctx is returned as it is.
func (t *Telemetry) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil || !t.tracing {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// Register adds the llm_execution middleware (chat spans and the metrics)
// and, when it makes spans, the tool_execution middleware (the tool's
// context, forks' spans) to r, and returns the function that removes
// them. For a nil Telemetry it adds nothing.
func (t *Telemetry) Register(r *middleware.Registry) (unregister func(), err error) {
	if t == nil {
		return func() {}, nil
	}
	un1, err := r.RegisterLLMExecution(MiddlewareName, t.chat, middleware.Priority(Priority))
	if err != nil {
		return nil, err
	}
	if !t.tracing {
		return un1, nil
	}
	un2, err := r.RegisterToolExecution(MiddlewareName, t.executeTool, middleware.Priority(Priority))
	if err != nil {
		un1()
		return nil, err
	}
	return func() { un2(); un1() }, nil
}

// Shutdown flushes and releases the providers FromEnv made; for a
// Telemetry over providers of the caller's (New), whoever made them shuts
// them down, and Shutdown does nothing.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// toolType is gen_ai.tool.type: an MCP server's tool is an extension (it
// runs outside the agent), every other tool a function of the agent's.
func toolType(name string) string {
	if strings.HasPrefix(name, "mcp__") {
		return "extension"
	}
	return "function"
}

// errorType is error.type for err: its Go type, as the conventions allow
// when there is no better low-cardinality name.
func errorType(err error) string {
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	var me *middleware.Error
	if errors.As(err, &me) {
		return "middleware"
	}
	return "_OTHER"
}

// ProviderName is gen_ai.provider.name for p, a provider as orca names it
// (llm/provider's names): the GenAI semantic conventions' name where they
// have one, p itself otherwise.
func ProviderName(p string) string {
	switch p {
	case "openai-responses":
		return "openai"
	case "gemini":
		return "gcp.gemini"
	case "vertex", "anthropic-vertex":
		return "gcp.vertex_ai"
	case "bedrock":
		return "aws.bedrock"
	case "azure":
		return "azure.ai.openai"
	}
	return p
}
