package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// The messages orca sends are encoded by body, not by the SDK: the SDK's
// own encoding of the same messages (the translation orca used before,
// below) is the reference they must equal byte for byte, for every kind
// of block, and the errors; the rest of the request is the SDK's.
func TestMessagesEncodeAsTheSDKDoes(t *testing.T) {
	png := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG fake"), Name: "/tmp/a.png"}
	jpeg := &llm.Media{MediaType: llm.MediaJPEG, Data: []byte{0xff, 0xd8, 0xff}}
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4"), Name: "docs/spec.pdf"}
	unnamed := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.7")}
	user := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: b} }
	said := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: b} }
	text, call, result := llm.TextBlock, llm.ToolUseBlock, llm.ToolResultBlock
	reasoning := func(s string) llm.Block {
		return llm.Block{Type: llm.BlockThinking, Name: fieldReasoningContent, Thinking: s}
	}
	for _, c := range []struct {
		name   string
		system string
		msgs   []llm.Message
	}{
		{"text", "be <brief> & kind", []llm.Message{user(text("hello <b>&</b> — 日本語 \u2028 \x01")), said(text("hi"), text(" there")), user(text("a"), text("b"))}},
		{"bytes that are not UTF-8", "", []llm.Message{user(text("bad \xff\xfe utf8 \x00")), said(call("c1", "Write", json.RawMessage("{\"content\": \"\xff\"}"))),
			user(result("c1", "read \xc3\x28 back", false))}},
		{"empty text left out", "", []llm.Message{user(text(""), text("x")), said(text("")), user(text("")), said(text("y"))}},
		{"calls and results", "", []llm.Message{
			user(text("read")),
			said(text("I'll read."), call("c1", "Read", json.RawMessage(` {"file_path": "a.txt"} `)),
				call("c2", "Bash", json.RawMessage(`not json`)), call("c3", "Glob", nil), call("c4", "X", json.RawMessage(`[1]`))),
			user(result("c1", "     1\tdata\n", false), result("c2", "", true), result("c3", "error: <none>", true), result("c4", "", false)),
		}},
		{"results showing media", "", []llm.Message{
			user(text("look")),
			said(call("c1", "Read", json.RawMessage(`{"file_path":"a.png"}`)), call("c2", "Read", json.RawMessage(`{"file_path":"spec.pdf"}`))),
			user(result("c1", "", false), llm.ResultMediaBlock("c1", png), result("c2", "the spec", true), llm.ResultMediaBlock("c2", pdf),
				llm.ResultMediaBlock("c2", jpeg), text("and this")),
		}},
		{"media in a prompt", "", []llm.Message{user(text("what is this"), llm.ImageBlock(png), llm.ImageBlock(jpeg), llm.DocumentBlock(pdf), llm.DocumentBlock(unnamed)), user(llm.ImageBlock(png))}},
		{"reasoning sent back", "", []llm.Message{user(text("q")), said(reasoning("let me "), reasoning("see"), llm.Block{Type: llm.BlockThinking, Name: fieldReasoningContent, Thinking: "signed", Signature: "s"},
			llm.Block{Type: llm.BlockThinking, Thinking: "other"}, llm.Block{Type: llm.BlockRedactedThinking, Signature: "x"}, text("answer")),
			said(reasoning("only reasoning")), said(reasoning(""), call("c1", "Read", nil))}},
		{"none", "", nil},
		{"unknown block", "", []llm.Message{user(text("q"), llm.Block{Type: "video"})}},
		{"unknown block said", "", []llm.Message{said(text("q"), llm.Block{Type: llm.BlockToolResult})}},
		{"media without bytes", "", []llm.Message{user(llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:00"}))}},
		{"a document the API does not take", "", []llm.Message{user(llm.DocumentBlock(&llm.Media{MediaType: "text/csv", Data: []byte("a,b")}))}},
		{"a result's media without bytes", "", []llm.Message{said(call("c1", "Read", nil)), user(result("c1", "", false), llm.ResultMediaBlock("c1", &llm.Media{MediaType: llm.MediaPNG}))}},
		{"unknown role", "", []llm.Message{user(text("q")), {Role: "system", Content: []llm.Block{text("s")}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(APIKey("k"), Model("gpt-test"))
			if err != nil {
				t.Fatal(err)
			}
			req := &llm.Request{System: c.system, Messages: c.msgs, Tools: []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
			p, err := cl.params(req)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := sdkBody(p, req)
			got, gotErr := cl.body(p, req)
			llmtest.SameBody(t, "messages", got, gotErr, want, wantErr)
		})
	}
}

// A long conversation (225 calls and their results) as the SDK encoded it
// and as orca does.
func BenchmarkEncodeMessages(b *testing.B) {
	c, err := New(APIKey("k"), Model("gpt-test"))
	if err != nil {
		b.Fatal(err)
	}
	var msgs []llm.Message
	for i := range 225 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(id, "Read", json.RawMessage(`{"file_path":"data.txt"}`))}},
			llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock(id, strings.Repeat("     1\tdata\n", 4), false)}})
	}
	req := &llm.Request{System: "be brief", Messages: msgs}
	p, err := c.params(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			if _, err := sdkBody(p, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("orca", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.body(p, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sdkBody is the request as orca had the SDK encode it before body.
func sdkBody(p sdk.ChatCompletionNewParams, req *llm.Request) ([]byte, error) {
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		p.Messages = append(p.Messages, msgs...)
	}
	return json.Marshal(p)
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
				p, err := sdkMediaPart(&b)
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
						mp, err := sdkMediaPart(&p)
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

// sdkMediaPart returns an image or a PDF as a content part of a user
// message: an image_url part with a data URL, a file part with the PDF's
// data URL and its name.
func sdkMediaPart(b *llm.Block) (sdk.ChatCompletionContentPartUnionParam, error) {
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
