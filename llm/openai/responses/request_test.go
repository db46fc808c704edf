package responses

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// The input orca sends is encoded by body, not by the SDK: the SDK's own
// encoding of the same messages (the translation orca used before, below)
// is the reference it must equal byte for byte, for every kind of block,
// stored or not, and the errors; the rest of the request is the SDK's.
func TestInputEncodesAsTheSDKDoes(t *testing.T) {
	png := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG fake"), Name: "/tmp/a.png"}
	jpeg := &llm.Media{MediaType: llm.MediaJPEG, Data: []byte{0xff, 0xd8, 0xff}}
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4"), Name: "docs/spec.pdf"}
	user := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: b} }
	said := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: b} }
	text, call, result := llm.TextBlock, llm.ToolUseBlock, llm.ToolResultBlock
	item := func(id, summary, encrypted string) llm.Block {
		return llm.Block{Type: llm.BlockRedactedThinking, ID: id, Thinking: summary, Signature: encrypted}
	}
	for _, c := range []struct {
		name string
		msgs []llm.Message
	}{
		{"text", []llm.Message{user(text("hello <b>&</b> — 日本語 \u2028 \x01")), said(text("hi"), text(""), text(" there")), user(text("a"), text("b"))}},
		{"bytes that are not UTF-8", []llm.Message{user(text("bad \xff\xfe utf8 \x00")), said(call("c1", "Write", json.RawMessage("{\"content\": \"\xff\"}"))),
			user(result("c1", "read \xc3\x28 back", false))}},
		{"calls and results", []llm.Message{
			user(text("read")),
			said(text("I'll read."), call("c1", "Read", json.RawMessage(` {"file_path": "a.txt"} `)),
				call("c2", "Bash", json.RawMessage(`not json`)), call("c3", "Glob", nil), call("c4", "X", json.RawMessage(`[1]`))),
			user(result("c1", "     1\tdata\n", false), result("c2", "", true), result("c3", "error: <none>", true), result("c4", "", false), text("go on")),
		}},
		{"results showing media", []llm.Message{
			said(call("c1", "Read", nil), call("c2", "Read", nil)),
			user(result("c1", "", false), llm.ResultMediaBlock("c1", png), result("c2", "the spec", true), llm.ResultMediaBlock("c2", pdf),
				llm.ResultMediaBlock("c2", jpeg), text("and this")),
		}},
		{"media in a prompt", []llm.Message{user(text("what is this"), llm.ImageBlock(png), llm.ImageBlock(jpeg), llm.DocumentBlock(pdf)), user(llm.ImageBlock(png))}},
		{"reasoning items", []llm.Message{user(text("q")), said(item("rs_1", "first", "enc1"), item("rs_1", "second", "enc-later"), item("rs_2", "", ""),
			item("", "not this API's", "x"), llm.Block{Type: llm.BlockThinking, Thinking: "other"}, item("rs_3", "", "enc3"), text("answer"), call("c1", "Read", nil))}},
		{"none", nil},
		{"unknown block", []llm.Message{user(text("q"), llm.Block{Type: "video"})}},
		{"unknown block said", []llm.Message{said(text("q"), llm.Block{Type: llm.BlockToolResult})}},
		{"media without bytes", []llm.Message{user(llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:00"}))}},
		{"a document the API does not take", []llm.Message{user(llm.DocumentBlock(&llm.Media{MediaType: "text/csv", Data: []byte("a,b")}))}},
		{"a result's media without bytes", []llm.Message{said(call("c1", "Read", nil)), user(result("c1", "", false), llm.ResultMediaBlock("c1", &llm.Media{MediaType: llm.MediaPNG}))}},
		{"unknown role", []llm.Message{user(text("q")), {Role: "system", Content: []llm.Block{text("s")}}}},
	} {
		for _, stored := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stored=%v", c.name, stored), func(t *testing.T) {
				cl := &Client{model: "gpt-test", maxTokens: 100, store: stored}
				req := &llm.Request{System: "be brief", Messages: c.msgs}
				p, err := cl.params(req)
				if err != nil {
					t.Fatal(err)
				}
				want, wantErr := cl.sdkBody(p, req)
				got, gotErr := cl.body(p, req)
				llmtest.SameBody(t, "input", got, gotErr, want, wantErr)
			})
		}
	}
}

