package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/orca-agent/orca/llm"
)

// The messages orca sends are encoded by body (wireMessages), not by the SDK:
// the SDK's own encoding of the same messages (the translation orca used
// before, below) is the reference they must equal, value for value, for
// every kind of block, the cache breakpoint on each kind, and the errors —
// byte for byte.
func TestMessagesEncodeAsTheSDKDoes(t *testing.T) {
	png := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG fake"), Name: "/tmp/a.png"}
	jpeg := &llm.Media{MediaType: llm.MediaJPEG, Data: []byte{0xff, 0xd8, 0xff}}
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4"), Name: "docs/spec.pdf"}
	user := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: b} }
	said := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: b} }
	text, call := llm.TextBlock, llm.ToolUseBlock
	result := llm.ToolResultBlock
	thinking := llm.Block{Type: llm.BlockThinking, Thinking: "let me see <a> & \"b\"", Signature: "sig=="}
	for _, c := range []struct {
		name string
		msgs []llm.Message
	}{
		{"text", []llm.Message{user(text("hello <b>&</b> — 日本語 \u2028 \x01"))}},
		{"bytes that are not UTF-8", []llm.Message{user(text("bad \xff\xfe utf8 \x00")), said(call("toolu_1", "Write", json.RawMessage("{\"content\": \"\xff\"}"))),
			user(result("toolu_1", "read \xc3\x28 back", false))}},
		{"empty text left out", []llm.Message{user(text(""), text("x")), said(text("")), user(text("y"))}},
		{"calls and results", []llm.Message{
			user(text("read")),
			said(text("I'll read."), call("toolu_1", "Read", json.RawMessage(` {"file_path": "a.txt"} `)),
				call("toolu_2", "Bash", json.RawMessage(`not json`)), call("toolu_3", "Glob", nil), call("toolu_4", "X", json.RawMessage(`[1]`))),
			user(result("toolu_1", "     1\tdata\n", false), result("toolu_2", "", true), result("toolu_3", "error: <none>", true), result("toolu_4", "", false)),
		}},
		{"results showing media", []llm.Message{
			user(text("look")),
			said(call("toolu_1", "Read", json.RawMessage(`{"file_path":"a.png"}`)), call("toolu_2", "Read", json.RawMessage(`{"file_path":"spec.pdf"}`))),
			user(result("toolu_1", "", false), llm.ResultMediaBlock("toolu_1", png), result("toolu_2", "the spec", false), llm.ResultMediaBlock("toolu_2", pdf),
				llm.ResultMediaBlock("toolu_2", jpeg)),
			said(text("seen")),
			user(text("and?")),
		}},
		{"media in a prompt", []llm.Message{user(text("what is this"), llm.ImageBlock(png), llm.ImageBlock(jpeg), llm.DocumentBlock(pdf)), said(text("a png")), user(llm.ImageBlock(png))}},
		{"thinking", []llm.Message{user(text("q")), said(thinking, llm.Block{Type: llm.BlockThinking, Thinking: "unsigned"},
			llm.Block{Type: llm.BlockRedactedThinking, Signature: "opaque"}, llm.Block{Type: llm.BlockRedactedThinking},
			llm.Block{Type: llm.BlockThinking, Signature: "s2"}, call("toolu_1", "Read", json.RawMessage(`{}`))), user(result("toolu_1", "ok", false))}},
		{"breakpoint on a call", []llm.Message{user(text("q")), said(text("a"), call("toolu_1", "Read", json.RawMessage(`{}`))), user(result("toolu_1", "ok", false))}},
		{"breakpoint past thinking", []llm.Message{user(text("q")), said(text("a"), thinking), user(text("again"))}},
		{"breakpoint on a document", []llm.Message{user(llm.ImageBlock(png)), said(text("seen")), user(text("q"), llm.DocumentBlock(pdf)), user(text("last"))}},
		{"breakpoint on an image", []llm.Message{user(text("q"), llm.ImageBlock(jpeg)), user(text("last"))}},
		{"no breakpoint past thinking alone", []llm.Message{user(text("q")), said(thinking), user(text("last"))}},
		{"breakpoint on a result", []llm.Message{user(text("q")), said(call("toolu_1", "Read", json.RawMessage(`{}`))), user(result("toolu_1", "r", false)), said(text("")), user(text("z"))}},
		{"no user message", []llm.Message{said(text("a"))}},
		{"none", nil},
		{"unknown block", []llm.Message{user(text("q"), llm.Block{Type: "video"})}},
		{"media without bytes", []llm.Message{user(llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:00"}))}},
		{"a document the API does not take", []llm.Message{user(llm.DocumentBlock(&llm.Media{MediaType: "text/csv", Data: []byte("a,b")}))}},
		{"an image of another type", []llm.Message{user(llm.ImageBlock(&llm.Media{MediaType: "image/bmp", Data: []byte("BM")}))}},
		{"a result's media without bytes", []llm.Message{said(call("toolu_1", "Read", nil)), user(result("toolu_1", "", false), llm.ResultMediaBlock("toolu_1", &llm.Media{MediaType: llm.MediaPNG}))}},
		{"unknown role", []llm.Message{user(text("q")), {Role: "system", Content: []llm.Block{text("s")}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, wantErr := sdkMessages(c.msgs)
			got, gotErr := encodeMessages(c.msgs)
			if (wantErr != nil) != (gotErr != nil) || (wantErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Fatalf("error %v, the SDK's way %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if string(got) != string(want) {
				t.Errorf("encoded\n%s\nthe SDK encodes\n%s", got, want)
			}
		})
	}
}

// The whole body is the SDK's for everything but the messages, which it
// then carries: one JSON object.
func TestRequestBody(t *testing.T) {
	c, err := New(APIKey("k"), Model("claude-test"), MaxTokens(100))
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}}},
		Tools: []llm.ToolDefinition{{Name: "Read", Description: "reads", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	p, err := c.params(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.body(p, req)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	p.Messages = []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}
	b, _ := json.Marshal(p)
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body\n%s\nthe SDK's\n%s", body, b)
	}
}

// A long conversation (225 calls and their results) as the SDK encoded it
// and as orca does.
func BenchmarkEncodeMessages(b *testing.B) {
	var msgs []llm.Message
	for i := range 225 {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(id, "Read", json.RawMessage(`{"file_path":"data.txt"}`))}},
			llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock(id, strings.Repeat("     1\tdata\n", 4), false)}})
	}
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			if _, err := sdkMessages(msgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("orca", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeMessages(msgs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sdkMessages is how orca translated messages for the SDK before
// wireMessages, and encodes them as the SDK does.
func sdkMessages(msgs []llm.Message) ([]byte, error) {
	breakpoint := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			breakpoint = i - 1
			break
		}
	}
	out := []sdk.MessageParam{}
	for i, m := range msgs {
		blocks, err := contentBlocks(m, i == breakpoint)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		if len(blocks) == 0 {
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			out = append(out, sdk.NewUserMessage(blocks...))
		case llm.RoleAssistant:
			out = append(out, sdk.NewAssistantMessage(blocks...))
		default:
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
	}
	return json.Marshal(out)
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
				c, err := sdkMediaBlock(&p)
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
			c, err := sdkMediaBlock(&b)
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

// sdkMediaBlock returns an image or document block as the API takes it: its
// bytes in base64, within the block (an image block, a PDF document).
func sdkMediaBlock(b *llm.Block) (sdk.ContentBlockParamUnion, error) {
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

// encodeMessages is the messages as body encodes them.
func encodeMessages(msgs []llm.Message) ([]byte, error) {
	w, err := wireMessages(msgs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}
