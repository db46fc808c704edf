package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tui"
)

// Limits of the recap of a resumed chat.
const (
	recapExchanges = 3  // the last exchanges shown
	recapLines     = 12 // lines of one answer shown
)

// recap returns the last exchanges of a conversation — what the user
// said, what the model answered last — as a resumed chat shows them
// before its prompt, "" for a conversation without any. Tool calls and
// their results are left out: the exchange is the words.
func recap(msgs []llm.Message) string {
	type exchange struct{ prompt, answer string }
	var xs []exchange
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text())
		if text == "" {
			continue // tool calls, tool results, thinking
		}
		switch m.Role {
		case llm.RoleUser:
			if hasToolResult(m) {
				continue
			}
			xs = append(xs, exchange{prompt: text})
		case llm.RoleAssistant:
			if len(xs) == 0 {
				xs = append(xs, exchange{})
			}
			xs[len(xs)-1].answer = text // the last words of the turn
		}
	}
	if len(xs) == 0 {
		return ""
	}
	shown := xs[max(0, len(xs)-recapExchanges):]
	var b strings.Builder
	switch {
	case len(xs) == 1:
		b.WriteString("Earlier in this session:\n")
	case len(shown) == len(xs):
		fmt.Fprintf(&b, "Earlier in this session (its %d exchanges):\n", len(xs))
	default:
		fmt.Fprintf(&b, "Earlier in this session (the last %d of %d exchanges):\n", len(shown), len(xs))
	}
	for _, x := range shown {
		b.WriteString("\n")
		if x.prompt != "" {
			b.WriteString(tui.Indent("❯ ", "  ", tui.Sanitize(x.prompt)) + "\n")
		}
		if x.answer != "" {
			lines := strings.Split(tui.Sanitize(x.answer), "\n")
			if n := len(lines) - recapLines; n > 0 {
				lines = append(lines[:recapLines], "… +"+tui.Plural(n, "line"))
			}
			b.WriteString(strings.Join(lines, "\n") + "\n")
		}
	}
	return b.String()
}

func hasToolResult(m llm.Message) bool {
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return true
		}
	}
	return false
}

// farewell says, as the chat ends, which session it was and how to come
// back to it.
func (c *chat) farewell(ctx context.Context) {
	turns := ""
	if t, err := c.ls.Totals(ctx); err == nil {
		turns = " · " + tui.Plural(int(t.Turns), "turn")
	}
	msg := fmt.Sprintf("Session %s%s", c.ls.ID(), turns)
	if cmd := c.opts.ResumeCommand; cmd != nil {
		msg += " · resume it with: " + cmd(c.ls.ID())
	}
	c.con.note(msg)
}
