package anthropic

import (
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/orca-agent/orca/llm"
)

// accumulator assembles the final message from a stream's events and
// forwards the text and tool-input pieces to onDelta as they come.
type accumulator struct {
	onDelta func(llm.Delta)
	blocks  []*partial
	// index maps the API's block index to the block's position in the
	// final message; -1 for blocks orca does not keep (server tools).
	index   map[int64]int
	usage   llm.Usage
	stop    llm.StopReason
	refusal string // what stop_details said of a refusal
	model   string
	id      string
	stopped bool // message_stop seen
	// sources are the pages the API's own web search found and its text
	// cites (llm.Response.Sources), each URL once.
	sources []llm.Source
	seen    map[string]bool
}

// partial is one content block being streamed.
type partial struct {
	typ        llm.BlockType
	id, name   string
	text       strings.Builder // text, or thinking
	input      strings.Builder // tool input JSON
	startInput string          // the input of content_block_start
	signature  strings.Builder // thinking signature, or redacted data
}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	return &accumulator{onDelta: onDelta, index: map[int64]int{}}
}

func (a *accumulator) add(ev sdk.MessageStreamEventUnion) {
	switch ev.Type {
	case "message_start":
		a.model, a.id = ev.Message.Model, ev.Message.ID
		u := ev.Message.Usage
		a.usage = llm.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}
	case "content_block_start":
		a.start(ev.Index, ev.ContentBlock)
	case "content_block_delta":
		a.delta(ev.Index, ev.Delta)
	case "message_delta":
		a.stop = stopReason(string(ev.Delta.StopReason))
		if a.stop == llm.StopRefusal {
			a.refusal = refusal(ev.Delta.StopDetails)
		}
		// message_delta counts are cumulative; the input counts are there
		// only in newer versions of the API.
		u := ev.Usage
		a.usage.OutputTokens = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			a.usage.InputTokens = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.usage.CacheWriteTokens = u.CacheCreationInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
}

func (a *accumulator) start(index int64, cb sdk.ContentBlockStartEventContentBlockUnion) {
	p := &partial{}
	switch cb.Type {
	case "text":
		p.typ = llm.BlockText
	case "tool_use":
		p.typ, p.id, p.name = llm.BlockToolUse, cb.ID, cb.Name
		if cb.JSON.Input.Valid() {
			p.startInput = cb.JSON.Input.Raw()
		}
	case "thinking":
		p.typ = llm.BlockThinking
		p.text.WriteString(cb.Thinking)
		p.signature.WriteString(cb.Signature)
	case "redacted_thinking":
		p.typ = llm.BlockRedactedThinking
		p.signature.WriteString(cb.Data)
	case "web_search_tool_result":
		// The API's own search (server_tool_use, dropped like any block
		// orca does not keep): its results are the response's Sources.
		for _, r := range cb.Content.OfWebSearchResultBlockArray {
			a.source(llm.Source{Title: r.Title, URL: r.URL, Age: r.PageAge})
		}
		a.index[index] = -1
		return
	default:
		a.index[index] = -1
		return
	}
	i := len(a.blocks)
	a.index[index] = i
	a.blocks = append(a.blocks, p)
	switch p.typ {
	case llm.BlockText:
		if cb.Text != "" {
			p.text.WriteString(cb.Text)
			a.onDelta(llm.Delta{Type: llm.DeltaText, Index: i, Text: cb.Text})
		}
	case llm.BlockToolUse:
		a.onDelta(llm.Delta{Type: llm.DeltaToolUse, Index: i, ID: p.id, Name: p.name})
	}
}

func (a *accumulator) delta(index int64, d sdk.MessageStreamEventUnionDelta) {
	i, ok := a.index[index]
	if !ok || i < 0 {
		return
	}
	p := a.blocks[i]
	switch d.Type {
	case "text_delta":
		if p.typ == llm.BlockText && d.Text != "" {
			p.text.WriteString(d.Text)
			a.onDelta(llm.Delta{Type: llm.DeltaText, Index: i, Text: d.Text})
		}
	case "input_json_delta":
		if p.typ == llm.BlockToolUse && d.PartialJSON != "" {
			p.input.WriteString(d.PartialJSON)
			a.onDelta(llm.Delta{Type: llm.DeltaToolInput, Index: i, Text: d.PartialJSON})
		}
	case "citations_delta":
		if c := d.Citation; c.Type == "web_search_result_location" {
			a.source(llm.Source{Title: c.Title, URL: c.URL})
		}
	case "thinking_delta":
		p.text.WriteString(d.Thinking)
	case "signature_delta":
		p.signature.WriteString(d.Signature)
	}
}

// response returns the assembled response.
func (a *accumulator) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: make([]llm.Block, 0, len(a.blocks))}
	for _, p := range a.blocks {
		b := llm.Block{Type: p.typ}
		switch p.typ {
		case llm.BlockText:
			b.Text = p.text.String()
		case llm.BlockToolUse:
			b.ID, b.Name = p.id, p.name
			in := p.input.String()
			if in == "" {
				// No input_json_delta: the input is the one the block
				// started with, {} for a tool without parameters.
				in = p.startInput
			}
			if in == "" || in == "null" {
				in = "{}"
			}
			b.Input = json.RawMessage(in)
		case llm.BlockThinking:
			b.Thinking, b.Signature = p.text.String(), p.signature.String()
		case llm.BlockRedactedThinking:
			b.Signature = p.signature.String()
		}
		msg.Content = append(msg.Content, b)
	}
	return &llm.Response{Message: msg, StopReason: a.stop, Usage: a.usage, Model: a.model, ID: a.id, Refusal: a.refusal, Sources: a.sources}
}

// source keeps s, unless its URL is kept already.
func (a *accumulator) source(s llm.Source) {
	if s.URL == "" || a.seen[s.URL] {
		return
	}
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	a.seen[s.URL] = true
	a.sources = append(a.sources, s)
}

// refusal says what the API's stop details say of a refusal: the
// explanation, else the policy category, else nothing (older versions of
// the API send no details).
func refusal(d sdk.RefusalStopDetails) string {
	switch {
	case d.Explanation != "":
		return d.Explanation
	case d.Category != "":
		return "the request falls under the usage policy's " + string(d.Category) + " category"
	}
	return ""
}

// stopReason maps the API's stop reason to orca's.
func stopReason(s string) llm.StopReason {
	switch sdk.StopReason(s) {
	case sdk.StopReasonEndTurn:
		return llm.StopEndTurn
	case sdk.StopReasonToolUse:
		return llm.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return llm.StopSequence
	case sdk.StopReasonRefusal:
		return llm.StopRefusal
	case sdk.StopReasonPauseTurn:
		return llm.StopPauseTurn
	}
	return llm.StopReason(s)
}
