package middleware

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// ApplyToolRequest runs the tool_request chain over call and returns the
// call to validate, approve and execute. The first middleware that fails
// stops the chain; its error is an *Error naming it, and the runtime turns
// it into an error observation for the model. A middleware registered
// When its predicate says no is passed by. With no middleware, call is
// returned as it is.
func (r *Registry) ApplyToolRequest(ctx context.Context, call *tool.Call) (*tool.Call, error) {
	s := r.load()
	if s == nil || len(s.toolRequest) == 0 {
		return call, nil
	}
	if call == nil {
		return nil, errors.New("middleware: tool_request: nil call")
	}
	for _, e := range s.toolRequest {
		if !e.applies(call) {
			continue
		}
		next, err := pipe(ctx, e.fn, call)
		if err != nil {
			return nil, &Error{Chain: ToolRequest, Middleware: e.name, Err: err}
		}
		call = next
	}
	return call, nil
}

// ApplyLLMRequest runs the llm_request chain over req and returns the
// request to send. The first middleware that fails stops the chain; its
// error is an *Error naming it, and the model call fails without reaching
// the provider. With no middleware, req is returned as it is.
//
// # The cache guard
//
// The cache-sensitive prefix of a request is what providers cache between
// calls: the system prompt, the tool definitions, and every message before
// the newest user turn — all messages but the trailing run of user-role
// messages (tool results are user messages). A middleware may change that
// prefix only if it was registered with AllowCacheInvalidation and req, as
// the caller passed it in, carries a Metadata.CacheInvalidationReason; a
// middleware cannot grant itself the reason. Otherwise the chain stops
// with an error wrapping ErrCacheInvalidation that says what changed
// (System, Tools[i], Messages[i]). Changing, adding or removing messages
// of the newest user turn, and adding messages after the prefix, is always
// allowed.
//
// The guard compares the prefix after each middleware with the prefix
// before it. By default it keeps the prefix by reference, at a cost that
// does not grow with the conversation: the system prompt, the tool
// definitions, the prefix's slice, and the headers of its first message
// and its 32 newest (pooled: no allocation, and no copy of the
// conversation's content). So a changed system prompt or tool
// definition, a prefix cut short, Messages replaced by another slice
// (compared then message by message), a message inserted or removed in
// place, and a message among those kept replaced or its content list
// replaced or re-sliced are caught; a message rebuilt with the same
// content is not a change. Not seen by reference: a message older than
// the 32 newest, but not the first, replaced in place in the same slice,
// and an edit made in place inside a block the caller still shares —
// Messages[i].Content[j].Text assigned. The strict guard
// (SetStrictCacheGuard; orcatest turns it on) copies the whole prefix by
// value — text, ids, names, tool_use ids, content, is_error, input and
// schema bytes — and catches those too, at the cost of a copy of the
// conversation per call. Model, MaxTokens and Metadata are not part of
// the prefix.
//
// Middleware may edit req in place. A refused edit is not undone, so a
// caller that keeps slices of req (a transcript) should not reuse req after
// an error, and should hand over copies of what no middleware may touch.
func (r *Registry) ApplyLLMRequest(ctx context.Context, req *llm.Request) (*llm.Request, error) {
	s := r.load()
	if s == nil || len(s.llmRequest) == 0 {
		return req, nil
	}
	if req == nil {
		return nil, errors.New("middleware: llm_request: nil request")
	}
	reason := req.Metadata.CacheInvalidationReason
	strict := r.strict.Load()
	before := takePrefix(req, strict)
	defer before.release()
	for _, e := range s.llmRequest {
		next, err := pipe(ctx, e.fn, req)
		if err != nil {
			return nil, &Error{Chain: LLMRequest, Middleware: e.name, Err: err}
		}
		if what := before.diff(next); what != "" {
			switch {
			case !e.allowCache:
				err = fmt.Errorf("%w: %s; the middleware is not registered with AllowCacheInvalidation", ErrCacheInvalidation, what)
			case reason == "":
				err = fmt.Errorf("%w: %s; the request carries no Metadata.CacheInvalidationReason", ErrCacheInvalidation, what)
			}
			if err != nil {
				return nil, &Error{Chain: LLMRequest, Middleware: e.name, Err: err}
			}
			before.release()
			before = takePrefix(next, strict) // the next middleware is judged against this one's output
		}
		req = next
	}
	return req, nil
}

