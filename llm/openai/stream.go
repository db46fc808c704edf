package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/orca-agent/orca/llm"
)

// accumulator assembles the final message from a stream's chunks and
// forwards text and argument pieces to onDelta as they come. Blocks take
// their place in the final message when they first appear, so that a
// delta's index is the block's final index.
type accumulator struct {
	onDelta  func(llm.Delta)
	blocks   []*partial
	thinking *partial           // the thinking block, once reasoning arrived
	text     *partial           // the text block, once content arrived
	calls    map[int64]*partial // tool calls by the API's tool-call index
	refusal  strings.Builder    // the refusal message, which is not text
	usage    llm.Usage
	stop     llm.StopReason
	model    string
	id       string
	finished bool // a finish reason arrived
}

type partial struct {
	index     int // in the final message
	typ       llm.BlockType
	id, name  string          // a tool call's; for thinking, the field it came in
	wireID    string          // the tool call id the server gave, if any
	buf       strings.Builder // text, thinking, or arguments
	announced bool            // the DeltaToolUse went out
	sent      int             // bytes of buf sent as deltas
}

// The fields of a chunk's delta that carry reasoning, which the API's own
// models do not send and the SDK keeps among the extra fields. DeepSeek,
// and vLLM, SGLang and llama.cpp serving Qwen, Kimi or GLM, send
// reasoning_content; OpenRouter, Groq, Cerebras and newer vLLM send
// reasoning. A chunk with both (some gateways send the same text twice)
// counts once, as reasoning_content.
const (
	fieldReasoningContent = "reasoning_content"
	fieldReasoning        = "reasoning"
)

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	return &accumulator{onDelta: onDelta, calls: map[int64]*partial{}}
}

// add takes one chunk in. It fails only on a chunk whose content is
// neither text nor a list of content parts.
func (a *accumulator) add(ch sdk.ChatCompletionChunk) error {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.ID != "" {
		a.id = ch.ID
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
		a.reason(d.JSON.ExtraFields)
		if err := a.content(d); err != nil {
			return err
		}
		// A refusal message is what the model said instead of an answer:
		// not text, nor streamed as text.
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			p, ok := a.calls[tc.Index]
			if ok && tc.ID != "" && p.wireID != "" && tc.ID != p.wireID && tc.Function.Name != "" {
				// Another call at the same index: some servers (Ollama,
				// ollama/ollama#15457) send every call of a response at
				// index 0, each with an id and a name of its own. Pieces
				// without a name still continue the call there, whatever
				// their id: other servers send a fresh id with every piece.
				ok = false
			}
			if !ok {
				p = a.block(llm.BlockToolUse)
				a.calls[tc.Index] = p
			}
			if p.wireID == "" {
				p.wireID = tc.ID
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
	return nil
}

// reason takes the reasoning of a delta's extra fields into the thinking
// block, which keeps the name of the field it first came in. A field that
// is not a string (null, where a server sends every field of every chunk)
// carries none.
func (a *accumulator) reason(extra map[string]respjson.Field) {
	for _, field := range []string{fieldReasoningContent, fieldReasoning} {
		raw := strings.TrimSpace(extra[field].Raw())
		var piece string
		if raw == "" || raw == "null" || json.Unmarshal([]byte(raw), &piece) != nil {
			continue
		}
		a.think(field, piece)
		return
	}
}

// think adds a piece of reasoning, empty or not: an empty one still says
// the server reasons in that field.
func (a *accumulator) think(field, piece string) {
	if a.thinking == nil {
		a.thinking = a.block(llm.BlockThinking)
		a.thinking.name = field
	}
	a.thinking.buf.WriteString(piece)
}

// content takes a delta's content in: text, or, from servers that send
// the content of reasoning models as a list of parts (Mistral's
// Magistral), text parts as text and thinking parts as thinking. Parts of
// other types are left out. Content that is neither a string nor such a
// list is an error.
func (a *accumulator) content(d sdk.ChatCompletionChunkChoiceDelta) error {
	raw := strings.TrimSpace(d.JSON.Content.Raw())
	switch {
	case raw == "" || raw == "null":
		return nil
	case raw[0] == '"':
		// Decided on the raw JSON: the SDK would take a number or a
		// boolean for text too.
		a.write(d.Content)
		return nil
	}
	var parts []contentPart
	if err := json.Unmarshal([]byte(raw), &parts); err != nil {
		return &llm.Error{Kind: llm.KindServer, Message: fmt.Sprintf("a chunk's content is neither text nor a list of content parts: %s", clip(raw, 200)),
			Err: fmt.Errorf("openai: chunk content: %w", err)}
	}
	for _, part := range parts {
		switch part.Type {
		case "text":
			a.write(part.Text)
		case "thinking":
			a.think("", part.thinking())
		}
	}
	return nil
}

// contentPart is one part of a list-valued content. A thinking part's
// thinking is itself a list of text parts (Mistral's); a string is taken
// too.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking json.RawMessage `json:"thinking"`
}

func (p contentPart) thinking() string {
	var s string
	if json.Unmarshal(p.Thinking, &s) == nil {
		return s
	}
	var texts []struct {
		Type, Text string
	}
	if json.Unmarshal(p.Thinking, &texts) != nil {
		return ""
	}
	var b strings.Builder
	for _, t := range texts {
		if t.Type == "text" {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// write adds a piece of text, and streams it.
func (a *accumulator) write(piece string) {
	if piece == "" {
		return
	}
	if a.text == nil {
		a.text = a.block(llm.BlockText)
	}
	a.text.buf.WriteString(piece)
	a.onDelta(llm.Delta{Type: llm.DeltaText, Index: a.text.index, Text: piece})
}

// clip returns s cut to at most n bytes, at a rune's start, marked when
// cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
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
		case llm.BlockThinking:
			msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Thinking: p.buf.String(), Name: p.name})
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
	resp := &llm.Response{Message: msg, StopReason: a.stop, Usage: a.usage, Model: a.model, ID: a.id}
	if a.refusal.Len() > 0 {
		// The API ends a refusal with finish reason "stop".
		resp.StopReason, resp.Refusal = llm.StopRefusal, a.refusal.String()
	}
	return resp
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
