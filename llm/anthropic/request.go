package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/orca-agent/orca/llm"
)

// params translates req into a Messages request, with the cache
// breakpoints described in the package documentation. It does not modify
// req.
func (c *Client) params(req *llm.Request) (sdk.MessageNewParams, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.maxTokens
	}
	p := sdk.MessageNewParams{Model: model}
	switch t := c.thinking; {
	case t.adaptive:
		p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	case t.budget > 0:
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(t.budget))
		maxTokens += t.budget
	}
	p.MaxTokens = int64(maxTokens)
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	for i, t := range req.Tools {
		schema := bytes.TrimSpace(t.InputSchema)
		if len(schema) == 0 {
			schema = []byte(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("tool %q: the input schema is not valid JSON", t.Name)}
		}
		tp := &sdk.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
		}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		if i == len(req.Tools)-1 {
			tp.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	if w := req.WebSearch; w != nil {
		// The API takes allowed or blocked domains, not both: with both,
		// the allowed ones are sent (llm.WebSearch: the caller filters).
		ws := &sdk.WebSearchTool20250305Param{}
		if len(w.Allowed) > 0 {
			ws.AllowedDomains = w.Allowed
		} else {
			ws.BlockedDomains = w.Blocked
		}
		if w.MaxUses > 0 {
			ws.MaxUses = param.NewOpt(int64(w.MaxUses))
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfWebSearchTool20250305: ws})
	}
	if o := req.Output; o != nil {
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil || schema == nil {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("output schema %q: not a JSON object", o.Name)}
		}
		p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: schema}}
	}
	if req.OneToolCall && len(p.Tools) > 0 {
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: param.NewOpt(true)}}
	}
	// The cache-sensitive prefix ends with the message before the newest
	// user turn.
	breakpoint := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			breakpoint = i - 1
			break
		}
	}
	for i, m := range req.Messages {
		blocks, err := contentBlocks(m, i == breakpoint)
		if err != nil {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		if len(blocks) == 0 {
			// The API refuses empty messages; consecutive turns of one
			// role are merged by the API, so leaving it out is safe.
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		case llm.RoleAssistant:
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		default:
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
	}
	return p, nil
}

// contentBlocks translates the blocks of m, marking the last one that can
// carry a cache breakpoint if cache is set.
func contentBlocks(m llm.Message, cache bool) ([]sdk.ContentBlockParamUnion, error) {
	out := make([]sdk.ContentBlockParamUnion, 0, len(m.Content))
	last := -1 // the last block that can carry cache_control
	for i := 0; i < len(m.Content); i++ {
		b := m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text == "" {
				continue // the API refuses empty text blocks
			}
			out = append(out, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: b.Text}})
		case llm.BlockToolUse:
			out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
				ID: b.ID, Name: b.Name, Input: toolInput(b.Input),
			}})
		case llm.BlockToolResult:
			r := &sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
			parts := llm.ResultMedia(m.Content, i)
			i += len(parts)
			if text := resultText(b, parts); text != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
			}
			for _, p := range parts {
				c, err := mediaBlock(&p)
				if err != nil {
					return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
				}
				if c.OfImage != nil {
					r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfImage: c.OfImage})
				} else {
					r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfDocument: c.OfDocument})
				}
			}
			if b.IsError {
				r.IsError = param.NewOpt(true)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolResult: r})
		case llm.BlockImage, llm.BlockDocument:
			c, err := mediaBlock(&b)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		case llm.BlockThinking:
			if b.Signature == "" {
				continue
			}
			out = append(out, sdk.NewThinkingBlock(b.Signature, b.Thinking))
			continue
		case llm.BlockRedactedThinking:
			if b.Signature == "" {
				continue
			}
			out = append(out, sdk.NewRedactedThinkingBlock(b.Signature))
			continue
		default:
			return nil, fmt.Errorf("unknown block type %q", b.Type)
		}
		last = len(out) - 1
	}
	if cache && last >= 0 {
		cc := sdk.NewCacheControlEphemeralParam()
		switch b := out[last]; {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		case b.OfImage != nil:
			b.OfImage.CacheControl = cc
		case b.OfDocument != nil:
			b.OfDocument.CacheControl = cc
		}
	}
	return out, nil
}

// toolInput returns a tool use's input as the API accepts it: a JSON
// object, the input itself when it is one.
func toolInput(in json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 {
		return json.RawMessage(`{}`)
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return trimmed
	}
	quoted, _ := json.Marshal(map[string]string{rawInputKey: string(in)})
	return quoted
}

// mediaBlock returns an image or document block as the API takes it: its
// bytes in base64, within the block (an image block, a PDF document).
func mediaBlock(b *llm.Block) (sdk.ContentBlockParamUnion, error) {
	m := b.Media
	if m == nil || len(m.Data) == 0 {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("an %s block without its bytes (%s)", b.Type, m)
	}
	data := base64.StdEncoding.EncodeToString(m.Data)
	switch {
	case b.Type == llm.BlockDocument && m.MediaType == llm.MediaPDF:
		d := sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: data})
		if m.Name != "" {
			d.OfDocument.Title = param.NewOpt(filepath.Base(m.Name))
		}
		return d, nil
	case b.Type == llm.BlockImage:
		switch m.MediaType {
		case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP:
			return sdk.NewImageBlockBase64(m.MediaType, data), nil
		}
	}
	return sdk.ContentBlockParamUnion{}, fmt.Errorf("an %s block of type %q, which the API does not take", b.Type, m.MediaType)
}

// resultText is a tool result's text: its content, or, for a result that
// is only images and documents, a line saying what they are (a tool
// result of images alone is refused by some servers).
func resultText(b llm.Block, parts []llm.Block) string {
	if b.Content != "" || len(parts) == 0 {
		return b.Content
	}
	return llm.PartsText(parts)
}
