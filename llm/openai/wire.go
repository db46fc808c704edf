package openai

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/internal/reqbody"
)

// The messages of a request, as Chat Completions takes them. body writes
// them with encoding/json over the types below, which mirror the SDK's
// param types field for field, in the SDK's order: the bytes sent are
// those the SDK would send (request_test.go compares them). The SDK's
// reflection-based encoder took milliseconds a call for a long
// conversation.

type textMessage struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

type partsMessage struct {
	Content []any  `json:"content"`
	Role    string `json:"role"`
}

type toolMessage struct {
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	Role       string `json:"role"`
}

type assistantMessage struct {
	Content   *string    `json:"content,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	Role      string     `json:"role"`
	// Reasoning is what a server that streams reasoning_content wants
	// back (fieldReasoningContent).
	Reasoning *string `json:"reasoning_content,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Function functionCall `json:"function"`
	Type     string       `json:"type"`
}

type functionCall struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

type textPart struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

type imagePart struct {
	ImageURL imageURL `json:"image_url"`
	Type     string   `json:"type"`
}

type imageURL struct {
	URL string `json:"url"`
}

type filePart struct {
	File fileData `json:"file"`
	Type string   `json:"type"`
}

type fileData struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
}

// body is the request's JSON: p's, with the system prompt and the
// messages of req (none, as the SDK sends none, when there are none).
func (c *Client) body(p sdk.ChatCompletionNewParams, req *llm.Request) ([]byte, error) {
	msgs := make([]any, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, &textMessage{Content: req.System, Role: "system"})
	}
	var err error
	for i, m := range req.Messages {
		if msgs, err = appendMessages(msgs, m); err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
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

// appendMessages appends the API's messages for one orca message.
func appendMessages(out []any, m llm.Message) ([]any, error) {
	var texts []string
	switch m.Role {
	case llm.RoleUser:
		// A tool message carries text only: what tool results show
		// (images, PDFs) goes in the user message after them, each
		// result's media after a line naming its call.
		var shown, parts []any
		media := false
		for i := 0; i < len(m.Content); i++ {
			b := &m.Content[i]
			switch b.Type {
			case llm.BlockText:
				if b.Text != "" {
					texts = append(texts, b.Text)
					parts = append(parts, &textPart{Text: b.Text, Type: "text"})
				}
			case llm.BlockImage, llm.BlockDocument:
				p, err := wirePart(b)
				if err != nil {
					return nil, err
				}
				parts = append(parts, p)
				media = true
			case llm.BlockToolResult:
				content := b.Content
				if rparts := llm.ResultMedia(m.Content, i); len(rparts) > 0 {
					i += len(rparts)
					content = strings.TrimSpace(content + "\n(What it shows follows in the next user message: " + strings.ReplaceAll(llm.PartsText(rparts), "\n", " ") + ")")
					shown = append(shown, &textPart{Text: fmt.Sprintf("The result of tool call %s shows:", b.ToolUseID), Type: "text"})
					for k := range rparts {
						mp, err := wirePart(&rparts[k])
						if err != nil {
							return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
						}
						shown = append(shown, mp)
					}
				}
				if b.IsError {
					content = ErrorPrefix + content
				}
				out = append(out, &toolMessage{Content: content, ToolCallID: b.ToolUseID, Role: "tool"})
			case llm.BlockThinking, llm.BlockRedactedThinking:
			default:
				return nil, fmt.Errorf("block type %q in a user message", b.Type)
			}
		}
		switch {
		case len(shown) > 0 || media:
			out = append(out, &partsMessage{Content: append(shown, parts...), Role: "user"})
		case len(texts) == 0:
		case len(texts) == 1:
			out = append(out, &textMessage{Content: texts[0], Role: "user"})
		default:
			out = append(out, &partsMessage{Content: parts, Role: "user"})
		}
		return out, nil
	case llm.RoleAssistant:
		a := &assistantMessage{Role: "assistant"}
		var reasoning []string
		for i := range m.Content {
			b := &m.Content[i]
			switch b.Type {
			case llm.BlockText:
				texts = append(texts, b.Text)
			case llm.BlockToolUse:
				a.ToolCalls = append(a.ToolCalls, toolCall{ID: b.ID, Function: functionCall{Arguments: arguments(b.Input), Name: b.Name}, Type: "function"})
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
			a.Content = &text
		}
		if a.Content == nil && len(a.ToolCalls) == 0 {
			return out, nil // nothing the API could take
		}
		if reasoning != nil {
			r := strings.Join(reasoning, "")
			a.Reasoning = &r
		}
		return append(out, a), nil
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

// wirePart returns an image or a PDF as a content part of a user
// message: an image_url part with a data URL, a file part with the PDF's
// data URL and its name.
func wirePart(b *llm.Block) (any, error) {
	m := b.Media
	if m == nil || len(m.Data) == 0 {
		return nil, fmt.Errorf("an %s block without its bytes (%s)", b.Type, m)
	}
	url := "data:" + m.MediaType + ";base64," + base64.StdEncoding.EncodeToString(m.Data)
	switch {
	case b.Type == llm.BlockDocument && m.MediaType == llm.MediaPDF:
		name := "document.pdf"
		if m.Name != "" {
			name = filepath.Base(m.Name)
		}
		return &filePart{File: fileData{FileData: url, Filename: name}, Type: "file"}, nil
	case b.Type == llm.BlockImage:
		switch m.MediaType {
		case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP:
			return &imagePart{ImageURL: imageURL{URL: url}, Type: "image_url"}, nil
		}
	}
	return nil, fmt.Errorf("an %s block of type %q, which the API does not take", b.Type, m.MediaType)
}