// A long conversation (225 calls and their results) as the SDK encoded it
// and as orca does.
func BenchmarkEncodeInput(b *testing.B) {
	c := &Client{model: "gpt-test", maxTokens: 100}
	var msgs []llm.Message
	for i := range 225 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(id, "Read", json.RawMessage(`{"file_path":"data.txt"}`))}},
			llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock(id, strings.Repeat("     1\tdata\n", 4), false)}})
	}
	req := &llm.Request{Messages: msgs}
	p, err := c.params(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.sdkBody(p, req); err != nil {
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
func (c *Client) sdkBody(p responses.ResponseNewParams, req *llm.Request) ([]byte, error) {
	input := responses.ResponseInputParam{}
	for i, m := range req.Messages {
		items, err := c.items(m)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		input = append(input, items...)
	}
	p.Input.OfInputItemList = input
	return json.Marshal(p)
}

// items translates one orca message into the API's input items.
func (c *Client) items(m llm.Message) (responses.ResponseInputParam, error) {
	switch m.Role {
	case llm.RoleUser:
		return userItems(m)
	case llm.RoleAssistant:
		return c.assistantItems(m)
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

// userItems translates a user message: its tool results as
// function_call_output items, then its text and media as a user message.
func userItems(m llm.Message) (responses.ResponseInputParam, error) {
	var out responses.ResponseInputParam
	var parts responses.ResponseInputMessageContentListParam
	for i := 0; i < len(m.Content); i++ {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: b.Text}})
			}
		case llm.BlockImage, llm.BlockDocument:
			url, name, err := dataURL(b)
			if err != nil {
				return nil, err
			}
			if name != "" {
				parts = append(parts, responses.ResponseInputContentUnionParam{OfInputFile: &responses.ResponseInputFileParam{FileData: param.NewOpt(url), Filename: param.NewOpt(name)}})
			} else {
				parts = append(parts, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{ImageURL: param.NewOpt(url), Detail: responses.ResponseInputImageDetailAuto}})
			}
		case llm.BlockToolResult:
			content := b.Content
			if b.IsError {
				content = ErrorPrefix + content
			}
			item := responses.ResponseInputItemFunctionCallOutputParam{CallID: param.NewOpt(b.ToolUseID)}
			media := llm.ResultMedia(m.Content, i)
			if len(media) == 0 {
				item.Output.OfString = param.NewOpt(content)
			} else {
				// The output takes content parts: the result's text, then
				// what it shows.
				list := responses.ResponseFunctionCallOutputItemListParam{}
				if content != "" {
					list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: content}})
				}
				for j := range media {
					url, name, err := dataURL(&media[j])
					if err != nil {
						return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
					}
					if name != "" {
						list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputFile: &responses.ResponseInputFileContentParam{FileData: param.NewOpt(url), Filename: param.NewOpt(name)}})
					} else {
						list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: param.NewOpt(url), Detail: responses.ResponseInputImageContentDetailAuto}})
					}
				}
				item.Output.OfResponseFunctionCallOutputItemArray = list
				i += len(media)
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &item})
		case llm.BlockThinking, llm.BlockRedactedThinking:
		default:
			return nil, fmt.Errorf("block type %q in a user message", b.Type)
		}
	}
	if len(parts) > 0 {
		out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: parts},
		}})
	}
	return out, nil
}

// assistantItems translates an assistant message, block by block, in its
// order: text as assistant messages, tool uses as function calls, this
// API's reasoning blocks (redacted_thinking with an ID) as reasoning
// items, the blocks of one item merged back into it.
func (c *Client) assistantItems(m llm.Message) (responses.ResponseInputParam, error) {
	var out responses.ResponseInputParam
	reasoning := map[string]*responses.ResponseReasoningItemParam{}
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
					Role: responses.EasyInputMessageRoleAssistant, Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(b.Text)},
				}})
			}
		case llm.BlockToolUse:
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
				CallID: b.ID, Name: b.Name, Arguments: arguments(b.Input),
			}})
		case llm.BlockRedactedThinking:
			if b.ID == "" {
				continue // not a reasoning item of this API
			}
			r, ok := reasoning[b.ID]
			if !ok {
				r = &responses.ResponseReasoningItemParam{ID: b.ID, Summary: []responses.ResponseReasoningItemSummaryParam{}}
				reasoning[b.ID] = r
				out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: r})
			}
			if b.Signature != "" && !r.EncryptedContent.Valid() {
				r.EncryptedContent = param.NewOpt(b.Signature)
			}
			if b.Thinking != "" {
				r.Summary = append(r.Summary, responses.ResponseReasoningItemSummaryParam{Text: b.Thinking})
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
	kept := out[:0]
	for _, it := range out {
		if r := it.OfReasoning; r == nil || r.EncryptedContent.Valid() {
			kept = append(kept, it)
		}
	}
	return kept, nil
}
