package bedrock

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/orca-agent/orca/llm"
)

// rawInputKey is the key under which a tool input that is not a JSON
// object is quoted, as llm/anthropic does: Converse takes only objects.
const rawInputKey = "_raw_input"

// noOutput stands for a tool result that is empty: Converse refuses blank
// text, and an empty result of a failed call.
const noOutput = "(no output)"

// input translates req into a ConverseStream request (see the package
// documentation). It does not modify req.
func (c *Client) input(req *llm.Request) (*bedrockruntime.ConverseStreamInput, error) {
	model := cmpOr(req.Model, c.model)
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.maxTokens
	}
	claude := isClaude(model)
	cache := claude && caches(model)
	in := &bedrockruntime.ConverseStreamInput{ModelId: aws.String(model)}
	if claude {
		switch t := c.thinking; {
		case t.adaptive:
			in.AdditionalModelRequestFields = document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "adaptive"}})
		case t.budget > 0:
			in.AdditionalModelRequestFields = document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": t.budget}})
			maxTokens += t.budget
		}
	}
	in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(maxTokens, math.MaxInt32)))}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
		if cache {
			in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: cachePoint()})
		}
	}
	if len(req.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		for _, t := range req.Tools {
			schema := bytes.TrimSpace(t.InputSchema)
			if len(schema) == 0 {
				schema = []byte(`{"type":"object","properties":{}}`)
			}
			doc, err := jsonDocument(schema)
			if err != nil {
				return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("tool %q: the input schema: %v", t.Name, err)}
			}
			spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: doc}}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		if cache {
			tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: cachePoint()})
		}
		in.ToolConfig = tc
	}
	// The cache-sensitive prefix ends with the message before the newest
	// user turn, as in llm/anthropic.
	breakpoint := -1
	if cache {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == llm.RoleUser {
				breakpoint = i - 1
				break
			}
		}
	}
	t := translator{textual: len(req.Tools) == 0, names: map[string]bool{}}
	for i, m := range req.Messages {
		var role types.ConversationRole
		switch m.Role {
		case llm.RoleUser:
			role = types.ConversationRoleUser
		case llm.RoleAssistant:
			role = types.ConversationRoleAssistant
		default:
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
		blocks, err := t.blocks(m)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Message: fmt.Sprintf("message %d: %v", i, err)}
		}
		if i == breakpoint {
			blocks = withCachePoint(blocks)
		}
		if len(blocks) == 0 {
			continue // Converse refuses a message without content
		}
		if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == role {
			// Converse wants the roles to alternate.
			in.Messages[n-1].Content = append(in.Messages[n-1].Content, blocks...)
			continue
		}
		in.Messages = append(in.Messages, types.Message{Role: role, Content: blocks})
	}
	return in, nil
}

// isClaude reports whether model, an id or an ARN, is one of Anthropic's.
func isClaude(model string) bool {
	return strings.Contains(strings.ToLower(model), "anthropic.claude")
}

// caches reports whether a Claude model takes cache points: all but the
// Claude 3 models, Claude 3.5 Sonnet and the older ones (Bedrock's prompt
// caching came with Claude 3.5 Haiku and 3.7 Sonnet).
func caches(model string) bool {
	m := strings.ToLower(model)
	for _, old := range []string{"claude-3-haiku", "claude-3-sonnet", "claude-3-opus", "claude-3-5-sonnet", "claude-v2", "claude-instant"} {
		if strings.Contains(m, old) {
			return false
		}
	}
	return true
}

func cachePoint() types.CachePointBlock {
	return types.CachePointBlock{Type: types.CachePointTypeDefault}
}

// withCachePoint puts a cache point after the last block that can carry
// one (not reasoning, which Claude does not cache on its own).
func withCachePoint(blocks []types.ContentBlock) []types.ContentBlock {
	for j := len(blocks) - 1; j >= 0; j-- {
		if _, ok := blocks[j].(*types.ContentBlockMemberReasoningContent); ok {
			continue
		}
		out := make([]types.ContentBlock, 0, len(blocks)+1)
		out = append(out, blocks[:j+1]...)
		out = append(out, &types.ContentBlockMemberCachePoint{Value: cachePoint()})
		return append(out, blocks[j+1:]...)
	}
	return blocks
}

// translator translates the blocks of a request's messages.
type translator struct {
	// textual: the request has no tools, so its tool blocks go as text
	// (Converse refuses toolUse and toolResult blocks without a tool
	// configuration, and an empty one).
	textual bool
	// names: the documents' names so far; each must be its own.
	names map[string]bool
}

