package agent_test

import (
	"context"
	"fmt"
	"os"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/toolset"
)

// Build a runtime over a folder, then run one turn. The scripted model asks
// for one Write and then answers; the file is really written.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "orca-example-")
	defer os.RemoveAll(dir)

	model := script.New().Script("session-1",
		script.Call("Write", map[string]string{"file_path": "hello.txt", "content": "hello, world\n"}),
		script.Text("I wrote hello.txt."),
	)
	rt, err := agent.New(
		agent.Definition{Name: "helper", SystemPrompt: "You are a careful assistant.", ToolProviders: toolset.Default()},
		agent.Collaborators{Client: model, Workspace: dir},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	res, err := agent.NewExecutor().Execute(context.Background(), rt, agent.Request{
		SessionID: "session-1",
		Input:     "Create hello.txt saying hello.",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(dir + "/hello.txt")
	fmt.Println(res.StopReason, res.Iterations, res.ToolCalls)
	fmt.Println(res.Answer)
	fmt.Print(string(b))
	// Output:
	// answered 2 1
	// I wrote hello.txt.
	// hello, world
}

// A blocking interceptor builds a result, so it is written for the agent's
// concrete types; one that built the wrong result type would not compile.
// A blocked run runs nothing: no model call, no tool, no event.
func Example_interceptors() {
	dir, _ := os.MkdirTemp("", "orca-example-")
	defer os.RemoveAll(dir)
	model := script.New().Script("alice-1", script.Text("Hello, Alice."))
	rt, _ := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "greeter"}, agent.Collaborators{Client: model, Workspace: dir})
	defer rt.Close()

	allowed := map[string]bool{"alice-1": true}
	authz := intercept.Named("authz", -50, func(ctx context.Context, rt *agent.Runtime, req agent.Request, next intercept.Next[*agent.Runtime, agent.Request, *agent.Result]) (*agent.Result, error) {
		if !allowed[req.SessionID] {
			return &agent.Result{Scope: scope.Scope{RuntimeID: rt.ID(), SessionID: req.SessionID}, StopReason: agent.StopBlocked}, nil
		}
		return next.Proceed(ctx, rt, req)
	})
	exec := intercept.Wrap(agent.NewExecutor(), authz) // type arguments inferred from the executor

	res, _ := exec.Execute(context.Background(), rt, agent.Request{SessionID: "mallory-1", Input: "hi"})
	fmt.Println(res.StopReason, len(model.Calls()))
	res, _ = exec.Execute(context.Background(), rt, agent.Request{SessionID: "alice-1", Input: "hi"})
	fmt.Println(res.StopReason, res.Answer)
	// Output:
	// blocked 0
	// answered Hello, Alice.
}
