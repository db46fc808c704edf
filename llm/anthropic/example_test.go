package anthropic_test

import (
	"context"
	"fmt"
	"log"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
)

// A client for a proxy or gateway that serves the Messages API, with
// extended thinking. Without APIKey, the key comes from
// $ANTHROPIC_API_KEY; without BaseURL, from $ANTHROPIC_BASE_URL or
// Anthropic's own.
func ExampleNew() {
	client, err := anthropic.New(
		anthropic.APIKey("sk-ant-…"),
		anthropic.BaseURL("https://llm-gateway.example.com"),
		anthropic.Model("claude-opus-5-5"),
		anthropic.Thinking(4096),
	)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Generate(context.Background(), &llm.Request{
		System:   "You are terse.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Say hello.")}}},
	}, func(d llm.Delta) {
		if d.Type == llm.DeltaText {
			fmt.Print(d.Text) // the answer as it streams
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Println(resp.StopReason, resp.Usage.OutputTokens)
}
