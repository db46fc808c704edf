package openai_test

import (
	"context"
	"fmt"
	"log"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/openai"
)

// A client for a local Ollama server, which speaks Chat Completions and
// needs no API key. For OpenAI itself, leave out BaseURL and set
// $OPENAI_API_KEY.
func ExampleNew() {
	client, err := openai.New(
		openai.BaseURL("http://localhost:11434/v1"),
		openai.Model("qwen3-coder"),
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

// A client of an Azure OpenAI resource's deployment: the model is the
// deployment's name. The key comes from $AZURE_OPENAI_API_KEY (or APIKey);
// an empty endpoint, from $AZURE_OPENAI_ENDPOINT; an empty API version,
// from $OPENAI_API_VERSION, else DefaultAzureAPIVersion.
func ExampleAzure() {
	client, err := openai.New(
		openai.Azure("https://my-resource.openai.azure.com", ""),
		openai.Model("my-gpt-deployment"),
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