func (t *translator) blocks(m llm.Message) ([]types.ContentBlock, error) {
	var out []types.ContentBlock
	assistant := m.Role == llm.RoleAssistant
	for i := 0; i < len(m.Content); i++ {
		b := m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if b.Text == "" {
				continue // Converse refuses blank text
			}
			out = append(out, &types.ContentBlockMemberText{Value: b.Text})
		case llm.BlockThinking:
			// Unsigned reasoning is not Claude's, and other models have
			// no use for their own.
			if !assistant || b.Signature == "" {
				continue
			}
			out = append(out, &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
				Value: types.ReasoningTextBlock{Text: aws.String(b.Thinking), Signature: aws.String(b.Signature)},
			}})
		case llm.BlockRedactedThinking:
			data, err := base64.StdEncoding.DecodeString(b.Signature)
			if !assistant || b.Signature == "" || err != nil {
				continue // not Bedrock's: another provider's stays with it
			}
			out = append(out, &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: data}})
		case llm.BlockToolUse:
			if t.textual {
				out = append(out, &types.ContentBlockMemberText{Value: fmt.Sprintf("[called tool %s (call %s) with input %s]", b.Name, b.ID, bytes.TrimSpace(b.Input))})
				continue
			}
			out = append(out, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(toolUseID(b.ID)), Name: aws.String(b.Name), Input: toolInput(b.Input),
			}})
		case llm.BlockToolResult:
			parts := llm.ResultMedia(m.Content, i)
			i += len(parts)
			text := resultText(b, parts)
			if t.textual {
				what := "result"
				if b.IsError {
					what = "error"
				}
				out = append(out, &types.ContentBlockMemberText{Value: fmt.Sprintf("[%s of tool call %s]\n%s", what, b.ToolUseID, text)})
				for _, p := range parts {
					c, err := t.media(&p)
					if err != nil {
						return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
					}
					out = append(out, c)
				}
				continue
			}
			r := types.ToolResultBlock{ToolUseId: aws.String(toolUseID(b.ToolUseID)),
				Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}}}
			if b.IsError {
				r.Status = types.ToolResultStatusError
			}
			for _, p := range parts {
				c, err := t.media(&p)
				if err != nil {
					return nil, fmt.Errorf("the result of tool call %q: %w", b.ToolUseID, err)
				}
				switch c := c.(type) {
				case *types.ContentBlockMemberImage:
					r.Content = append(r.Content, &types.ToolResultContentBlockMemberImage{Value: c.Value})
				case *types.ContentBlockMemberDocument:
					r.Content = append(r.Content, &types.ToolResultContentBlockMemberDocument{Value: c.Value})
				}
			}
			out = append(out, &types.ContentBlockMemberToolResult{Value: r})
		case llm.BlockImage, llm.BlockDocument:
			c, err := t.media(&b)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		default:
			return nil, fmt.Errorf("block type %q", b.Type)
		}
	}
	return out, nil
}

// media returns an image or a PDF as Converse takes it: its bytes in an
// image or a document block.
func (t *translator) media(b *llm.Block) (types.ContentBlock, error) {
	md := b.Media
	if md == nil || len(md.Data) == 0 {
		return nil, fmt.Errorf("an %s block without its bytes (%s)", b.Type, md)
	}
	var format types.ImageFormat
	switch md.MediaType {
	case llm.MediaPDF:
		return &types.ContentBlockMemberDocument{Value: types.DocumentBlock{
			Format: types.DocumentFormatPdf, Name: aws.String(t.documentName(md.Name)), Source: &types.DocumentSourceMemberBytes{Value: md.Data},
		}}, nil
	case llm.MediaPNG:
		format = types.ImageFormatPng
	case llm.MediaJPEG:
		format = types.ImageFormatJpeg
	case llm.MediaGIF:
		format = types.ImageFormatGif
	case llm.MediaWebP:
		format = types.ImageFormatWebp
	default:
		return nil, fmt.Errorf("an %s block of type %q, which Converse does not take", b.Type, md.MediaType)
	}
	return &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: format, Source: &types.ImageSourceMemberBytes{Value: md.Data}}}, nil
}

// maxDocumentName is the longest name Converse takes for a document.
const maxDocumentName = 200

// documentName makes a document's name from the file's, as Converse takes
// it — letters and digits, single spaces, hyphens, parentheses and
// square brackets — and its own in the request: "report (2)" for the
// second report.pdf. The request's order decides it, so that it does not
// change from one request of a conversation to the next (the cache).
func (t *translator) documentName(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-()[]", r):
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), " "):
			b.WriteByte(' ')
		}
	}
	stem := strings.TrimSpace(b.String())
	stem = strings.TrimSpace(stem[:min(len(stem), maxDocumentName-10)])
	if stem == "" {
		stem = "document"
	}
	name := stem
	for n := 2; t.names[name]; n++ {
		name = stem + " (" + strconv.Itoa(n) + ")"
	}
	t.names[name] = true
	return name
}

// toolUseID returns id as Converse takes a tool use's id (1 to 64 of
// letters, digits, _ . : -): itself, or, for another provider's id that
// is not one, a name made from its digest (the same for the use and its
// result).
func toolUseID(id string) string {
	ok := id != "" && len(id) <= 64
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.:-", c) >= 0
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "orca_" + hex.EncodeToString(sum[:16])
}

// toolInput returns a tool use's input as Converse takes it: a JSON
// object, the input itself when it is one, else an object that quotes it.
func toolInput(in json.RawMessage) document.Interface {
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 {
		trimmed = []byte(`{}`)
	}
	if trimmed[0] == '{' {
		if doc, err := jsonDocument(trimmed); err == nil {
			return doc
		}
	}
	return document.NewLazyDocument(map[string]any{rawInputKey: string(in)})
}

// resultText is a tool result's text: its content; for a result that is
// only images and documents, a line saying what they are; for an empty
// one, noOutput.
func resultText(b llm.Block, parts []llm.Block) string {
	switch {
	case b.Content != "":
		return b.Content
	case len(parts) > 0:
		return llm.PartsText(parts)
	}
	return noOutput
}

// jsonDocument returns raw JSON as a document the SDK writes back as the
// same JSON, numbers as they were written (the SDK's encoder would write
// a json.RawMessage as base64, and a float64 may round).
func jsonDocument(raw []byte) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	doc := document.NewLazyDocument(numbers(v))
	if _, err := doc.MarshalSmithyDocument(); err != nil {
		return nil, err
	}
	return doc, nil
}

// numbers replaces the json.Numbers in v by the SDK's.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return smithydocument.Number(x)
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
