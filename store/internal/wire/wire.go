// Package wire is the stored form of an llm.Message: the JSON of
// llm.Message, except that a tool use's input is kept byte for byte.
//
// encoding/json would compact a json.RawMessage (and refuse an invalid
// one), but the model's input must come back exactly as it was given: it
// may be malformed, and it is what the model will see again. So the input
// is written verbatim under "input" when it is valid UTF-8 JSON with no
// surrounding white space (decoding then returns the very same bytes), as a
// JSON string under "input_text" when it is other UTF-8 text, and as base64
// under "input_b64" otherwise. The result is always valid UTF-8 JSON, so
// SQLite's json functions can query it.
//
// An image's or a document's bytes are not in it: its block keeps the
// media's type, digest, size, name and dimensions, and the store keeps the
// bytes once, by digest (llm.Message.Media lists what to keep; the SQL
// stores' attachments).
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/orca-agent/orca/llm"
)

type block struct {
	Type      llm.BlockType   `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	InputText *string         `json:"input_text,omitempty"`
	InputB64  []byte          `json:"input_b64,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Media     *media          `json:"media,omitempty"`
	// Parts are a tool result's media as rows written before they were
	// blocks of their own kept them; read, never written.
	Parts []block `json:"parts,omitempty"`
}

// media is an llm.Media as stored: all of it but the bytes.
type media struct {
	MediaType string `json:"media_type"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size,omitempty"`
	Name      string `json:"name,omitempty"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
}

// Digest returns m's digest: its own, or that of its bytes ("sha256:"
// and their SHA-256 in hex).
func Digest(m *llm.Media) string {
	if m.Digest != "" {
		return m.Digest
	}
	return llm.DigestOf(m.Data)
}

func toMedia(m *llm.Media) *media {
	if m == nil {
		return nil
	}
	return &media{MediaType: m.MediaType, Digest: Digest(m), Size: m.Len(), Name: m.Name, Width: m.Width, Height: m.Height}
}

func fromMedia(m *media) *llm.Media {
	if m == nil {
		return nil
	}
	return &llm.Media{MediaType: m.MediaType, Digest: m.Digest, Size: m.Size, Name: m.Name, Width: m.Width, Height: m.Height}
}

// parts returns bs (a tool result's parts) as stored.
type message struct {
	Role    llm.Role `json:"role"`
	Content []block  `json:"content"`
}

// Encode returns the stored form of m.
func Encode(m llm.Message) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteString(`{"role":`)
	if err := enc.Encode(m.Role); err != nil {
		return nil, err
	}
	trimNewline(&buf)
	buf.WriteString(`,"content":`)
	if m.Content == nil {
		buf.WriteString("null}")
		return buf.Bytes(), nil
	}
	buf.WriteByte('[')
	for i, b := range m.Content {
		if i > 0 {
			buf.WriteByte(',')
		}
		w := block{
			Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name,
			ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError,
			Thinking: b.Thinking, Signature: b.Signature,
			Media: toMedia(b.Media),
		}
		verbatim := false
		switch in := b.Input; {
		case len(in) == 0:
		case verbatimJSON(in):
			verbatim = true
		case utf8.Valid(in):
			s := string(in)
			w.InputText = &s
		default:
			w.InputB64 = in
		}
		if err := enc.Encode(w); err != nil {
			return nil, fmt.Errorf("encode content[%d]: %w", i, err)
		}
		trimNewline(&buf)
		if verbatim {
			// w has at least "type", so the object is not empty: replace
			// its closing brace with the input member.
			buf.Truncate(buf.Len() - 1)
			buf.WriteString(`,"input":`)
			buf.Write(b.Input)
			buf.WriteByte('}')
		}
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}

func trimNewline(buf *bytes.Buffer) {
	if n := buf.Len(); n > 0 && buf.Bytes()[n-1] == '\n' {
		buf.Truncate(n - 1)
	}
}

// verbatimJSON reports whether in can be written as a JSON value and read
// back as the same bytes.
func verbatimJSON(in []byte) bool {
	if isSpace(in[0]) || isSpace(in[len(in)-1]) {
		return false
	}
	return utf8.Valid(in) && json.Valid(in)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Decode reads the stored form back into a message.
func Decode(data []byte) (llm.Message, error) {
	return DecodeString(string(data))
}

// DecodeString is Decode of a stored form held as a string, which the
// message's strings may share.
func DecodeString(data string) (llm.Message, error) {
	if m, ok := decodeFast(data); ok {
		return m, nil
	}
	var w message
	if err := json.Unmarshal([]byte(data), &w); err != nil {
		return llm.Message{}, fmt.Errorf("decode stored message: %w", err)
	}
	return fromWire(w), nil
}

// fromWire is the message w stores.
func fromWire(w message) llm.Message {
	m := llm.Message{Role: w.Role}
	if w.Content == nil {
		return m
	}
	n := len(w.Content)
	for _, b := range w.Content {
		n += len(b.Parts)
	}
	m.Content = make([]llm.Block, 0, n)
	for _, b := range w.Content {
		out := llm.Block{
			Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name,
			ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError,
			Thinking: b.Thinking, Signature: b.Signature,
			Media: fromMedia(b.Media),
		}
		switch {
		case b.Input != nil:
			out.Input = b.Input
		case b.InputText != nil:
			out.Input = json.RawMessage(*b.InputText)
		case b.InputB64 != nil:
			out.Input = b.InputB64
		}
		m.Content = append(m.Content, out)
		// Rows written before a tool result's media were blocks of their
		// own kept them in its parts.
		for _, p := range b.Parts {
			m.Content = append(m.Content, llm.Block{Type: p.Type, Text: p.Text, ToolUseID: b.ToolUseID, Media: fromMedia(p.Media)})
		}
	}
	return m
}

// Stored returns what Decode(Encode(m)) returns — m as a store keeps it —
// without the round trip: a copy of m with slices of its own, and an
// empty tool input dropped, as Encode drops it; its media keep their
// bytes (shared: media bytes are never changed), as a store's read gives
// them back, with their digests set. It returns false if a string of m
// is not valid UTF-8 (the stored form replaces the bad bytes); the
// caller then decodes the encoding instead.
func Stored(m llm.Message) (llm.Message, bool) {
	if !utf8.ValidString(string(m.Role)) {
		return llm.Message{}, false
	}
	if m.Content == nil {
		return m, true
	}
	blocks := make([]llm.Block, len(m.Content))
	for i, b := range m.Content {
		for _, s := range [...]string{string(b.Type), b.Text, b.ID, b.Name, b.ToolUseID, b.Content, b.Thinking, b.Signature} {
			if !utf8.ValidString(s) {
				return llm.Message{}, false
			}
		}
		if len(b.Input) == 0 {
			b.Input = nil
		} else {
			b.Input = append(json.RawMessage(nil), b.Input...)
		}
		if b.Media != nil {
			var ok bool
			if b.Media, ok = storedMedia(b.Media); !ok {
				return llm.Message{}, false
			}
		}
		blocks[i] = b
	}
	m.Content = blocks
	return m, true
}

// storedMedia is m as a store gives it back: a copy, its digest and size
// set, its bytes shared; false if a string of it is not valid UTF-8.
func storedMedia(m *llm.Media) (*llm.Media, bool) {
	if m == nil {
		return nil, true
	}
	if !utf8.ValidString(m.MediaType) || !utf8.ValidString(m.Name) || !utf8.ValidString(m.Digest) {
		return nil, false
	}
	c := *m
	c.Digest = Digest(m)
	c.Size = m.Len()
	return &c, true
}
