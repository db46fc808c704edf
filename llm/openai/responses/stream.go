package responses

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/orca-agent/orca/llm"
)

// accumulator assembles the final message from a stream's events and
// forwards text and argument pieces to onDelta as they come. Blocks take
// their place in the final message when they first appear, so that a
// delta's index is the block's final index. An item's done event (or, for
// an item that never had one, the final response's output) is the item as
// it stands: what the pieces missed of it is taken from there.
type accumulator struct {
	onDelta  func(llm.Delta)
	blocks   []*partial
	items    map[int64]*item // by output index
	usage    llm.Usage
	status   string // completed, incomplete
	reason   string // why it is incomplete
	refused  string // a failed response's message, when a safety policy failed it
	model    string
	id       string
	finished bool // the response completed, or stopped incomplete
}

// item is one output item of the response.
type item struct {
	typ       string
	text      *partial   // a message's text, once some arrived
	refusal   string     // a message's refusal parts
	call      *partial   // a function call
	reasoning []*partial // a reasoning item: one block per summary part
	// The pages of the API's own web search: those a message's text
	// cites (url_citation annotations), those a web_search_call's action
	// found.
	cited, found []llm.Source
	done         bool
}

type partial struct {
	index     int // in the final message
	typ       llm.BlockType
	id, name  string          // a tool use's call id and name; a reasoning item's id
	signature string          // a reasoning item's encrypted content
	buf       strings.Builder // text, arguments, or a summary part
	announced bool            // the DeltaToolUse went out
	sent      int             // bytes of buf sent as deltas
}

// The codes of responses that failed on a safety policy: refusals, not
// errors.
var policyCodes = []string{"bio_policy", "misalignment_policy_violation", "image_content_policy_violation"}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	return &accumulator{onDelta: onDelta, items: map[int64]*item{}}
}

// add takes one event in. It fails on an error event and on a response
// that failed (but on a safety policy, which is a refusal).
func (a *accumulator) add(ev responses.ResponseStreamEventUnion) error {
	switch ev.Type {
	case "response.created", "response.in_progress", "response.queued":
		a.meta(&ev.Response)
	case "response.output_item.added":
		a.start(ev.OutputIndex, &ev.Item)
	case "response.output_item.done":
		a.finish(ev.OutputIndex, &ev.Item)
	case "response.output_text.delta":
		if it := a.items[ev.OutputIndex]; it != nil && it.typ == "message" {
			a.write(it, ev.Delta)
		}
	case "response.refusal.delta":
		if it := a.items[ev.OutputIndex]; it != nil && it.typ == "message" {
			it.refusal += ev.Delta
		}
	case "response.function_call_arguments.delta":
		if it := a.items[ev.OutputIndex]; it != nil && it.call != nil {
			it.call.buf.WriteString(ev.Delta)
			a.flush(it.call)
		}
	case "response.completed", "response.incomplete":
		r := &ev.Response
		a.meta(r)
		a.end(r)
		a.status, a.reason = string(r.Status), r.IncompleteDetails.Reason
		if a.status == "" {
			a.status = strings.TrimPrefix(ev.Type, "response.")
		}
		a.finished = true
	case "response.failed":
		r := &ev.Response
		a.meta(r)
		if slices.Contains(policyCodes, string(r.Error.Code)) {
			a.end(r)
			a.refused = cmp.Or(r.Error.Message, string(r.Error.Code))
			a.finished = true
			return nil
		}
		return streamError(string(r.Error.Code), r.Error.Message)
	case "error":
		return streamError(ev.Code, ev.Message)
	}
	return nil
}

// meta keeps the response's id and model.
func (a *accumulator) meta(r *responses.Response) {
	if r.ID != "" {
		a.id = r.ID
	}
	if r.Model != "" {
		a.model = string(r.Model)
	}
}

// end takes in what the final response says: the usage, and the output
// items the stream left unfinished.
func (a *accumulator) end(r *responses.Response) {
	if r.JSON.Usage.Valid() {
		u := r.Usage
		cached := u.InputTokensDetails.CachedTokens
		written := u.InputTokensDetails.CacheWriteTokens
		a.usage = llm.Usage{
			InputTokens:      max(u.InputTokens-cached-written, 0),
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  cached,
			CacheWriteTokens: written,
		}
	}
	for i := range r.Output {
		if it := a.items[int64(i)]; it == nil || !it.done {
			a.finish(int64(i), &r.Output[i])
		}
	}
}

// start begins an output item: a function call is announced at once, a
// reasoning item takes its block; a message's text block waits for text.
// Items of other types take no block: the API's own tool calls
// (web_search_call) are not orca's to answer.
func (a *accumulator) start(idx int64, out *responses.ResponseOutputItemUnion) *item {
	if it := a.items[idx]; it != nil {
		return it
	}
	it := &item{typ: out.Type}
	a.items[idx] = it
	switch out.Type {
	case "function_call":
		it.call = a.block(llm.BlockToolUse)
		it.call.id, it.call.name = out.CallID, out.Name
		it.call.buf.WriteString(out.Arguments.OfString)
		if it.call.name != "" {
			a.announce(it.call)
			a.flush(it.call)
		}
	case "reasoning":
		p := a.block(llm.BlockRedactedThinking)
		p.id = out.ID
		it.reasoning = []*partial{p}
	}
	return it
}

