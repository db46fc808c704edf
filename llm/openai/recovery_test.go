package openai_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
)

// The API's own "prompt is too long": the turn shrinks its prompt before
// it asks again — never the same request twice — and ends the turn,
// naming the sizes, when nothing can be cut.
func TestPromptTooLongRecovery(t *testing.T) {
	text := func(s string) llm.Response {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s)}}, StopReason: llm.StopEndTurn}
	}
	history := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("turn one")}}, {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("answer one")}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("turn two")}}, {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("answer two")}},
	}
	run := func(api *fakeAPI, h []llm.Message) (*agent.Result, error) {
		t.Helper()
		rt, err := agent.New(agent.Definition{Name: "r", KeepTurns: 1}, agent.Collaborators{Client: newClient(t, api.v1()), Workspace: t.TempDir(), ConfigDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		return agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "turn three", History: h})
	}

	// Refused, summarised, sent again smaller, answered.
	api := newFakeAPI(t, answer{err: llm.ErrPromptTooLong}, answer{resp: text("The user asked two things.")}, answer{resp: text("answer three")})
	res, err := run(api, history)
	if err != nil || res.Answer != "answer three" {
		t.Fatalf("%+v, %v", res, err)
	}
	seen := api.seen()
	if len(seen) != 3 || reflect.DeepEqual(seen[0].Messages, seen[2].Messages) || len(seen[2].Messages) >= len(seen[0].Messages) {
		t.Errorf("requests: %d; the prompt sent after the refusal should be the shrunk one", len(seen))
	}

	// Nothing to cut: one request, and a failed turn that says why.
	api = newFakeAPI(t, answer{err: llm.ErrPromptTooLong})
	res, err = run(api, nil)
	if res.StopReason != agent.StopFailed || !errors.Is(err, llm.ErrPromptTooLong) || api.requests() != 1 {
		t.Errorf("%s, %v, %d requests; want failed after one", res.StopReason, err, api.requests())
	}
	if err != nil && !strings.Contains(err.Error(), "nothing more can be cut") {
		t.Errorf("error %q does not say why", err)
	}
}
