package mcp

// A server's questions for the person (elicitation/create), in both of the
// specification's modes: a form (the requested schema's fields) and a URL
// the person opens. orca declares both; each question goes to the
// Elicitor of the turn whose call of the server is running — the runtime
// hands it to the call through its context (elicit.From) — or, when none
// runs, to Options.Elicitor.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/scope"
)

// elicitCapabilities are the client capabilities orca declares for
// elicitation: forms and URLs.
func elicitCapabilities() *sdk.ClientCapabilities {
	return &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}}
}

// asking is a server's tool calls running, with the Elicitor each one's
// context carries: a question the server asks goes to one of them.
type asking struct {
	mu    sync.Mutex
	seq   uint64
	calls map[uint64]askingCall
}

type askingCall struct {
	ctx context.Context
	e   elicit.Elicitor
}

// track is the client's sending middleware that keeps asking: each
// tools/call whose context carries an Elicitor, while it runs.
func (a *asking) track(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		e := elicit.From(ctx)
		if e == nil {
			return next(ctx, method, req)
		}
		a.mu.Lock()
		if a.calls == nil {
			a.calls = map[uint64]askingCall{}
		}
		a.seq++
		id := a.seq
		a.calls[id] = askingCall{ctx: ctx, e: e}
		a.mu.Unlock()
		defer func() {
			a.mu.Lock()
			delete(a.calls, id)
			a.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// current returns the call a question goes to: the one running, or, with
// several running at once, the one that started last (a server's question
// does not say which call it is for); ok is false when none runs.
func (a *asking) current() (askingCall, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var last uint64
	for id := range a.calls {
		last = max(last, id)
	}
	c, ok := a.calls[last]
	return c, ok
}

// elicit answers a server's elicitation/create: the question goes to the
// running call's Elicitor (the turn's: its hooks, its person), else to
// Options.Elicitor, else it is declined, saying no one can answer. A
// decline or cancel carries its reason in the result's _meta
// (elicit.ReasonMeta). The question ends with the call it came in.
func (c *conn) elicit(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p := r.Params
	req := elicit.Request{Scope: scope.Scope{RuntimeID: c.set.env.RuntimeID}, Server: c.srv.Name, Message: p.Message,
		URL: p.URL, ElicitationID: p.ElicitationID, Mode: elicit.Mode(p.Mode)}
	if req.Mode == "" {
		req.Mode = elicit.ModeForm
		if p.URL != "" || p.ElicitationID != "" {
			req.Mode = elicit.ModeURL
		}
	}
	if req.Mode == elicit.ModeForm && p.RequestedSchema != nil {
		raw, err := json.Marshal(p.RequestedSchema)
		if err == nil {
			req.Schema = raw
			req.Form, err = elicit.ParseForm(raw)
		}
		if err != nil {
			reason := fmt.Sprintf("Declined by orca: it cannot show the form the MCP server %s asked to be filled in: %v.", c.srv.Name, err)
			c.set.p.opts.Logger.Warn("MCP server's question declined", "server", c.srv.Name, "err", err)
			return elicitResult(elicit.Answer{Action: elicit.Decline, Reason: reason}), nil
		}
		// The SDK hands the schema over as a map, which keeps no order:
		// the required fields come first, then the others, by name.
		slices.SortStableFunc(req.Form.Fields, func(a, b elicit.Field) int {
			if a.Required != b.Required {
				if a.Required {
					return -1
				}
				return 1
			}
			return 0
		})
	}
	e := c.set.p.opts.Elicitor
	if call, ok := c.asking.current(); ok {
		e = call.e
		// The question ends with the call: its timeout, an interrupt.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(call.ctx, func() { cancel(context.Cause(call.ctx)) })
		defer stop()
	}
	if e == nil {
		e = elicit.Headless{}
	}
	ans, err := e.Elicit(ctx, req)
	if err != nil {
		ans = elicit.Answer{Action: elicit.Cancel, Reason: fmt.Sprintf("Cancelled by orca: %v.", err)}
	}
	return elicitResult(ans), nil
}

// elicitResult is ans as the server reads it: its content (JSON's numbers, as
// the SDK checks them against the schema), its reason in _meta.
func elicitResult(ans elicit.Answer) *sdk.ElicitResult {
	res := &sdk.ElicitResult{Action: string(cmp.Or(ans.Action, elicit.Cancel))}
	if ans.Action == elicit.Accept && len(ans.Content) > 0 {
		if b, err := json.Marshal(ans.Content); err == nil {
			json.Unmarshal(b, &res.Content)
		}
	}
	if ans.Action != elicit.Accept && ans.Reason != "" {
		res.Meta = sdk.Meta{elicit.ReasonMeta: ans.Reason}
	}
	return res
}