// pipe calls one request middleware, turning a panic or a nil result into
// an error.
func pipe[Q any](ctx context.Context, fn func(context.Context, *Q) (*Q, error), q *Q) (out *Q, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	out, err = fn(ctx, q)
	if err == nil && out == nil {
		err = ErrNilResult
	}
	return out, err
}

// PrefixLen returns how many of msgs belong to the cache-sensitive prefix
// the guard holds: all but the trailing run of user messages.
func PrefixLen(msgs []llm.Message) int {
	k := len(msgs)
	for k > 0 && msgs[k-1].Role == llm.RoleUser {
		k--
	}
	return k
}

// guardWindow is how many of the prefix's newest messages the guard by
// reference keeps, besides its first: the ones a middleware that trims
// or redacts what the model saw lately would touch.
const guardWindow = 32

// prefix is the cache-sensitive prefix of a request, kept by reference
// (its first and newest messages' headers and the tool headers, in pooled
// slices, and the prefix's own slice) or, strict, copied by value (its
// blocks share one slice and its bytes one arena, so a copy costs four
// allocations whatever the length of the conversation).
type prefix struct {
	system string
	tools  []llm.ToolDefinition
	// msgs are the messages kept: all of the prefix (strict, or a short
	// one), or its first and its guardWindow newest, from index newest on.
	msgs   []llm.Message
	newest int
	// all is the request's prefix itself (by reference): a request whose
	// Messages are another slice is compared with it, message by message.
	all []llm.Message
	// pooled: tools and msgs are headers only, from headers; release
	// hands them back.
	pooled *headers
}

// headers are reusable slices for the prefix kept by reference.
type headers struct {
	tools []llm.ToolDefinition
	msgs  []llm.Message
}

var headerPool = sync.Pool{New: func() any { return new(headers) }}

func takePrefix(r *llm.Request, strict bool) prefix {
	msgs := r.Messages[:PrefixLen(r.Messages)]
	if !strict {
		h := headerPool.Get().(*headers)
		h.tools = append(h.tools[:0], r.Tools...)
		p := prefix{system: r.System, all: msgs, pooled: h}
		if len(msgs) <= guardWindow+1 {
			h.msgs = append(h.msgs[:0], msgs...)
		} else {
			p.newest = len(msgs) - guardWindow
			h.msgs = append(append(h.msgs[:0], msgs[0]), msgs[p.newest:]...)
		}
		p.tools, p.msgs = h.tools, h.msgs
		return p
	}
	nBlocks, nBytes := 0, 0
	for _, t := range r.Tools {
		nBytes += len(t.InputSchema)
	}
	for _, m := range msgs {
		nBlocks += len(m.Content)
		for _, b := range m.Content {
			nBytes += len(b.Input)
		}
	}
	arena := make([]byte, 0, nBytes)
	keep := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(arena)
		arena = append(arena, b...)
		return arena[start:len(arena):len(arena)]
	}
	p := prefix{system: r.System}
	if len(r.Tools) > 0 {
		p.tools = make([]llm.ToolDefinition, len(r.Tools))
		for i, t := range r.Tools {
			t.InputSchema = keep(t.InputSchema)
			p.tools[i] = t
		}
	}
	if len(msgs) > 0 {
		p.msgs = make([]llm.Message, len(msgs))
		blocks := make([]llm.Block, 0, nBlocks)
		for i, m := range msgs {
			start := len(blocks)
			for _, b := range m.Content {
				b.Input = keep(b.Input)
				blocks = append(blocks, b)
			}
			p.msgs[i] = llm.Message{Role: m.Role, Content: blocks[start:len(blocks):len(blocks)]}
		}
	}
	return p
}

