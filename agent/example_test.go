package agent_test

import (
	"context"
	"fmt"
	"os"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm/script"
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
		agent.Definition{Name: "helper", SystemPrompt: "You are a careful assistant."},
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
