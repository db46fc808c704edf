package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/orca-agent/orca/llm"
)

func TestMessageText(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.TextBlock("a"), llm.ToolUseBlock("1", "Read", nil), llm.TextBlock("b"),
	}}
	if m.Text() != "ab" {
		t.Errorf("Text() = %q", m.Text())
	}
	if uses := m.ToolUses(); len(uses) != 1 || uses[0].Name != "Read" {
		t.Errorf("ToolUses() = %+v", uses)
	}
	if (llm.Message{}).Text() != "" {
		t.Error("empty message has text")
	}
}

func TestErrorsMatchTheirKind(t *testing.T) {
	err := fmt.Errorf("calling: %w", &llm.Error{Kind: llm.KindRateLimited, StatusCode: 429, Message: "slow down"})
	if !errors.Is(err, llm.ErrRateLimited) || errors.Is(err, llm.ErrOverloaded) {
		t.Errorf("errors.Is mismatch for %v", err)
	}
	if !llm.Retryable(err) {
		t.Error("rate limit not retryable")
	}
	if llm.Retryable(&llm.Error{Kind: llm.KindPromptTooLong}) || llm.Retryable(context.Canceled) {
		t.Error("non-retryable error counted as retryable")
	}
	wrapped := &llm.Error{Kind: llm.KindServer, Err: context.DeadlineExceeded}
	if !errors.Is(wrapped, context.DeadlineExceeded) || wrapped.Error() == "" {
		t.Errorf("unwrap: %v", wrapped)
	}
	if got := (&llm.Error{Kind: llm.KindAuthentication, StatusCode: 401, Message: "bad key"}).Error(); got != "llm: authentication (status 401): bad key" {
		t.Errorf("message = %q", got)
	}
}

func TestUsageAdd(t *testing.T) {
	u := llm.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}.Add(llm.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40})
	if u != (llm.Usage{InputTokens: 11, OutputTokens: 22, CacheReadTokens: 33, CacheWriteTokens: 44}) || u.Total() != 110 {
		t.Errorf("sum = %+v", u)
	}
}

// Equal compares every field of every block; messages that share their
// blocks are equal, and so are copies.
func TestMessageEqual(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.TextBlock("hi"), llm.ToolUseBlock("tu1", "Read", json.RawMessage(`{"file_path":"a"}`)),
		{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig"},
	}}
	if !m.Equal(m) {
		t.Error("a message is not itself")
	}
	copyOf := func() llm.Message {
		c := llm.Message{Role: m.Role, Content: slices.Clone(m.Content)}
		c.Content[1].Input = slices.Clone(m.Content[1].Input)
		return c
	}
	if c := copyOf(); !m.Equal(c) || !c.Equal(m) {
		t.Error("a copy differs")
	}
	for name, change := range map[string]func(*llm.Message){
		"role":      func(c *llm.Message) { c.Role = llm.RoleUser },
		"one more":  func(c *llm.Message) { c.Content = append(c.Content, llm.TextBlock("x")) },
		"text":      func(c *llm.Message) { c.Content[0].Text = "ho" },
		"type":      func(c *llm.Message) { c.Content[0].Type = llm.BlockToolResult },
		"id":        func(c *llm.Message) { c.Content[1].ID = "tu2" },
		"name":      func(c *llm.Message) { c.Content[1].Name = "Write" },
		"input":     func(c *llm.Message) { c.Content[1].Input[2] = 'F' },
		"result of": func(c *llm.Message) { c.Content[0].ToolUseID = "tu1" },
		"content":   func(c *llm.Message) { c.Content[0].Content = "x" },
		"is_error":  func(c *llm.Message) { c.Content[0].IsError = true },
		"thinking":  func(c *llm.Message) { c.Content[2].Thinking = "hm" },
		"signature": func(c *llm.Message) { c.Content[2].Signature = "sig2" },
	} {
		c := copyOf()
		change(&c)
		if m.Equal(c) || c.Equal(m) {
			t.Errorf("%s changed, and the messages are equal", name)
		}
	}
}
