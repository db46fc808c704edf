package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/policy"
)

// What `orca run` does, embedded: the workspace's settings, hooks and
// extensions, its SQLite session store with a row per event, a policy, a
// budget, one turn of a session with its events shown as they come.
// (The scripted model stands in for Model: app.ModelConfig{Provider: "anthropic"}.)
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "orca-example")
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"responses": [
		{"tool_calls": [{"name": "Write", "input": {"file_path": "hello.txt", "content": "hello, world\n"}}]},
		{"text": "I wrote hello.txt."}]}`), 0o644)

	ctx := context.Background()
	a, err := app.Open(ctx, app.Config{
		Workspace: dir,
		ConfigDir: "-", // the example reads no user configuration
		Model:     app.ModelConfig{Script: script},
		Mode:      policy.ModeAcceptEdits,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	s, err := a.Session(ctx, app.SessionOptions{OnEvent: func(e event.Event) {
		if d, ok := e.Data.(*event.ToolData); ok && e.Name == event.ToolExecCompleted {
			fmt.Printf("%s: %s\n", d.ToolName, d.Output)
		}
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s.SetBudget(ctx, &budget.Limits{ToolCalls: 20})
	res, err := s.Run(ctx, "Create hello.txt saying hello.")
	fmt.Println(res.StopReason, res.Answer, err)
	// Output:
	// Write: Created hello.txt (13 bytes, 1 line).
	// answered I wrote hello.txt. <nil>
}
