package telemetry_test

import (
	"context"
	"fmt"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/telemetry"
	"github.com/orca-agent/orca/toolset"
)

// Trace a runtime's turns into a provider of the program's own: the
// interceptor goes into the executor's chain, the middleware into the
// services' registry. The turn writes a file, then answers.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "orca-example-")
	defer os.RemoveAll(dir)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	tel, _ := telemetry.New(telemetry.Options{TracerProvider: tp, Provider: "anthropic"})
	svc := agent.NewServices(nil)
	defer svc.Close()
	unregister, _ := tel.Register(svc.Middleware)
	defer unregister()

	model := script.New().Script("session-1",
		script.Call("Write", map[string]string{"file_path": "hello.txt", "content": "hello\n"}),
		script.Text("I wrote hello.txt."),
	)
	rt, _ := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "helper", Model: "claude-sonnet-4-5"}, agent.Collaborators{Client: model, Workspace: dir, Services: svc})
	defer rt.Close()
	exec := intercept.Wrap(agent.NewExecutor(), tel.Interceptor())
	exec.Execute(context.Background(), rt, agent.Request{SessionID: "session-1", Input: "Create hello.txt."})

	// The spans in the order they ended: the children first, indented.
	for _, s := range spans.GetSpans() {
		indent := ""
		if s.Parent.IsValid() {
			indent = "  "
		}
		fmt.Println(indent + s.Name)
	}
	// Output:
	//   chat claude-sonnet-4-5
	//   execute_tool Write
	//   chat claude-sonnet-4-5
	// invoke_agent helper
}
