// Package llm defines what orca says to a language model and what it hears
// back: messages made of content blocks, tool definitions, usage, stop
// reasons, the streaming Client interface every provider implements, and the
// typed errors callers branch on.
//
// The package imports no provider SDK; providers live in sub-packages
// (llm/script, llm/anthropic, llm/openai) and plug in through Client.
package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// Role says who wrote a message.
type Role string

// The two roles of a conversation. The system prompt is not a message; it is
// Request.System.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType names the kind of a content block.
type BlockType string

// The content block kinds.
const (
	BlockText       BlockType = "text"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
	// BlockThinking is the model's reasoning before it answered, as some
	// providers return it; BlockRedactedThinking is reasoning the provider
	// returned encrypted. Both belong to the assistant message that carried
	// them and go back to the provider unchanged, in place, in later
	// requests: a provider may refuse a conversation whose reasoning was
	// altered or dropped. Providers that have no use for them skip them.
	BlockThinking         BlockType = "thinking"
	BlockRedactedThinking BlockType = "redacted_thinking"
	// BlockImage and BlockDocument carry what the model is shown, not
	// told: an image (PNG, JPEG, GIF, WebP) or a document (PDF), in
	// Media. They stand in user messages: as the user's own, or, with
	// ToolUseID set, as what a tool's result showed, right after that
	// result's block.
	BlockImage    BlockType = "image"
	BlockDocument BlockType = "document"
)

// Block is one piece of a message. Which fields are meaningful depends on
// Type:
//
//   - text:        Text
//   - tool_use:    ID, Name, Input (the raw JSON the model produced, which may
//     be malformed: orca never trusts it before validation)
//   - tool_result: ToolUseID, Content, IsError; the images and documents
//     the tool gave besides its text follow it as image and document
//     blocks with its ToolUseID
//   - image, document: Media, and ToolUseID when the block is part of that
//     tool call's result (see ResultMedia)
//   - thinking:    Thinking (the reasoning, possibly summarised or empty),
//     Signature (the provider's signature over it, opaque) and Name (where
//     the provider has several kinds of reasoning, which one it is: for
//     llm/openai, the field it came in)
//   - redacted_thinking: Signature (the provider's encrypted reasoning, opaque)
type Block struct {
	Type BlockType `json:"type"`

	Text string `json:"text,omitempty"`

	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`

	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`

	Media *Media `json:"media,omitempty"`
}

// Media is an image's or a document's bytes, as the model is sent them.
// A copy in a store may hold Digest alone, the bytes kept once beside it
// (see the store's attachments); a request to a model holds Data.
type Media struct {
	// MediaType is the bytes' type: image/png, image/jpeg, image/gif,
	// image/webp, application/pdf.
	MediaType string `json:"media_type"`
	// Data are the bytes (base64 in JSON).
	Data []byte `json:"data,omitempty"`
	// Digest names the bytes: "sha256:" and their SHA-256 in hex.
	Digest string `json:"digest,omitempty"`
	// Size is the bytes' length, also when Data is left out.
	Size int64 `json:"size,omitempty"`
	// Name is where the bytes came from, for people: a file's path, "".
	Name string `json:"name,omitempty"`
	// Width and Height are an image's, in pixels (0 if unknown).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
}

// Attachment describes an image or a document shown to the model — never
// its bytes, which the session store keeps once, by Digest: what events,
// hooks and people are given of it.
type Attachment struct {
	MediaType string `json:"media_type"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Name      string `json:"name,omitempty"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
}

// Attachments describes ms (nil for none).
func Attachments(ms []*Media) []Attachment {
	var out []Attachment
	for _, m := range ms {
		if m == nil {
			continue
		}
		out = append(out, Attachment{MediaType: m.MediaType, Digest: m.Digest, Size: m.Len(), Name: m.Name, Width: m.Width, Height: m.Height})
	}
	return out
}

// The media types providers take.
const (
	MediaPNG  = "image/png"
	MediaJPEG = "image/jpeg"
	MediaGIF  = "image/gif"
	MediaWebP = "image/webp"
	MediaPDF  = "application/pdf"
)

