package bedrock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/bedrock"
)

// A client for Claude on Bedrock in Europe, with extended thinking. The
// credentials come from the standard AWS chain ($AWS_PROFILE after aws
// sso login, access keys of the environment, the instance's role…) or
// from $AWS_BEARER_TOKEN_BEDROCK; without Region, the region from
// $AWS_REGION or the profile.
func ExampleNew() {
	ctx := context.Background()
	client, err := bedrock.New(ctx,
		bedrock.Region("eu-central-1"),
		bedrock.Model("eu.anthropic.claude-sonnet-4-6"),
		bedrock.Thinking(4096),
	)
	if err != nil {
		log.Fatal(err) // no region, or no credentials: the error says what to set
	}
	resp, err := client.Generate(ctx, &llm.Request{
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
	fmt.Println(resp.StopReason, resp.Usage.OutputTokens, resp.ID)
}
