package agent

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// estimate's running count equals a count from scratch as the
// conversation grows, as its last message is extended in place, after a
// provider count, and after a resize (a compaction).
func TestEstimateKeepsCount(t *testing.T) {
	tr := &turn{rt: &Runtime{}}
	recount := func() int64 {
		from := tr.sizedUpTo
		if tr.promptTokens == 0 {
			from = 0
		}
		var chars int
		for _, m := range tr.msgs[min(from, len(tr.msgs)):] {
			chars += messageChars(m)
		}
		return tr.promptTokens + int64(chars/4)
	}
	check := func(step string) {
		t.Helper()
		if got, want := tr.estimate(), recount(); got != want {
			t.Fatalf("%s: estimate %d, counted afresh %d", step, got, want)
		}
	}
	msg := func(role llm.Role, n int) llm.Message {
		return llm.Message{Role: role, Content: []llm.Block{llm.TextBlock(strings.Repeat("x", n))}}
	}
	check("empty")
	for i := range 20 {
		tr.msgs = append(tr.msgs, msg(llm.RoleUser, 40+i), msg(llm.RoleAssistant, 400))
		check("grown")
		last := &tr.msgs[len(tr.msgs)-1]
		last.Content = append(last.Content, llm.TextBlock(strings.Repeat("y", 123)))
		check("last extended")
		if i == 7 {
			tr.promptTokens, tr.sizedUpTo = 5000, len(tr.msgs)
			check("counted by the provider")
		}
		if i == 13 {
			tr.msgs = tr.msgs[:4]
			tr.resized()
			check("resized")
		}
	}
}
