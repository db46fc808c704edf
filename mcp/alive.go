package mcp

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// How long a server whose call overran its timeout has to answer a ping:
// the call's timeout, within these bounds.
const (
	minPingWait = time.Second
	maxPingWait = 10 * time.Second
)

// checkAlive asks a server one of whose calls overran its timeout whether
// it still answers at all: a ping. One call that takes too long is that
// call's failure — the SDK cancelled it (notifications/cancelled) as its
// context ended — and the session is kept, with the other calls in flight
// on it; only a server that does not answer the ping either is dropped
// (the next call connects again, a stdio server's process started anew).
// Any answer will do, an error too: the sessionless protocol has no ping.
// One check at a time per session, in the background: the call that
// overran has its answer already.
func (c *conn) checkAlive(session *sdk.ClientSession) {
	c.mu.Lock()
	if c.session != session || c.checking == session {
		c.mu.Unlock()
		return
	}
	c.checking = session
	c.mu.Unlock()
	c.set.bg.Go(func() {
		defer func() {
			c.mu.Lock()
			if c.checking == session {
				c.checking = nil
			}
			c.mu.Unlock()
		}()
		wait := min(max(c.timeout(), minPingWait), maxPingWait)
		ctx, cancel := context.WithTimeout(c.life, wait)
		defer cancel()
		err := session.Ping(ctx, nil)
		if err == nil || answered(err) || c.life.Err() != nil {
			return
		}
		c.drop(session, fmt.Sprintf("a call timed out after %v, and it did not answer a ping within %v either: %s", c.timeout(), wait, errText(err)))
	})
}
