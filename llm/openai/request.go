package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/orca-agent/orca/llm"
)

// params translates req into a chat completion request, as the package
// documentation says. It does not modify req.
func (c *Client) params(req *llm.Request) (sdk.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.maxTokens
	}
	p := sdk.ChatCompletionNewParams{
		Model:               model,
		MaxCompletionTokens: param.NewOpt(int64(maxTokens)),
		StreamOptions:       sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		p.Messages = append(p.Messages, msgs...)
	}
	for _, t := range req.Tools {
		schema := shared.FunctionParameters{"type": "object"}
		if s := bytes.TrimSpace(t.InputSchema); len(s) > 0 {
			// Values stay raw, so that nested keys keep their order.
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(s, &fields); err != nil || fields == nil {
				return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("tool %q: the input schema is not a JSON object", t.Name)}
			}
			schema = make(shared.FunctionParameters, len(fields))
			for k, v := range fields {
				schema[k] = v
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	if o := req.Output; o != nil {
		if !json.Valid(o.Schema) {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("output schema %q: not valid JSON", o.Name)}
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: o.Name, Schema: json.RawMessage(o.Schema), Strict: param.NewOpt(o.Strict)},
		}}
	}
	if req.OneToolCall && len(p.Tools) > 0 {
		p.ParallelToolCalls = param.NewOpt(false)
	}
	switch {
	case c.effort != "":
		p.ReasoningEffort = shared.ReasoningEffort(c.effort)
	case len(p.Tools) > 0 && toolsNeedNoReasoning(model):
		p.ReasoningEffort = shared.ReasoningEffortNone
	}
	return p, nil
}

// toolsNeedNoReasoning reports whether model is one of OpenAI's reasoning
// models that take function tools on Chat Completions only with
// reasoning_effort "none".
func toolsNeedNoReasoning(model string) bool {
	return strings.HasPrefix(model, "gpt-6") ||
		strings.HasPrefix(model, "gpt-5.") && !strings.HasPrefix(model, "gpt-5.0")
}

// messages translates one orca message into the API's messages.
func messages(m llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var texts []string
	switch m.Role {
	case llm.RoleUser:
		var out []sdk.ChatCompletionMessageParamUnion
		// A tool message carries text only: what tool results show
		// (images, PDFs) goes in the user message after them, each
		// result's media after a line naming its call.
		var shown, parts []sdk.ChatCompletionContentPartUnionParam
		media := false
		for i := 0; i < len(m.Content); i++ {
			b := m.Content[i]
			switch b.Type {
			case llm.BlockText:
				if b.Text != "" {
					texts = append(texts, b.Text)
					parts = append(parts, sdk.TextContentPart(b.Text))
				}
			case llm.BlockImage, llm.BlockDocument:
				p, err := mediaPart(&b)
				if err != nil {
					return nil, err
				}
				parts = append(parts, p)
				media = true
			case llm.BlockToolResult:
				content := b.Content
				if parts := llm.ResultMedia(m.Content, i); len(parts) > 0 {
					i += len(parts)
					content = strings.TrimSpace(content + "\n(What it shows follows in the next user message: " + strings.ReplaceAll(llm.PartsText(parts), "\n", " ") + ")")
					shown = append(shown, sdk.TextContentPart(fmt.Sprintf("The result of tool call %s shows:", b.ToolUseID)))
					for _, p := range parts {
						mp, err := mediaPart(&p)
						if err != nil {
							return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
						}
						shown = append(shown, mp)
					}
				}
				if b.IsError {
					content = ErrorPrefix + content
				}
				out = append(out, sdk.ToolMessage(content, b.ToolUseID))
			case llm.BlockThinking, llm.BlockRedactedThinking:
			default:
				return nil, fmt.Errorf("block type %q in a user message", b.Type)
			}
		}
		switch {
		case len(shown) > 0 || media:
			out = append(out, sdk.UserMessage(append(shown, parts...)))
		case len(texts) == 0:
		case len(texts) == 1:
			out = append(out, sdk.UserMessage(texts[0]))
		default:
			out = append(out, sdk.UserMessage(parts))
		}
		return out, nil
	case llm.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		var reasoning []string
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockText:
				texts = append(texts, b.Text)
			case llm.BlockToolUse:
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       b.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: arguments(b.Input)},
					},
				})
			case llm.BlockThinking:
				if b.Name == fieldReasoningContent && b.Signature == "" {
					reasoning = append(reasoning, b.Thinking)
				}
			case llm.BlockRedactedThinking:
			default:
				return nil, fmt.Errorf("block type %q in an assistant message", b.Type)
			}
		}
		if text := strings.Join(texts, ""); text != "" {
			a.Content.OfString = param.NewOpt(text)
		}
		if !a.Content.OfString.Valid() && len(a.ToolCalls) == 0 {
			return nil, nil // nothing the API could take
		}
		if reasoning != nil {
			a.SetExtraFields(map[string]any{fieldReasoningContent: strings.Join(reasoning, "")})
		}
		return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

// arguments returns a tool use's input as the arguments string: the input
// itself when it is a JSON object.
func arguments(in json.RawMessage) string {
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 {
		return "{}"
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return string(trimmed)
	}
	quoted, _ := json.Marshal(map[string]string{rawInputKey: string(in)})
	return string(quoted)
}

// mediaPart returns an image or a PDF as a content part of a user
// message: an image_url part with a data URL, a file part with the PDF's
// data URL and its name.
func mediaPart(b *llm.Block) (sdk.ChatCompletionContentPartUnionParam, error) {
	m := b.Media
	if m == nil || len(m.Data) == 0 {
		return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("an %s block without its bytes (%s)", b.Type, m)
	}
	url := "data:" + m.MediaType + ";base64," + base64.StdEncoding.EncodeToString(m.Data)
	switch {
	case b.Type == llm.BlockDocument && m.MediaType == llm.MediaPDF:
		name := "document.pdf"
		if m.Name != "" {
			name = filepath.Base(m.Name)
		}
		return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt(url), Filename: param.NewOpt(name)}), nil
	case b.Type == llm.BlockImage:
		switch m.MediaType {
		case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP:
			return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}), nil
		}
	}
	return sdk.ChatCompletionContentPartUnionParam{}, fmt.Errorf("an %s block of type %q, which the API does not take", b.Type, m.MediaType)
}
