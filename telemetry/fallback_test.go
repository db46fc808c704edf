package telemetry_test

import (
	"context"
	"testing"
	"testing/synctest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/telemetry"
)

type answering func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error)

func (f answering) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	return f(ctx, req, onDelta)
}

// A call that falls over to another provider's model is a chat span of
// that provider and that model; the attempts on the primary are spans of
// the primary's, marked failed. Providers are named as the GenAI
// conventions name them.
func TestFallbackSpansNameTheServingProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		defer tp.Shutdown(context.Background())
		tel, err := telemetry.New(telemetry.Options{TracerProvider: tp, Provider: "vertex"})
		if err != nil {
			t.Fatal(err)
		}
		svc := agent.NewServices(nil)
		defer svc.Close()
		unregister, _ := tel.Register(svc.Middleware)
		defer unregister()
		primary := answering(func(context.Context, *llm.Request, func(llm.Delta)) (*llm.Response, error) {
			return nil, &llm.Error{Kind: llm.KindOverloaded, StatusCode: 529, Message: "Overloaded"}
		})
		second := answering(func(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
			return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("hi")}}, StopReason: llm.StopEndTurn, Model: req.Model}, nil
		})
		rt, err := agent.New(agent.Definition{Name: "a", Model: "gemini-4-carbon", MaxRetries: 1},
			agent.Collaborators{Client: primary, Workspace: t.TempDir(), Services: svc,
				Fallbacks: []agent.Fallback{{Client: second, Model: "us.anthropic.claude-sonnet-4-6", Provider: "bedrock"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		exec := intercept.Wrap(agent.NewExecutor(), tel.Interceptor())
		if res, err := exec.Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "hi"}); err != nil || res.Answer != "hi" {
			t.Fatalf("%+v %v", res, err)
		}
		var got []string
		for _, s := range spans.GetSpans() {
			if s.Name == "invoke_agent a" {
				continue
			}
			got = append(got, s.Name+" "+str(s, "gen_ai.provider.name")+" "+s.Status.Code.String())
		}
		want := []string{"chat gemini-4-carbon gcp.vertex_ai Error", "chat gemini-4-carbon gcp.vertex_ai Error", "chat us.anthropic.claude-sonnet-4-6 aws.bedrock Unset"}
		if len(got) != len(want) {
			t.Fatalf("spans %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("span %d: %q, want %q", i, got[i], want[i])
			}
		}
	})
}