// release hands a prefix kept by reference back to the pool, holding on
// to none of the request's content.
func (p *prefix) release() {
	h := p.pooled
	if h == nil {
		return
	}
	p.pooled, p.all = nil, nil
	clear(h.tools)
	clear(h.msgs)
	h.tools, h.msgs = h.tools[:0], h.msgs[:0]
	headerPool.Put(h)
}

// index is the request index of the i-th message kept.
func (p *prefix) index(i int) int {
	if i == 0 || p.newest == 0 {
		return i
	}
	return p.newest + i - 1
}

// diff says how r's prefix differs from p, or returns "" if it does not.
func (p *prefix) diff(r *llm.Request) string {
	if r.System != p.system {
		return "System changed"
	}
	if len(r.Tools) != len(p.tools) {
		return fmt.Sprintf("Tools changed from %d to %d definitions", len(p.tools), len(r.Tools))
	}
	for i, t := range p.tools {
		u := r.Tools[i]
		if u.Name != t.Name || u.Description != t.Description || !sameBytes(u.InputSchema, t.InputSchema) {
			return fmt.Sprintf("Tools[%d] (%s) changed", i, t.Name)
		}
	}
	if p.unchanged(r.Messages) {
		return ""
	}
	if p.newest > 0 && len(r.Messages) > 0 && &r.Messages[0] != &p.all[0] {
		// Another slice: the earliest message that differs.
		for i, m := range p.all[:min(len(p.all), len(r.Messages))] {
			if !r.Messages[i].Equal(m) {
				return fmt.Sprintf("Messages[%d] (%s) changed", i, m.Role)
			}
		}
	}
	for k, m := range p.msgs {
		i := p.index(k)
		if i >= len(r.Messages) {
			return fmt.Sprintf("Messages[%d] (%s) removed", len(r.Messages), p.roleAt(len(r.Messages)))
		}
		if !r.Messages[i].Equal(m) {
			return fmt.Sprintf("Messages[%d] (%s) changed", i, m.Role)
		}
	}
	return ""
}

// unchanged reports whether msgs, by reference, are the prefix as it was
// kept: the same slice, and the headers kept (role and content slice)
// the same bytes — one comparison of the window, not one per message.
// false says only that the messages must be compared one by one.
func (p *prefix) unchanged(msgs []llm.Message) bool {
	if p.pooled == nil || len(p.all) == 0 || len(msgs) < len(p.all) || &msgs[0] != &p.all[0] {
		return false
	}
	if p.newest == 0 {
		return bytes.Equal(headerBytes(p.msgs), headerBytes(msgs[:len(p.msgs)]))
	}
	return bytes.Equal(headerBytes(p.msgs[:1]), headerBytes(msgs[:1])) &&
		bytes.Equal(headerBytes(p.msgs[1:]), headerBytes(msgs[p.newest:len(p.all)]))
}

// headerBytes is the memory of msgs' headers. A header copied and left
// alone is the same bytes as its original; any other difference (even in
// padding) only sends the caller to the comparison by value.
func headerBytes(msgs []llm.Message) []byte {
	if len(msgs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&msgs[0])), len(msgs)*int(unsafe.Sizeof(msgs[0])))
}

// roleAt is the role of the prefix's i-th message, as it was kept.
func (p *prefix) roleAt(i int) llm.Role {
	if p.all != nil {
		return p.all[i].Role
	}
	return p.msgs[i].Role
}

// sameBytes is bytes.Equal, at once for the same bytes.
func sameBytes(a, b []byte) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
		return true
	}
	return bytes.Equal(a, b)
}