// ResultMedia returns the media blocks that follow content[i], a tool
// result, as part of it: the image and document blocks right after it
// that carry its ToolUseID (none for a block of another kind).
func ResultMedia(content []Block, i int) []Block {
	if content[i].Type != BlockToolResult {
		return nil
	}
	j := i + 1
	for j < len(content) && content[j].Media != nil && content[j].ToolUseID == content[i].ToolUseID {
		j++
	}
	return content[i+1 : j]
}

// PartsText says what a tool result's media blocks are, for a provider
// that must have text beside them: "[image/png 30×20, 2 KB (a.png)]", one
// a line.
func PartsText(parts []Block) string {
	var b []byte
	for i, p := range parts {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, '[')
		b = append(b, p.Media.String()...)
		b = append(b, ']')
	}
	return string(b)
}

// ImageBlock returns an image block showing m.
func ImageBlock(m *Media) Block { return Block{Type: BlockImage, Media: m} }

// DocumentBlock returns a document block showing m.
func DocumentBlock(m *Media) Block { return Block{Type: BlockDocument, Media: m} }

// MediaBlock returns the block that shows m: a document for a PDF, an
// image otherwise.
func MediaBlock(m *Media) Block {
	if m.MediaType == MediaPDF {
		return DocumentBlock(m)
	}
	return ImageBlock(m)
}

// ResultMediaBlock returns the block that shows m as part of the result
// of tool call toolUseID: it follows that result's block.
func ResultMediaBlock(toolUseID string, m *Media) Block {
	b := MediaBlock(m)
	b.ToolUseID = toolUseID
	return b
}

// DigestOf names bytes as Media.Digest does: "sha256:" and their
// SHA-256 in hex.
func DigestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Len is the media's size in bytes: Size, or the length of Data when Size
// is not set.
func (m *Media) Len() int64 {
	if m.Size != 0 {
		return m.Size
	}
	return int64(len(m.Data))
}

// HasMedia reports whether m shows the model an image or a document.
func (m Message) HasMedia() bool {
	for i := range m.Content {
		if m.Content[i].Media != nil {
			return true
		}
	}
	return false
}

// Media returns the media of m's blocks, in order (the pointers m holds).
func (m Message) Media() []*Media {
	var out []*Media
	for i := range m.Content {
		if b := &m.Content[i]; b.Media != nil {
			out = append(out, b.Media)
		}
	}
	return out
}

// Equal reports whether m and n are the same media: the same type and
// digest, and the same bytes when both have them.
func (m *Media) Equal(n *Media) bool {
	if m == n {
		return true
	}
	if m == nil || n == nil {
		return false
	}
	return m.MediaType == n.MediaType && m.Digest == n.Digest && m.Size == n.Size && m.Name == n.Name &&
		m.Width == n.Width && m.Height == n.Height && bytes.Equal(m.Data, n.Data)
}

// String describes the media for people and for logs, without its bytes:
// "image/png 1200×800, 310 KB (screenshot.png)".
func (m *Media) String() string {
	if m == nil {
		return ""
	}
	size := m.Len()
	s := m.MediaType
	if m.Width > 0 && m.Height > 0 {
		s += " " + strconv.Itoa(m.Width) + "×" + strconv.Itoa(m.Height)
	}
	s += ", " + ByteSize(size)
	if m.Name != "" {
		s += " (" + m.Name + ")"
	}
	return s
}

// ByteSize says n bytes for people: "310 KB", "1.4 MB", "512 bytes".
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	case n >= 1<<10:
		return strconv.FormatInt((n+512)>>10, 10) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// ToolUseBlock returns a tool-use block.
func ToolUseBlock(id, name string, input json.RawMessage) Block {
	return Block{Type: BlockToolUse, ID: id, Name: name, Input: input}
}

// ToolResultBlock returns a tool-result block answering the tool use id.
func ToolResultBlock(toolUseID, content string, isError bool) Block {
	return Block{Type: BlockToolResult, ToolUseID: toolUseID, Content: content, IsError: isError}
}

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Equal reports whether m and n say the same: the same role and blocks,
// field by field (Input byte for byte). Messages sharing their blocks are
// equal at once.
func (m Message) Equal(n Message) bool {
	if m.Role != n.Role || len(m.Content) != len(n.Content) {
		return false
	}
	if len(m.Content) == 0 || &m.Content[0] == &n.Content[0] {
		return true
	}
	for i := range m.Content {
		x, y := &m.Content[i], &n.Content[i]
		if x.Type != y.Type || x.Text != y.Text || x.ID != y.ID || x.Name != y.Name ||
			!bytes.Equal(x.Input, y.Input) || x.ToolUseID != y.ToolUseID || x.Content != y.Content ||
			x.IsError != y.IsError || x.Thinking != y.Thinking || x.Signature != y.Signature ||
			!x.Media.Equal(y.Media) {
			return false
		}
	}
	return true
}

