package responses

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm"
)

// params translates req into a Responses request, as the package
// documentation says, but for its input (body encodes it). It does not
// modify req.
func (c *Client) params(req *llm.Request) (responses.ResponseNewParams, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.maxTokens
	}
	p := responses.ResponseNewParams{
		Model:           model,
		MaxOutputTokens: param.NewOpt(int64(maxTokens)),
		Store:           param.NewOpt(c.store),
	}
	if req.System != "" {
		p.Instructions = param.NewOpt(req.System)
	}
	for _, t := range req.Tools {
		schema, err := object(t.InputSchema)
		if err != nil {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("tool %q: the input schema is not a JSON object", t.Name)}
		}
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: param.NewOpt(false)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	if w := req.WebSearch; w != nil {
		// The API's own search. It takes allowed domains only: Blocked is
		// left to the caller (llm.WebSearch).
		ws := responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}
		if len(w.Allowed) > 0 {
			ws.Filters.AllowedDomains = w.Allowed
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfWebSearch: &ws})
		if w.MaxUses > 0 {
			// max_tool_calls caps the calls of the API's own tools, of
			// which orca sends web_search alone.
			p.MaxToolCalls = param.NewOpt(int64(w.MaxUses))
		}
	}
	if o := req.Output; o != nil {
		schema, err := object(o.Schema)
		if err != nil || len(bytes.TrimSpace(o.Schema)) == 0 {
			return p, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("output schema %q: not a JSON object", o.Name)}
		}
		p.Text.Format = responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
			Name: o.Name, Schema: schema, Strict: param.NewOpt(o.Strict),
		}}
	}
	if req.OneToolCall && len(req.Tools) > 0 {
		p.ParallelToolCalls = param.NewOpt(false)
	}
	if c.effort != "" || c.summary != "" {
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(c.effort), Summary: shared.ReasoningSummary(c.summary)}
	}
	if c.effort != "" || c.summary != "" || reasons(model) {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if req.WebSearch != nil {
		// Every page the search found, not only those the answer cites
		// (Response.Sources), as Anthropic's search gives them.
		p.Include = append(p.Include, responses.ResponseIncludableWebSearchCallActionSources)
	}
	return p, nil
}

// object returns a JSON object as the SDK's map, its values kept raw so
// that nested keys keep their order. Empty is {"type": "object"}.
func object(s json.RawMessage) (map[string]any, error) {
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return map[string]any{"type": "object"}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(s, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	return out, nil
}

// reasons reports whether model is a reasoning model, whose reasoning
// items are asked for with their encrypted content: as the catalog says,
// else by the name of its family.
func reasons(model string) bool {
	if m, ok := catalog.Default().Lookup("openai", model); ok && m.Reasoning != nil {
		return *m.Reasoning
	}
	name := strings.ToLower(model)
	switch {
	case strings.Contains(name, "-chat"):
		return false // gpt-5-chat-latest: the chat model of a reasoning generation
	case len(name) >= 2 && name[0] == 'o' && name[1] >= '1' && name[1] <= '9':
		return true
	case strings.Contains(name, "codex"):
		return true
	}
	rest, ok := strings.CutPrefix(name, "gpt-")
	return ok && rest != "" && rest[0] >= '5' && rest[0] <= '9'
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

// dataURL returns the data URL of an image or a PDF block, and, for a
// PDF, the file name it is sent with ("" for an image).
func dataURL(b *llm.Block) (url, filename string, err error) {
	m := b.Media
	if m == nil || len(m.Data) == 0 {
		return "", "", fmt.Errorf("an %s block without its bytes (%s)", b.Type, m)
	}
	url = "data:" + m.MediaType + ";base64," + base64.StdEncoding.EncodeToString(m.Data)
	switch {
	case b.Type == llm.BlockDocument && m.MediaType == llm.MediaPDF:
		name := "document.pdf"
		if m.Name != "" {
			name = filepath.Base(m.Name)
		}
		return url, name, nil
	case b.Type == llm.BlockImage:
		switch m.MediaType {
		case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP:
			return url, "", nil
		}
	}
	return "", "", fmt.Errorf("an %s block of type %q, which the API does not take", b.Type, m.MediaType)
}
