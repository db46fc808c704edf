package wire

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
	"unsafe"

	"github.com/orca-agent/orca/llm"
)

// decodeFast reads data as Encode writes it — compact JSON with the keys
// of message and block, strings without \u escapes of surrogates — as
// Decode's json.Unmarshal path would, several times faster: resuming a
// session reads every stored message. It reports false for anything else
// (white space, an unknown or repeated key, a null, a string that is not
// UTF-8, malformed JSON…), and Decode then leaves the message to
// json.Unmarshal: the fast path only ever agrees with it
// (FuzzDecodeFast).
//
// The message's strings share data (escaped ones excepted); tool inputs
// have bytes of their own.
func decodeFast(data string) (llm.Message, bool) {
	d := fastDecoder{b: unsafe.Slice(unsafe.StringData(data), len(data)), s: data}
	var m llm.Message
	if !d.lit('{') {
		return m, false
	}
	var seen [2]bool
	for first := true; !d.lit('}'); first = false {
		if !first && !d.lit(',') {
			return m, false
		}
		key, ok := d.key()
		if !ok {
			return m, false
		}
		switch key {
		case "role":
			s, ok := d.str()
			if !ok || seen[0] {
				return m, false
			}
			seen[0], m.Role = true, llm.Role(s)
		case "content":
			if seen[1] || !d.blocks(&m) {
				return m, false
			}
			seen[1] = true
		default:
			return m, false
		}
	}
	return m, d.i == len(d.b)
}

type fastDecoder struct {
	s string // the data, which the decoded strings share
	b []byte // s, to read (never written)
	i int
}

// lit consumes c if it is next.
func (d *fastDecoder) lit(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) word(w string) bool {
	if len(d.b)-d.i >= len(w) && d.s[d.i:d.i+len(w)] == w {
		d.i += len(w)
		return true
	}
	return false
}

// key reads `"key":`.
func (d *fastDecoder) key() (string, bool) {
	k, ok := d.str()
	return k, ok && d.lit(':')
}

// blocks reads the content array, or null.
func (d *fastDecoder) blocks(m *llm.Message) bool {
	if d.word("null") {
		m.Content = nil
		return true
	}
	if !d.lit('[') {
		return false
	}
	m.Content = make([]llm.Block, 0, 2)
	for first := true; !d.lit(']'); first = false {
		if !first && !d.lit(',') {
			return false
		}
		m.Content = append(m.Content, llm.Block{})
		if !d.block(&m.Content[len(m.Content)-1]) {
			return false
		}
	}
	return true
}

const (
	fieldType = iota
	fieldText
	fieldID
	fieldName
	fieldInput
	fieldInputText
	fieldInputB64
	fieldToolUseID
	fieldContent
	fieldIsError
	fieldThinking
	fieldSignature
	numFields
)

// block reads one block into b. Of "input", "input_text" and "input_b64",
// the first present in that order is the input, as in Decode.
func (d *fastDecoder) block(b *llm.Block) bool {
	if !d.lit('{') {
		return false
	}
	var seen [numFields]bool
	var text, b64 []byte
	for first := true; !d.lit('}'); first = false {
		if !first && !d.lit(',') {
			return false
		}
		key, ok := d.key()
		if !ok {
			return false
		}
		var f int
		var dst *string
		switch key {
		case "type":
			f = fieldType
		case "text":
			f, dst = fieldText, &b.Text
		case "id":
			f, dst = fieldID, &b.ID
		case "name":
			f, dst = fieldName, &b.Name
		case "tool_use_id":
			f, dst = fieldToolUseID, &b.ToolUseID
		case "content":
			f, dst = fieldContent, &b.Content
		case "thinking":
			f, dst = fieldThinking, &b.Thinking
		case "signature":
			f, dst = fieldSignature, &b.Signature
		case "input":
			f = fieldInput
		case "input_text":
			f = fieldInputText
		case "input_b64":
			f = fieldInputB64
		case "is_error":
			f = fieldIsError
		default:
			return false
		}
		if seen[f] {
			return false
		}
		seen[f] = true
		switch f {
		case fieldType:
			s, ok := d.str()
			if !ok {
				return false
			}
			b.Type = llm.BlockType(s)
		case fieldInput:
			start := d.i
			if !d.skip(0) || !json.Valid(d.b[start:d.i]) {
				return false
			}
			b.Input = append(json.RawMessage(nil), d.b[start:d.i]...)
		case fieldInputText:
			s, ok := d.str()
			if !ok {
				return false
			}
			text = []byte(s)
		case fieldInputB64:
			s, ok := d.str()
			if !ok {
				return false
			}
			in, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return false
			}
			b64 = in
		case fieldIsError:
			switch {
			case d.word("true"):
				b.IsError = true
			case d.word("false"):
				b.IsError = false
			default:
				return false
			}
		default:
			s, ok := d.str()
			if !ok {
				return false
			}
			*dst = s
		}
	}
	switch {
	case seen[fieldInput]:
	case seen[fieldInputText]:
		b.Input = text
	case seen[fieldInputB64]:
		b.Input = b64
	}
	return true
}

// str reads a JSON string. One without escapes is a substring of d.s.
func (d *fastDecoder) str() (string, bool) {
	if !d.lit('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			raw := d.b[start:d.i]
			d.i++
			if !utf8.Valid(raw) {
				return "", false
			}
			return d.s[start : d.i-1], true
		case c == '\\':
			return d.unescape(start)
		case c < 0x20:
			return "", false
		default:
			d.i++
		}
	}
	return "", false
}

// unescape reads the rest of a string that has escapes, from start.
func (d *fastDecoder) unescape(start int) (string, bool) {
	out := make([]byte, 0, d.i-start+64)
	for run := start; d.i < len(d.b); run = d.i {
		for d.i < len(d.b) && d.b[d.i] >= 0x20 && d.b[d.i] != '"' && d.b[d.i] != '\\' {
			d.i++
		}
		out = append(out, d.b[run:d.i]...)
		if d.i >= len(d.b) || d.b[d.i] < 0x20 {
			return "", false
		}
		if d.b[d.i] == '"' {
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok || r >= 0xd800 && r < 0xe000 { // surrogates: json.Unmarshal's to pair or replace
				return "", false
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}

func (d *fastDecoder) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// skip moves past one JSON value without decoding it; json.Valid checks
// the value it spans. depth guards against runaway nesting.
func (d *fastDecoder) skip(depth int) bool {
	if d.i >= len(d.b) || depth > 1000 {
		return false
	}
	switch c := d.b[d.i]; c {
	case '"':
		d.i++
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '\\':
				d.i += 2
			case '"':
				d.i++
				return true
			default:
				d.i++
			}
		}
		return false
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		d.i++
		for {
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case end:
				d.i++
				return true
			case ',', ':', ' ', '\t', '\n', '\r':
				d.i++
			default:
				if !d.skip(depth + 1) {
					return false
				}
			}
		}
	default: // a number or a literal: up to the next delimiter
		start := d.i
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
				return d.i > start
			}
			d.i++
		}
		return true
	}
}
