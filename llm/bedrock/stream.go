package bedrock

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/orca-agent/orca/llm"
)

// accumulator assembles the final message from a stream's events and
// forwards the text and tool-input pieces to onDelta as they come.
type accumulator struct {
	onDelta func(llm.Delta)
	blocks  []*partial
	// index maps a content block's index in the stream to its position
	// in the final message; -1 for blocks orca does not keep (a server
	// tool's use and result, an image).
	index   map[int32]int
	usage   llm.Usage
	stop    types.StopReason
	stopped bool // messageStop seen
	// whole: the metadata event, the stream's last, came after
	// messageStop: nothing of the answer is missing.
	whole bool
}

// partial is one content block being streamed.
type partial struct {
	typ       llm.BlockType
	id, name  string
	text      strings.Builder // text, thinking, or tool input
	signature strings.Builder
	redacted  []byte
}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	return &accumulator{onDelta: onDelta, index: map[int32]int{}}
}

func (a *accumulator) add(ev types.ConverseStreamOutput) {
	switch ev := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		a.start(aws32(ev.Value.ContentBlockIndex), ev.Value.Start)
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		a.delta(aws32(ev.Value.ContentBlockIndex), ev.Value.Delta)
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stop, a.stopped = ev.Value.StopReason, true
	case *types.ConverseStreamOutputMemberMetadata:
		a.whole = a.stopped
		if u := ev.Value.Usage; u != nil {
			a.usage = llm.Usage{
				InputTokens:      int64(aws32(u.InputTokens)),
				OutputTokens:     int64(aws32(u.OutputTokens)),
				CacheReadTokens:  int64(aws32(u.CacheReadInputTokens)),
				CacheWriteTokens: int64(aws32(u.CacheWriteInputTokens)),
			}
		}
	}
}

func aws32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// start opens a block that announces itself: a tool use.
func (a *accumulator) start(index int32, s types.ContentBlockStart) {
	tu, ok := s.(*types.ContentBlockStartMemberToolUse)
	if !ok || tu.Value.Type == types.ToolUseTypeServerToolUse {
		a.index[index] = -1
		return
	}
	p := &partial{typ: llm.BlockToolUse, id: ptr(tu.Value.ToolUseId), name: ptr(tu.Value.Name)}
	a.index[index] = len(a.blocks)
	a.blocks = append(a.blocks, p)
	a.onDelta(llm.Delta{Type: llm.DeltaToolUse, Index: len(a.blocks) - 1, ID: p.id, Name: p.name})
}

func ptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// block returns the block of index, opening one of typ for an index seen
// the first time (text and reasoning come without a start event); nil
// for a block orca does not keep.
func (a *accumulator) block(index int32, typ llm.BlockType) (*partial, int) {
	i, ok := a.index[index]
	if !ok {
		i = len(a.blocks)
		a.index[index] = i
		a.blocks = append(a.blocks, &partial{typ: typ})
	}
	if i < 0 {
		return nil, i
	}
	return a.blocks[i], i
}

func (a *accumulator) delta(index int32, d types.ContentBlockDelta) {
	switch d := d.(type) {
	case *types.ContentBlockDeltaMemberText:
		if d.Value == "" {
			// An empty piece opens no block: gpt-oss begins its answers
			// with one, and a blank text block sent back is refused.
			return
		}
		p, i := a.block(index, llm.BlockText)
		if p != nil && p.typ == llm.BlockText {
			p.text.WriteString(d.Value)
			a.onDelta(llm.Delta{Type: llm.DeltaText, Index: i, Text: d.Value})
		}
	case *types.ContentBlockDeltaMemberToolUse:
		p, i := a.block(index, llm.BlockToolUse)
		if p != nil && p.typ == llm.BlockToolUse && d.Value.Input != nil && *d.Value.Input != "" {
			p.text.WriteString(*d.Value.Input)
			a.onDelta(llm.Delta{Type: llm.DeltaToolInput, Index: i, Text: *d.Value.Input})
		}
	case *types.ContentBlockDeltaMemberReasoningContent:
		typ := llm.BlockThinking
		if _, ok := d.Value.(*types.ReasoningContentBlockDeltaMemberRedactedContent); ok {
			typ = llm.BlockRedactedThinking
		}
		p, _ := a.block(index, typ)
		if p == nil {
			return
		}
		switch r := d.Value.(type) {
		case *types.ReasoningContentBlockDeltaMemberText:
			p.text.WriteString(r.Value)
		case *types.ReasoningContentBlockDeltaMemberSignature:
			p.signature.WriteString(r.Value)
		case *types.ReasoningContentBlockDeltaMemberRedactedContent:
			p.typ = llm.BlockRedactedThinking
			p.redacted = append(p.redacted, r.Value...)
		}
	}
}

// response returns the assembled response.
func (a *accumulator) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: make([]llm.Block, 0, len(a.blocks))}
	calls := 0
	for _, p := range a.blocks {
		b := llm.Block{Type: p.typ}
		switch p.typ {
		case llm.BlockText:
			b.Text = p.text.String()
		case llm.BlockToolUse:
			calls++
			b.ID, b.Name = p.id, p.name
			in := strings.TrimSpace(p.text.String())
			if in == "" || in == "null" {
				in = "{}" // a tool without parameters
			}
			b.Input = json.RawMessage(in)
		case llm.BlockThinking:
			b.Thinking, b.Signature = p.text.String(), p.signature.String()
		case llm.BlockRedactedThinking:
			b.Signature = base64.StdEncoding.EncodeToString(p.redacted)
		}
		msg.Content = append(msg.Content, b)
	}
	resp := &llm.Response{Message: msg, Usage: a.usage}
	switch a.stop {
	case types.StopReasonEndTurn:
		resp.StopReason = llm.StopEndTurn
	case types.StopReasonToolUse:
		resp.StopReason = llm.StopToolUse
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		resp.StopReason = llm.StopMaxTokens
	case types.StopReasonStopSequence:
		resp.StopReason = llm.StopSequence
	case types.StopReasonGuardrailIntervened:
		resp.StopReason = llm.StopRefusal
		resp.Refusal = "a guardrail intervened (guardrail_intervened)"
		if t := strings.TrimSpace(msg.Text()); t != "" {
			// The guardrail's own message for a blocked answer.
			resp.Refusal += ": " + t
		}
	case types.StopReasonContentFiltered:
		resp.StopReason = llm.StopRefusal
		resp.Refusal = "the content was filtered (content_filtered)"
	case types.StopReasonMalformedModelOutput, types.StopReasonMalformedToolUse:
		// The turn sees an answer that ended, and says why when it has
		// nothing else.
		resp.StopReason = llm.StopEndTurn
		if calls > 0 {
			resp.StopReason = llm.StopToolUse
		}
		if len(msg.Content) == 0 {
			resp.Message.Content = []llm.Block{llm.TextBlock("(the model's answer was malformed: " + string(a.stop) + ")")}
		}
	default:
		resp.StopReason = llm.StopReason(a.stop)
	}
	return resp
}
