package chat_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/chat"
	"github.com/orca-agent/orca/policy"
)

// orca chat, embedded: a chat of the workspace's sessions on standard
// input and output (a terminal UI on a terminal, lines read as a script
// otherwise). Here the input is a script of two lines — a message, then
// /cost — and the scripted model stands in for Model:
// app.ModelConfig{Provider: "anthropic"}. (The chat shows how long each
// turn took, so this example shows no output; TestChatOverApp runs it.)
func Example() {
	dir, _ := os.MkdirTemp("", "orca-example")
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`[
		{"tool_calls": [{"name": "Write", "input": {"file_path": "hello.txt", "content": "hello, world\n"}}]},
		{"text": "I wrote hello.txt."}]`), 0o644)

	ctx := context.Background()
	c := chat.New(ctx, chat.Options{In: strings.NewReader("Create hello.txt saying hello.\n/cost\n"), Out: os.Stdout})
	defer c.Close()
	a, err := app.Open(ctx, app.Config{
		Workspace: dir,
		ConfigDir: "-", // the example reads no user configuration
		Model:     app.ModelConfig{Script: script},
		Mode:      policy.ModeAcceptEdits,
		Approver:  c.Approver(), // nil here: the input is not a terminal
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	ls, err := a.Session(ctx, app.SessionOptions{ID: "example", OnEvent: c.OnEvent})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Run(ctx, a, ls); err != nil {
		fmt.Println(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "hello.txt"))
	fmt.Printf("hello.txt: %q\n", b)
}
