package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/orca-agent/orca/llm"
)

// params translates req into a chat completion request, as the package
// documentation says, but for its messages (body encodes them). It does
// not modify req.
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