// finish takes in an output item as it stands when done.
func (a *accumulator) finish(idx int64, out *responses.ResponseOutputItemUnion) {
	it := a.start(idx, out)
	if it.done {
		return
	}
	it.done = true
	switch it.typ {
	case "message":
		var text, refusal strings.Builder
		for _, c := range out.Content {
			switch c.Type {
			case "output_text":
				text.WriteString(c.Text)
			case "refusal":
				refusal.WriteString(c.Refusal)
			}
		}
		if it.text == nil {
			a.write(it, text.String())
		} else if rest, ok := strings.CutPrefix(text.String(), it.text.buf.String()); ok {
			a.write(it, rest)
		}
		if refusal.Len() > 0 {
			it.refusal = refusal.String()
		}
		it.cited = citations(out.Content)
	case "function_call":
		p := it.call
		if p.id == "" {
			p.id = out.CallID
		}
		if p.name == "" {
			p.name = out.Name
		}
		if rest, ok := strings.CutPrefix(out.Arguments.OfString, p.buf.String()); ok {
			p.buf.WriteString(rest)
		}
		if !p.announced && p.name != "" {
			a.announce(p)
		}
		a.flush(p)
	case "web_search_call":
		for _, s := range out.Action.Sources {
			if s.URL != "" {
				it.found = append(it.found, llm.Source{URL: s.URL})
			}
		}
	case "reasoning":
		first := it.reasoning[0]
		first.id = cmp.Or(out.ID, first.id)
		first.signature = out.EncryptedContent
		for i, s := range out.Summary {
			if i == len(it.reasoning) {
				p := a.block(llm.BlockRedactedThinking)
				p.id = first.id
				it.reasoning = append(it.reasoning, p)
			}
			it.reasoning[i].buf.Reset()
			it.reasoning[i].buf.WriteString(s.Text)
		}
	}
}

// citations returns the pages a message's text parts cite, in order.
func citations(content []responses.ResponseOutputMessageContentUnion) []llm.Source {
	var out []llm.Source
	for _, c := range content {
		if c.Type != "output_text" {
			continue
		}
		for _, an := range c.Annotations {
			if an.Type == "url_citation" && an.URL != "" {
				out = append(out, llm.Source{Title: an.Title, URL: an.URL})
			}
		}
	}
	return out
}

// write adds a piece of a message's text, and streams it.
func (a *accumulator) write(it *item, piece string) {
	if piece == "" {
		return
	}
	if it.text == nil {
		it.text = a.block(llm.BlockText)
	}
	it.text.buf.WriteString(piece)
	a.onDelta(llm.Delta{Type: llm.DeltaText, Index: it.text.index, Text: piece})
}

func (a *accumulator) block(typ llm.BlockType) *partial {
	p := &partial{index: len(a.blocks), typ: typ}
	a.blocks = append(a.blocks, p)
	return p
}

// announce sends the DeltaToolUse of p, which must come before its input.
func (a *accumulator) announce(p *partial) {
	if p.id == "" {
		// A server of the protocol may give no call id; the tool result
		// needs one to answer.
		p.id = fmt.Sprintf("call_%d", p.index)
	}
	p.announced = true
	a.onDelta(llm.Delta{Type: llm.DeltaToolUse, Index: p.index, ID: p.id, Name: p.name})
}

// flush sends the arguments of an announced p not sent yet.
func (a *accumulator) flush(p *partial) {
	if !p.announced || p.buf.Len() == p.sent {
		return
	}
	s := p.buf.String()
	a.onDelta(llm.Delta{Type: llm.DeltaToolInput, Index: p.index, Text: s[p.sent:]})
	p.sent = len(s)
}

// response returns the assembled response.
func (a *accumulator) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: make([]llm.Block, 0, len(a.blocks))}
	calls := false
	for _, p := range a.blocks {
		switch p.typ {
		case llm.BlockText:
			msg.Content = append(msg.Content, llm.TextBlock(p.buf.String()))
		case llm.BlockToolUse:
			if !p.announced {
				a.announce(p)
				a.flush(p)
			}
			in := p.buf.String()
			if strings.TrimSpace(in) == "" {
				in = "{}"
			}
			msg.Content = append(msg.Content, llm.ToolUseBlock(p.id, p.name, json.RawMessage(in)))
			calls = true
		case llm.BlockRedactedThinking:
			msg.Content = append(msg.Content, llm.Block{Type: llm.BlockRedactedThinking, ID: p.id, Signature: p.signature, Thinking: p.buf.String()})
		}
	}
	resp := &llm.Response{Message: msg, Usage: a.usage, Model: a.model, ID: a.id}
	switch {
	case a.status == "incomplete" && a.reason == "max_output_tokens":
		resp.StopReason = llm.StopMaxTokens
	case a.status == "incomplete" && a.reason == "content_filter":
		resp.StopReason = llm.StopRefusal
	case a.status == "incomplete":
		resp.StopReason = llm.StopReason(a.reason)
	case calls:
		resp.StopReason = llm.StopToolUse
	default:
		resp.StopReason = llm.StopEndTurn
	}
	// What the model said instead of an answer, in the order of its
	// items: not text.
	idx := make([]int64, 0, len(a.items))
	for i := range a.items {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var refusal strings.Builder
	for _, i := range idx {
		refusal.WriteString(a.items[i].refusal)
	}
	if refusal.Len() == 0 {
		refusal.WriteString(a.refused)
	}
	if refusal.Len() > 0 {
		resp.StopReason, resp.Refusal = llm.StopRefusal, refusal.String()
	}
	// The pages the text cites, in order, then those the searches found
	// besides: each URL once.
	seen := map[string]bool{}
	add := func(sources []llm.Source) {
		for _, s := range sources {
			if !seen[s.URL] {
				seen[s.URL] = true
				resp.Sources = append(resp.Sources, s)
			}
		}
	}
	for _, i := range idx {
		add(a.items[i].cited)
	}
	for _, i := range idx {
		add(a.items[i].found)
	}
	return resp
}
