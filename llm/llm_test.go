package llm_test

import (
	"context"
	"errors"
	"fmt"
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