// Text returns the concatenation of the message's text blocks.
func (m Message) Text() string {
	var n int
	var only string
	for _, b := range m.Content {
		if b.Type == BlockText {
			n++
			only = b.Text
		}
	}
	if n <= 1 {
		return only
	}
	var buf []byte
	for _, b := range m.Content {
		if b.Type == BlockText {
			buf = append(buf, b.Text...)
		}
	}
	return string(buf)
}

// ToolUses returns the message's tool-use blocks, in order.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// ToolDefinition is what the model is told about one tool.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Usage counts the tokens of one call (or, summed, of many).
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// Total returns all tokens counted in u.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// StopReason says why the model stopped producing output.
type StopReason string

// Stop reasons, named as the providers name them.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopRefusal   StopReason = "refusal"
	StopPauseTurn StopReason = "pause_turn"
	StopUnknown   StopReason = ""
)

// Features name what a model call is for; they travel in Metadata.Feature
// so that providers, middleware and test doubles can tell calls apart.
const (
	FeatureAgent      = "agent"
	FeatureCompaction = "compaction"
	FeatureSubagent   = "subagent"
	// FeatureTool: a tool's own question (tool.Asker: WebFetch's prompt
	// over a page); Component names the tool.
	FeatureTool = "tool"
)

// Metadata travels with every call.
type Metadata struct {
	// TraceID is the id of the session the call serves (for a subagent fork,
	// the invoking user's session).
	TraceID string `json:"trace_id"`
	// Provider names the provider the call goes to when it is not the
	// runtime's own: a fallback model of another provider's
	// (agent.Fallback.Provider). Empty: the runtime's.
	Provider string `json:"provider,omitempty"`
	// Feature says what the call is for: FeatureAgent, FeatureCompaction, …
	Feature string `json:"feature"`
	// Component names the part of the runtime that made the call (the agent
	// name, a fork's name).
	Component string `json:"component,omitempty"`
	// CacheInvalidationReason, when set, says why this call may change the
	// cache-sensitive prefix of the prompt (system prompt, tool definitions,
	// earlier messages); llm_request middleware that change it are refused
	// without one.
	CacheInvalidationReason string `json:"cache_invalidation_reason,omitempty"`
}

// Request is one model call.
type Request struct {
	Model     string           `json:"model,omitempty"`
	System    string           `json:"system,omitempty"`
	Messages  []Message        `json:"messages"`
	Tools     []ToolDefinition `json:"tools,omitempty"`
	MaxTokens int              `json:"max_tokens,omitempty"`
	Metadata  Metadata         `json:"metadata"`
	// OneToolCall asks the model for at most one tool call per response
	// (Anthropic's disable_parallel_tool_use, OpenAI's
	// parallel_tool_calls: false); it means nothing without Tools.
	OneToolCall bool `json:"one_tool_call,omitempty"`
	// Output asks for the answer — the response that calls no tool — as
	// a JSON value of a schema, through the provider's own mechanism (a
	// client says it has one with OutputNative). Nil: text.
	Output *Output `json:"output,omitempty"`
	// WebSearch, if set, lets the model search the web through the
	// provider's own server-side search (a client that SearchesWeb: it
	// is sent as Anthropic's web search tool, OpenAI's Responses
	// web_search, …); the pages found come back in Response.Sources.
	WebSearch *WebSearch `json:"web_search,omitempty"`
}

// WebSearch is the provider's own web search, as a request allows it.
type WebSearch struct {
	// Allowed, if any, are the only domains searched; Blocked the
	// domains never searched (a provider that takes only one of the two
	// gets Allowed: the caller filters Sources by Blocked itself).
	Allowed []string `json:"allowed,omitempty"`
	Blocked []string `json:"blocked,omitempty"`
	// MaxUses caps the searches of the call (the provider's default if
	// zero, where it has a cap).
	MaxUses int `json:"max_uses,omitempty"`
}

