package responses_test

import (
	"context"
	"fmt"
	"log"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/openai/responses"
)

// A client of OpenAI's Responses API with $OPENAI_API_KEY set, its
// reasoning summarised. The reasoning comes back as redacted_thinking
// blocks: keep the message whole in the conversation, and the next
// request sends the reasoning back.
func ExampleNew() {
	client, err := responses.New(
		responses.Model("gpt-6.1-terra"),
		responses.ReasoningSummary("auto"),
	)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Generate(context.Background(), &llm.Request{
		System:   "You are terse.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Say hello.")}}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text())
}
