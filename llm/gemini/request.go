package gemini

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/orca-agent/orca/llm"
)

// request translates req into the API's contents and configuration.
func (c *Client) request(req *llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	conf := &genai.GenerateContentConfig{
		MaxOutputTokens: int32(c.maxTokens),
		// Thoughts come back summarised, as thinking blocks (models that
		// do not think ignore it).
		ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true},
		// orca resumes nothing behind the caller's back.
		AutomaticContinuation: new(bool),
	}
	if req.MaxTokens > 0 {
		conf.MaxOutputTokens = int32(req.MaxTokens)
	}
	if req.System != "" {
		conf.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			decls[i] = &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: schema(t.InputSchema)}
		}
		conf.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
		mode := genai.FunctionCallingConfigModeAuto
		if req.Output != nil && req.Output.Name != "" && req.OneToolCall {
			mode = genai.FunctionCallingConfigModeAny
		}
		conf.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: mode}}
	}
	if w := req.WebSearch; w != nil {
		gs := &genai.GoogleSearch{}
		if c.vertex {
			gs.ExcludeDomains = w.Blocked
		}
		conf.Tools = append(conf.Tools, &genai.Tool{GoogleSearch: gs})
	}
	if o := req.Output; o != nil && len(req.Tools) == 0 {
		conf.ResponseMIMEType = "application/json"
		conf.ResponseJsonSchema = schema(o.Schema)
	}
	names := map[string]string{} // tool use id → function name, for the responses
	contents := make([]*genai.Content, 0, len(req.Messages))
	for i, m := range req.Messages {
		var role string
		switch m.Role {
		case llm.RoleUser:
			role = genai.RoleUser
		case llm.RoleAssistant:
			role = genai.RoleModel
		default:
			return nil, nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
		parts, err := partsOf(m, names)
		if err != nil {
			return nil, nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		if len(parts) == 0 {
			continue // the API refuses a content without parts
		}
		contents = append(contents, &genai.Content{Role: role, Parts: parts})
	}
	return contents, conf, nil
}

// schema is a JSON schema as the SDK sends it: verbatim.
func schema(raw json.RawMessage) any {
	if len(raw) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return raw
}

// partsOf translates the blocks of m.
func partsOf(m llm.Message, names map[string]string) ([]*genai.Part, error) {
	var out []*genai.Part
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			if b.Text == "" && b.Signature == "" {
				continue
			}
			p := &genai.Part{Text: b.Text}
			if err := sign(p, b.Signature); err != nil {
				return nil, err
			}
			out = append(out, p)
		case llm.BlockThinking:
			// A thought summary goes back only where it carries a
			// signature, which must return on its part; the API has no
			// use for the summary itself.
			if m.Role != llm.RoleAssistant || b.Signature == "" {
				continue
			}
			p := &genai.Part{Text: b.Thinking, Thought: true}
			if err := sign(p, b.Signature); err != nil {
				return nil, err
			}
			out = append(out, p)
		case llm.BlockRedactedThinking:
			// Not Gemini's: another provider's reasoning stays with it.
		case llm.BlockToolUse:
			names[b.ID] = b.Name
			args := map[string]any{}
			if len(b.Input) > 0 && json.Unmarshal(b.Input, &args) != nil {
				// Malformed arguments the model produced: quoted, as the
				// other providers send them.
				args = map[string]any{"_raw_input": string(b.Input)}
			}
			p := &genai.Part{FunctionCall: &genai.FunctionCall{ID: b.ID, Name: b.Name, Args: args}}
			if err := sign(p, b.Signature); err != nil {
				return nil, err
			}
			out = append(out, p)
		case llm.BlockToolResult:
			key := "result"
			if b.IsError {
				key = "error"
			}
			name := names[b.ToolUseID]
			if name == "" {
				return nil, fmt.Errorf("the result of tool call %q answers no call before it", b.ToolUseID)
			}
			out = append(out, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: b.ToolUseID, Name: name, Response: map[string]any{key: b.Content}}})
		case llm.BlockImage, llm.BlockDocument:
			md := b.Media
			if md == nil || len(md.Data) == 0 {
				return nil, fmt.Errorf("an %s block without its bytes", b.Type)
			}
			switch md.MediaType {
			case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP, llm.MediaPDF:
			default:
				return nil, fmt.Errorf("an %s block of type %q, which the API does not take", b.Type, md.MediaType)
			}
			out = append(out, &genai.Part{InlineData: &genai.Blob{MIMEType: md.MediaType, Data: md.Data}})
		default:
			return nil, fmt.Errorf("block type %q", b.Type)
		}
	}
	return out, nil
}

// sign puts a block's signature, base64, on its part.
func sign(p *genai.Part, sig string) error {
	if sig == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("a thought signature that is not base64: %v", err)
	}
	p.ThoughtSignature = b
	return nil
}
