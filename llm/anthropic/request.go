package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/internal/reqbody"
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
	return p, nil
}

// body is the request's JSON: p's, with the messages of req
// (wireMessages; none, as the SDK sends none, when there are none).
func (c *Client) body(p sdk.MessageNewParams, req *llm.Request) ([]byte, error) {
	msgs, err := wireMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	var value any
	if len(msgs) > 0 {
		value = msgs
	}
	b, err := reqbody.With(p, "messages", value)
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: err.Error()}
	}
	return b, nil
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

// resultText is a tool result's text: its content, or, for a result that
// is only images and documents, a line saying what they are (a tool
// result of images alone is refused by some servers).
func resultText(b llm.Block, parts []llm.Block) string {
	if b.Content != "" || len(parts) == 0 {
		return b.Content
	}
	return llm.PartsText(parts)
}
