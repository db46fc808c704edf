package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/orca-agent/orca/llm"
)

// The messages of a request, as the Messages API takes them. body writes
// them (wireMessages) with encoding/json over the types below, which mirror the
// SDK's param types field for field, in the SDK's order: the bytes sent are
// those the SDK would send (request_test.go compares them).

type wireMessage struct {
	Content []any    `json:"content"`
	Role    llm.Role `json:"role"`
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

type textBlock struct {
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
	Type         string        `json:"type"`
}

type toolUseBlock struct {
	ID           string          `json:"id"`
	Input        json.RawMessage `json:"input"`
	Name         string          `json:"name"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
	Type         string          `json:"type"`
}

type toolResultBlock struct {
	ToolUseID    string        `json:"tool_use_id"`
	IsError      bool          `json:"is_error,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
	Content      []any         `json:"content,omitempty"`
	Type         string        `json:"type"`
}

type mediaSource struct {
	Data      string `json:"data"`
	MediaType string `json:"media_type"`
	Type      string `json:"type"`
}

type mediaBlock struct {
	Source       mediaSource   `json:"source"`
	Title        string        `json:"title,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
	Type         string        `json:"type"`
}

type thinkingBlock struct {
	Signature string `json:"signature"`
	Thinking  string `json:"thinking"`
	Type      string `json:"type"`
}

type redactedThinkingBlock struct {
	Data string `json:"data"`
	Type string `json:"type"`
}

// wireMessages returns msgs as the request's messages, with the cache
// breakpoint described in the package documentation: the last block that
// can carry one of the message before the newest user message.
func wireMessages(msgs []llm.Message) ([]wireMessage, error) {
	breakpoint := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			breakpoint = i - 1
			break
		}
	}
	out := make([]wireMessage, 0, len(msgs))
	for i, m := range msgs {
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
		blocks, err := wireBlocks(m, i == breakpoint)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		if len(blocks) == 0 {
			// The API refuses empty messages; consecutive turns of one
			// role are merged by the API, so leaving it out is safe.
			continue
		}
		out = append(out, wireMessage{Role: m.Role, Content: blocks})
	}
	return out, nil
}

// wireBlocks translates the blocks of m, marking the last one that can
// carry a cache breakpoint if cache is set.
func wireBlocks(m llm.Message, cache bool) ([]any, error) {
	out := make([]any, 0, len(m.Content))
	last := -1 // the last block that can carry cache_control
	for i := 0; i < len(m.Content); i++ {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text == "" {
				continue // the API refuses empty text blocks
			}
			out = append(out, &textBlock{Type: "text", Text: b.Text})
		case llm.BlockToolUse:
			out = append(out, &toolUseBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: toolInput(b.Input)})
		case llm.BlockToolResult:
			r := &toolResultBlock{Type: "tool_result", ToolUseID: b.ToolUseID, IsError: b.IsError}
			parts := llm.ResultMedia(m.Content, i)
			i += len(parts)
			if text := resultText(*b, parts); text != "" {
				r.Content = append(r.Content, &textBlock{Type: "text", Text: text})
			}
			for k := range parts {
				c, err := wireMedia(&parts[k])
				if err != nil {
					return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
				}
				r.Content = append(r.Content, c)
			}
			out = append(out, r)
		case llm.BlockImage, llm.BlockDocument:
			c, err := wireMedia(b)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		case llm.BlockThinking:
			if b.Signature != "" {
				out = append(out, &thinkingBlock{Type: "thinking", Signature: b.Signature, Thinking: b.Thinking})
			}
			continue
		case llm.BlockRedactedThinking:
			if b.Signature != "" {
				out = append(out, &redactedThinkingBlock{Type: "redacted_thinking", Data: b.Signature})
			}
			continue
		default:
			return nil, fmt.Errorf("unknown block type %q", b.Type)
		}
		last = len(out) - 1
	}
	if cache && last >= 0 {
		switch b := out[last].(type) {
		case *textBlock:
			b.CacheControl = ephemeral
		case *toolUseBlock:
			b.CacheControl = ephemeral
		case *toolResultBlock:
			b.CacheControl = ephemeral
		case *mediaBlock:
			b.CacheControl = ephemeral
		}
	}
	return out, nil
}

// wireMedia returns an image or document block as the API takes it: its
// bytes in base64, within the block (an image block, a PDF document).
func wireMedia(b *llm.Block) (*mediaBlock, error) {
	m := b.Media
	if m == nil || len(m.Data) == 0 {
		return nil, fmt.Errorf("an %s block without its bytes (%s)", b.Type, m)
	}
	src := mediaSource{Type: "base64", MediaType: m.MediaType, Data: base64.StdEncoding.EncodeToString(m.Data)}
	switch {
	case b.Type == llm.BlockDocument && m.MediaType == llm.MediaPDF:
		d := &mediaBlock{Type: "document", Source: src}
		if m.Name != "" {
			d.Title = filepath.Base(m.Name)
		}
		return d, nil
	case b.Type == llm.BlockImage:
		switch m.MediaType {
		case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP:
			return &mediaBlock{Type: "image", Source: src}, nil
		}
	}
	return nil, fmt.Errorf("an %s block of type %q, which the API does not take", b.Type, m.MediaType)
}
