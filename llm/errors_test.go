package llm_test

import (
	"fmt"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// The window a prompt-too-long refusal names, in each provider's words.
func TestStatedWindow(t *testing.T) {
	for msg, want := range map[string]int64{
		"prompt is too long: 210432 tokens > 200000 maximum":                                                      200000,
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens.": 128000,
		"Input tokens exceed the configured limit of 272,000 tokens. Your messages resulted in 280,000 tokens.":   272000,
		"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).":                 1048576,
		"prompt is too long": 0,
	} {
		err := fmt.Errorf("model call: %w", &llm.Error{Kind: llm.KindPromptTooLong, Message: msg})
		if got := llm.StatedWindow(err); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
	if got := llm.StatedWindow(&llm.Error{Kind: llm.KindInvalidRequest, Message: "5 maximum"}); got != 0 {
		t.Errorf("another kind: %d", got)
	}
}
