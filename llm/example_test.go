package llm_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
)

// A conversation one tool call long: the request offers a tool, the model
// asks for it, and the next request carries the result. The scripted
// model stands in for a provider's client (llm/anthropic, llm/openai);
// the code around it is the same.
func ExampleClient() {
	var model llm.Client = script.New().Script("session-1",
		script.Call("Read", map[string]string{"file_path": "go.mod"}),
		script.Text("The module is example.com/hello."))

	req := &llm.Request{
		System:   "You answer questions about the code in the workspace.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What is the module's path?")}}},
		Tools: []llm.ToolDefinition{{
			Name:        "Read",
			Description: "Reads a file of the workspace.",
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}`),
		}},
		MaxTokens: 1024,
		Metadata:  llm.Metadata{TraceID: "session-1", Feature: llm.FeatureAgent},
	}
	for {
		resp, err := model.Generate(context.Background(), req, func(d llm.Delta) {
			if d.Type == llm.DeltaText {
				fmt.Print(d.Text) // the answer as it streams
			}
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		req.Messages = append(req.Messages, resp.Message)
		if resp.StopReason != llm.StopToolUse {
			fmt.Println()
			return
		}
		var results []llm.Block
		for _, use := range resp.Message.ToolUses() {
			fmt.Println(use.Name, string(use.Input))
			results = append(results, llm.ToolResultBlock(use.ID, "module example.com/hello\n", false))
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: results})
	}
	// Output:
	// Read {"file_path":"go.mod"}
	// The module is example.com/hello.
}
