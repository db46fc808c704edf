package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/orca-agent/orca/llm"
)

// accumulator assembles the final message from a stream's chunks and
// forwards text and argument pieces to onDelta as they come. Blocks take
// their place in the final message when they first appear, so that a
// delta's index is the block's final index.
type accumulator struct {
	onDelta  func(llm.Delta)
	blocks   []*partial
	text     *partial           // the text block, once content arrived
	calls    map[int64]*partial // tool calls by the API's tool-call index
	usage    llm.Usage
	stop     llm.StopReason
	model    string
	finished bool // a finish reason arrived
}

type partial struct {
	index     int // in the final message
	typ       llm.BlockType
	id, name  string
	buf       strings.Builder // text, or arguments
	announced bool            // the DeltaToolUse went out
	sent      int             // bytes of buf sent as deltas
}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	return &accumulator{onDelta: onDelta, calls: map[int64]*partial{}}
}

func (a *accumulator) add(ch sdk.ChatCompletionChunk) {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		u := ch.Usage
		cached := u.PromptTokensDetails.CachedTokens
		written := u.PromptTokensDetails.CacheWriteTokens
		a.usage = llm.Usage{
			InputTokens:      max(u.PromptTokens-cached-written, 0),
			OutputTokens:     u.CompletionTokens,
			CacheReadTokens:  cached,
			CacheWriteTokens: written,
		}
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // orca asks for one choice
		}
		d := choice.Delta
		for _, piece := range []string{d.Content, d.Refusal} {
			if piece == "" {
				continue
			}
			if a.text == nil {
				a.text = a.block(llm.BlockText)
			}
			a.text.buf.WriteString(piece)
			a.onDelta(llm.Delta{Type: llm.DeltaText, Index: a.text.index, Text: piece})
		}
		for _, tc := range d.ToolCalls {
			p, ok := a.calls[tc.Index]
			if !ok {
				p = a.block(llm.BlockToolUse)
				a.calls[tc.Index] = p
			}
			if p.id == "" {
				p.id = tc.ID
			}
			if p.name == "" {
				p.name = tc.Function.Name
			}
			p.buf.WriteString(tc.Function.Arguments)
			if !p.announced && p.name != "" {
				a.announce(p)
			}
			a.flush(p)
		}
		if choice.FinishReason != "" {
			a.stop = stopReason(choice.FinishReason)
			a.finished = true
		}
	}
}

func (a *accumulator) block(typ llm.BlockType) *partial {
	p := &partial{index: len(a.blocks), typ: typ}
	a.blocks = append(a.blocks, p)
	return p
}

// announce sends the DeltaToolUse of p, which must come before its input.
func (a *accumulator) announce(p *partial) {
	if p.id == "" {
		// Some servers of the protocol give no ids; the tool result
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
		}
	}
	return &llm.Response{Message: msg, StopReason: a.stop, Usage: a.usage, Model: a.model}
}

// stopReason maps the API's finish reason to orca's stop reason.
func stopReason(s string) llm.StopReason {
	switch s {
	case "stop":
		return llm.StopEndTurn
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	}
	return llm.StopReason(s)
}
