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

// A client of Claude on Google Cloud's Vertex AI, signed in with
// Application Default Credentials (gcloud auth application-default
// login). Empty project and region come from $ANTHROPIC_VERTEX_PROJECT_ID
// and $CLOUD_ML_REGION, else $GOOGLE_CLOUD_PROJECT and
// $GOOGLE_CLOUD_LOCATION.
func ExampleVertex() {
	client, err := anthropic.New(
		anthropic.Vertex("my-project", "global"),
		anthropic.Model("claude-sonnet-4-5@20250929"), // Vertex AI's id of an older model
	)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Generate(context.Background(), &llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Say hello.")}}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text())
}