// Source is a page a provider's own web search found, or that its
// answer cites.
type Source struct {
	Title string `json:"title,omitempty"`
	URL   string `json:"url"`
	// Age says how old the page is, as the provider says it.
	Age string `json:"age,omitempty"`
	// Site is the page's site ("go.dev"), where the provider names it
	// apart from the URL: Gemini's grounding gives Google's redirect to
	// the page as its URL.
	Site string `json:"site,omitempty"`
}

// WebSearcher is implemented by clients whose provider searches the web
// itself (Request.WebSearch) for model.
type WebSearcher interface {
	SearchesWeb(model string) bool
}

// SearchesWeb reports whether c's provider searches the web itself for
// model.
func SearchesWeb(c Client, model string) bool {
	w, ok := c.(WebSearcher)
	return ok && w.SearchesWeb(model)
}

// Output is the schema an answer must be a value of.
type Output struct {
	// Name names the schema for providers that want one (OpenAI's
	// json_schema name): letters, digits, _ and -.
	Name string `json:"name"`
	// Schema is a JSON Schema of an object.
	Schema json.RawMessage `json:"schema"`
	// Strict asks the provider to hold the answer to the schema as it
	// generates it (OpenAI's strict), which it can only for a schema
	// whose every object lists all its properties as required and allows
	// no others.
	Strict bool `json:"strict,omitempty"`
}

// OutputNative is implemented by clients that honour Request.Output with
// the provider's own mechanism. For one that does not, the runtime offers
// the model a final-answer tool instead.
type OutputNative interface {
	NativeOutput() bool
}

// HasNativeOutput reports whether c honours Request.Output itself.
func HasNativeOutput(c Client) bool {
	n, ok := c.(OutputNative)
	return ok && n.NativeOutput()
}

// Response is the model's complete answer to one call.
type Response struct {
	// Message is the assistant message; its Role is RoleAssistant.
	Message    Message    `json:"message"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
	// Model is the model that answered, as the provider reports it.
	Model string `json:"model,omitempty"`
	// ID is the provider's id of the response ("msg_…", "chatcmpl-…"), if
	// it gave one: what its logs and support know it by.
	ID string `json:"id,omitempty"`
	// Refusal is what the provider said of a refusal (StopRefusal), if it
	// said anything: Anthropic's explanation of the policy it applied, the
	// refusal message of an OpenAI-compatible API. It is not part of
	// Message: a refusal is not an answer.
	Refusal string `json:"refusal,omitempty"`
	// Sources are the pages the provider's own web search found
	// (Request.WebSearch), in the order found, each URL once.
	Sources []Source `json:"sources,omitempty"`
}

// DeltaType names the kind of a streaming event.
type DeltaType string

// Streaming event kinds.
const (
	// DeltaText carries a piece of text of block Index.
	DeltaText DeltaType = "text"
	// DeltaToolUse announces that block Index is a tool use (ID, Name).
	DeltaToolUse DeltaType = "tool_use"
	// DeltaToolInput carries a piece of the raw JSON input of block Index.
	DeltaToolInput DeltaType = "tool_input"
)

// Delta is one streaming event, delivered while the response is produced.
type Delta struct {
	Type  DeltaType `json:"type"`
	Index int       `json:"index"`          // index of the content block in the final message
	Text  string    `json:"text,omitempty"` // text or partial JSON
	ID    string    `json:"id,omitempty"`   // tool use id (DeltaToolUse)
	Name  string    `json:"name,omitempty"` // tool name (DeltaToolUse)
}

// Client is a language model. Implementations must be safe for concurrent
// use.
//
// Generate sends req and returns the complete response. While the response is
// produced, onDelta (if non-nil) receives its pieces in order, from the
// goroutine that called Generate, before Generate returns; the concatenated
// text deltas of a block equal that block's final text. Generate must return
// promptly once ctx is done, with an error that wraps ctx.Err().
//
// Generate must not modify req. Errors a caller may branch on are *Error
// values (see ErrPromptTooLong and friends).
type Client interface {
	Generate(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// ClientFunc adapts a function to Client.
type ClientFunc func(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)

// Generate calls f.
func (f ClientFunc) Generate(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	return f(ctx, req, onDelta)
}
