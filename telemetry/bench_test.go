package telemetry_test

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/telemetry"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

type noop struct{}

func (noop) Name() string        { return "Noop" }
func (noop) Description() string { return "Does nothing." }
func (noop) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
}
func (noop) Execute(context.Context, *tool.Call) tool.Result { return tool.Result{Content: "ok"} }

// BenchmarkStep measures what telemetry costs per step of the loop (one
// model call and one no-op tool call, as agent's BenchmarkLoop/K=1 runs
// them): off (no interceptor, no middleware: the loop as it is), on (the
// spans to an in-memory exporter, the metrics to a manual reader), and on
// with content capture.
func BenchmarkStep(b *testing.B) {
	const steps = 100
	for _, mode := range []string{"off", "on", "on+content"} {
		b.Run(mode, func(b *testing.B) {
			calls := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("call_0", "Noop", json.RawMessage(`{"n":1}`))}}
			toolResp := &llm.Response{Message: calls, StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}}
			answer := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}
			client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
				if len(req.Messages) >= 2*steps+1 {
					return answer, nil
				}
				return toolResp, nil
			})
			fs, err := workspace.OpenLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer fs.Close()
			svc := agent.NewServices(nil)
			defer svc.Close()
			providers := append(toolset.Default(), tool.Static("noop", noop{}))
			rt, err := agent.New(agent.Definition{Name: "bench", Model: "m", MaxIterations: steps + 1, ToolProviders: providers},
				agent.Collaborators{Client: client, FS: fs, Services: svc})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			var exec agent.Runner = agent.NewExecutor()
			spans := tracetest.NewInMemoryExporter()
			if mode != "off" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(context.Background())
				defer mp.Shutdown(context.Background())
				tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Provider: "bench", CaptureContent: mode == "on+content"})
				if err != nil {
					b.Fatal(err)
				}
				unregister, err := tel.Register(svc.Middleware)
				if err != nil {
					b.Fatal(err)
				}
				defer unregister()
				exec = intercept.Wrap(agent.NewExecutor(), tel.Interceptor())
			}
			var events int
			req := agent.Request{SessionID: "bench", Input: "go", OnEvent: func(event.Event) { events++ }}
			ctx := context.Background()

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := exec.Execute(ctx, rt, req)
				if err != nil || res.ToolCalls != steps {
					b.Fatalf("turn: %+v, %v", res, err)
				}
				if mode != "off" && len(spans.GetSpans()) != 2*steps+2 {
					b.Fatalf("%d spans, want %d", len(spans.GetSpans()), 2*steps+2)
				}
				spans.Reset()
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			n := float64(b.N * steps)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/step")
		})
	}
}
