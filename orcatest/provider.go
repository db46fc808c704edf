package orcatest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
)

// Answer is what a provider's fake API answers one request with: a
// response, or one of llm's sentinel errors (llm.ErrPromptTooLong …) in the
// provider's own wire form.
type Answer struct {
	Resp llm.Response
	Err  error
}

// FakeAPI starts a provider's fake API that gives answers in order and
// returns the provider's client for it, and what the API received so far
// (decoded back into llm form).
type FakeAPI func(t *testing.T, answers ...Answer) (llm.Client, func() []*llm.Request)

// TestPromptTooLong runs the real runtime against a provider's own
// "prompt is too long" errors: the turn shrinks its prompt before it asks
// again — never the same request twice — and, when nothing can be cut,
// ends after one request as failed, saying why.
func TestPromptTooLong(t *testing.T, fake FakeAPI) {
	t.Helper()
	text := func(s string) Answer {
		return Answer{Resp: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s)}}, StopReason: llm.StopEndTurn}}
	}
	msg := func(role llm.Role, s string) llm.Message {
		return llm.Message{Role: role, Content: []llm.Block{llm.TextBlock(s)}}
	}
	history := []llm.Message{
		msg(llm.RoleUser, "turn one"), msg(llm.RoleAssistant, "answer one"),
		msg(llm.RoleUser, "turn two"), msg(llm.RoleAssistant, "answer two"),
	}
	run := func(c llm.Client, h []llm.Message) (*agent.Result, error) {
		t.Helper()
		rt, err := agent.New(agent.Definition{Name: "r", KeepTurns: 1}, agent.Collaborators{Client: c, Workspace: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		return agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "turn three", History: h})
	}

	// Refused, summarised, sent again smaller, answered.
	c, seen := fake(t, Answer{Err: llm.ErrPromptTooLong}, text("The user asked two things."), text("answer three"))
	res, err := run(c, history)
	if err != nil || res.Answer != "answer three" {
		t.Fatalf("%+v, %v", res, err)
	}
	if s := seen(); len(s) != 3 || reflect.DeepEqual(s[0].Messages, s[2].Messages) || len(s[2].Messages) >= len(s[0].Messages) {
		t.Errorf("requests: %d; the prompt sent after the refusal should be the shrunk one", len(s))
	}

	// Nothing to cut: one request, and a failed turn that says why.
	c, seen = fake(t, Answer{Err: llm.ErrPromptTooLong})
	res, err = run(c, nil)
	if res.StopReason != agent.StopFailed || !errors.Is(err, llm.ErrPromptTooLong) || len(seen()) != 1 {
		t.Errorf("%s, %v, %d requests; want failed after one", res.StopReason, err, len(seen()))
	}
	if err != nil && !strings.Contains(err.Error(), "nothing more can be cut") {
		t.Errorf("error %q does not say why", err)
	}
}
