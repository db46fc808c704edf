package responses

import (
	"fmt"

	"github.com/openai/openai-go/v3/responses"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/internal/reqbody"
)

// The input of a request, as the Responses API takes it. body writes it
// with encoding/json over the types below, which mirror the SDK's param
// types field for field, in the SDK's order: the bytes sent are those the
// SDK would send (request_test.go compares them). The SDK's
// reflection-based encoder took milliseconds a call for a long
// conversation.

type inputMessage struct {
	Content any    `json:"content"` // a string, or parts
	Role    string `json:"role"`
}

type inputText struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

type inputImage struct {
	Detail   string `json:"detail"`
	ImageURL string `json:"image_url"`
	Type     string `json:"type"`
}

// outputImage is an image in a function call's output (the SDK's
// ResponseInputImageContentParam: its fields in another order).
type outputImage struct {
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	Type     string `json:"type"`
}

type inputFile struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
	Type     string `json:"type"`
}

type functionCallOutput struct {
	Output any    `json:"output"` // a string, or parts
	CallID string `json:"call_id"`
	Type   string `json:"type"`
}

type functionCall struct {
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Type      string `json:"type"`
}

type reasoningItem struct {
	ID               string             `json:"id"`
	Summary          []reasoningSummary `json:"summary"`
	EncryptedContent string             `json:"encrypted_content,omitempty"`
	Type             string             `json:"type"`
}

type reasoningSummary struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// body is the request's JSON: p's, with req's messages as its input
// (an empty list when there are none, as the SDK sent it).
func (c *Client) body(p responses.ResponseNewParams, req *llm.Request) ([]byte, error) {
	input := make([]any, 0, len(req.Messages))
	var err error
	for i, m := range req.Messages {
		if input, err = c.appendItems(input, m); err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
	}
	b, err := reqbody.With(p, "input", input)
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: err.Error()}
	}
	return b, nil
}

// appendItems appends the API's input items for one orca message.
func (c *Client) appendItems(out []any, m llm.Message) ([]any, error) {
	switch m.Role {
	case llm.RoleUser:
		return userInput(out, m)
	case llm.RoleAssistant:
		return c.assistantInput(out, m)
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

// userInput appends a user message's items: its tool results as
// function_call_output items, then its text and media as a user message.
func userInput(out []any, m llm.Message) ([]any, error) {
	var parts []any
	for i := 0; i < len(m.Content); i++ {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				parts = append(parts, &inputText{Text: b.Text, Type: "input_text"})
			}
		case llm.BlockImage, llm.BlockDocument:
			part, err := mediaInput(b, false)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		case llm.BlockToolResult:
			content := b.Content
			if b.IsError {
				content = ErrorPrefix + content
			}
			item := &functionCallOutput{Output: content, CallID: b.ToolUseID, Type: "function_call_output"}
			if media := llm.ResultMedia(m.Content, i); len(media) > 0 {
				// The output takes content parts: the result's text, then
				// what it shows.
				list := make([]any, 0, len(media)+1)
				if content != "" {
					list = append(list, &inputText{Text: content, Type: "input_text"})
				}
				for j := range media {
					part, err := mediaInput(&media[j], true)
					if err != nil {
						return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
					}
					list = append(list, part)
				}
				item.Output = list
				i += len(media)
			}
			out = append(out, item)
		case llm.BlockThinking, llm.BlockRedactedThinking:
		default:
			return nil, fmt.Errorf("block type %q in a user message", b.Type)
		}
	}
	if len(parts) > 0 {
		out = append(out, &inputMessage{Content: parts, Role: "user"})
	}
	return out, nil
}

// mediaInput returns an image or a PDF as an input part: a file with its
// name, or an image — in a function call's output (inOutput), of the type
// the SDK has there, its fields in another order.
func mediaInput(b *llm.Block, inOutput bool) (any, error) {
	url, name, err := dataURL(b)
	switch {
	case err != nil:
		return nil, err
	case name != "":
		return &inputFile{FileData: url, Filename: name, Type: "input_file"}, nil
	case inOutput:
		return &outputImage{ImageURL: url, Detail: "auto", Type: "input_image"}, nil
	}
	return &inputImage{Detail: "auto", ImageURL: url, Type: "input_image"}, nil
}

// assistantInput appends an assistant message's items, block by block, in
// its order: text as assistant messages, tool uses as function calls,
// this API's reasoning blocks (redacted_thinking with an ID) as reasoning
// items, the blocks of one item merged back into it.
func (c *Client) assistantInput(out []any, m llm.Message) ([]any, error) {
	from := len(out)
	reasoning := map[string]*reasoningItem{}
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, &inputMessage{Content: b.Text, Role: "assistant"})
			}
		case llm.BlockToolUse:
			out = append(out, &functionCall{Arguments: arguments(b.Input), CallID: b.ID, Name: b.Name, Type: "function_call"})
		case llm.BlockRedactedThinking:
			if b.ID == "" {
				continue // not a reasoning item of this API
			}
			r, ok := reasoning[b.ID]
			if !ok {
				r = &reasoningItem{ID: b.ID, Summary: []reasoningSummary{}, Type: "reasoning"}
				reasoning[b.ID] = r
				out = append(out, r)
			}
			if b.Signature != "" && r.EncryptedContent == "" {
				r.EncryptedContent = b.Signature
			}
			if b.Thinking != "" {
				r.Summary = append(r.Summary, reasoningSummary{Text: b.Thinking, Type: "summary_text"})
			}
		case llm.BlockThinking:
		default:
			return nil, fmt.Errorf("block type %q in an assistant message", b.Type)
		}
	}
	if c.store {
		return out, nil
	}
	// Not stored, a reasoning item without its encrypted content names
	// nothing the API has: it would refuse the request.
	kept := out[:from]
	for _, it := range out[from:] {
		if r, ok := it.(*reasoningItem); !ok || r.EncryptedContent != "" {
			kept = append(kept, it)
		}
	}
	return kept, nil
}
