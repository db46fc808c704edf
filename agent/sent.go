package agent

import (
	"slices"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
)

// sentCopy is the copy of the conversation's message headers the
// llm_request middleware were given last (so that they cannot edit the
// turn's), kept from call to call (see of); from is &msgs[0] then, and n
// how many of msgs are still the conversation's own.
type sentCopy struct {
	msgs []llm.Message
	from *llm.Message
	n    int
}

// of returns the turn's messages msgs for the llm_request middleware: a
// copy of their headers, with the last message's content list its own, so
// that a middleware's edit of the newest turn reaches no transcript. The
// copy is kept from call to call, and only what msgs added since is
// copied in, so a turn does not copy its conversation at every call: a
// request a provider or middleware kept sees no change, since a message
// of the copy that differs from msgs (a middleware edited it in the last
// call) makes a new copy, and so does a msgs grown into another array or
// replaced (compaction).
func (c *sentCopy) of(msgs []llm.Message) []llm.Message {
	n := len(msgs)
	if n == 0 {
		return nil
	}
	k, prefix := c.n, middleware.PrefixLen(msgs)
	// What the earlier requests saw must be the prefix of this one, which
	// no middleware may edit: the newest turn is the request's own (a
	// call with no new message gets a new copy too).
	fresh := &msgs[0] != c.from || prefix < len(c.msgs) || n <= len(c.msgs) || (k > 0 && !c.msgs[k-1].Equal(msgs[k-1]))
	for i := k; !fresh && i < len(c.msgs); i++ {
		fresh = !c.msgs[i].Equal(msgs[i])
	}
	if fresh {
		c.msgs = append(make([]llm.Message, 0, n+n/2), msgs...)
	} else {
		c.msgs = append(c.msgs, msgs[len(c.msgs):]...)
	}
	c.msgs[n-1].Content = slices.Clone(c.msgs[n-1].Content)
	c.from, c.n = &msgs[0], prefix
	return c.msgs[:n:n]
}
