package tool

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// fastSchema is a precompiled check for the JSON Schema keywords that tool
// schemas use almost exclusively (type, properties, required,
// additionalProperties, enum, numeric and length bounds, items). It exists
// for speed only: it may accept an input, and then the input is valid; when
// it cannot accept (the input is invalid, or the schema uses anything else)
// the full validator decides and words the error. So the library remains
// the authority on what is invalid and on every message a model sees.
//
// Numbers are checked as encoding/json decodes them (float64), which is the
// value a typed tool receives.
type fastSchema struct {
	types      uint8 // bit set of jsonType*; 0 means any type
	props      map[string]*fastSchema
	required   []string
	additional *fastSchema // nil: any additional property is allowed
	noExtra    bool        // additionalProperties: false
	enum       []any
	hasEnum    bool
	minimum    *float64
	maximum    *float64
	exclMin    *float64
	exclMax    *float64
	minLength  int
	maxLength  int // -1: none
	items      *fastSchema
	minItems   int
	maxItems   int // -1: none
}

const (
	jsonNull uint8 = 1 << iota
	jsonBool
	jsonNumber
	jsonInteger
	jsonString
	jsonArray
	jsonObject
)

var typeBits = map[string]uint8{
	"null": jsonNull, "boolean": jsonBool, "number": jsonNumber, "integer": jsonInteger,
	"string": jsonString, "array": jsonArray, "object": jsonObject,
}

// annotations change nothing about validity.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	// format is an annotation unless the compiler asserts formats, which
	// orca's does not.
	"format": true,
}

// compileFast returns the fast check for doc, or nil if doc uses a keyword
// it does not handle.
func compileFast(doc any) *fastSchema {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	s := &fastSchema{maxLength: -1, maxItems: -1}
	for k, v := range m {
		switch {
		case annotations[k]:
		case k == "type":
			switch t := v.(type) {
			case string:
				if typeBits[t] == 0 {
					return nil
				}
				s.types = typeBits[t]
			case []any:
				for _, x := range t {
					name, _ := x.(string)
					if typeBits[name] == 0 {
						return nil
					}
					s.types |= typeBits[name]
				}
			default:
				return nil
			}
		case k == "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			s.props = make(map[string]*fastSchema, len(pm))
			for name, sub := range pm {
				if s.props[name] = compileFast(sub); s.props[name] == nil {
					return nil
				}
			}
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, x := range list {
				name, ok := x.(string)
				if !ok {
					return nil
				}
				s.required = append(s.required, name)
			}
		case k == "additionalProperties":
			switch a := v.(type) {
			case bool:
				s.noExtra = !a
			default:
				if s.additional = compileFast(a); s.additional == nil {
					return nil
				}
			}
		case k == "enum":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, x := range list {
				switch x.(type) {
				case nil, bool, string, json.Number:
				default:
					return nil
				}
				s.enum = append(s.enum, number(x))
			}
			s.hasEnum = true
		case k == "minimum", k == "maximum", k == "exclusiveMinimum", k == "exclusiveMaximum":
			n, ok := v.(json.Number)
			if !ok {
				return nil
			}
			f, err := n.Float64()
			if err != nil {
				return nil
			}
			switch k {
			case "minimum":
				s.minimum = &f
			case "maximum":
				s.maximum = &f
			case "exclusiveMinimum":
				s.exclMin = &f
			case "exclusiveMaximum":
				s.exclMax = &f
			}
		case k == "minLength", k == "maxLength", k == "minItems", k == "maxItems":
			n, ok := v.(json.Number)
			if !ok {
				return nil
			}
			i, err := n.Int64()
			if err != nil || i < 0 || i > math.MaxInt32 {
				return nil
			}
			switch k {
			case "minLength":
				s.minLength = int(i)
			case "maxLength":
				s.maxLength = int(i)
			case "minItems":
				s.minItems = int(i)
			case "maxItems":
				s.maxItems = int(i)
			}
		case k == "items":
			if s.items = compileFast(v); s.items == nil {
				return nil
			}
		default:
			return nil
		}
	}
	return s
}

// number turns a schema's json.Number into the float64 a decoded input
// holds, so that enum members compare with ==.
func number(x any) any {
	if n, ok := x.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return f
		}
	}
	return x
}

// accepts reports whether v (decoded by encoding/json) is certainly valid.
func (s *fastSchema) accepts(v any) bool {
	if s.types != 0 && s.types&typeOf(v) == 0 {
		return false
	}
	if s.hasEnum {
		found := false
		for _, e := range s.enum {
			if e == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch v := v.(type) {
	case float64:
		return (s.minimum == nil || v >= *s.minimum) && (s.maximum == nil || v <= *s.maximum) &&
			(s.exclMin == nil || v > *s.exclMin) && (s.exclMax == nil || v < *s.exclMax)
	case string:
		if s.minLength > 0 || s.maxLength >= 0 {
			n := utf8.RuneCountInString(v)
			return n >= s.minLength && (s.maxLength < 0 || n <= s.maxLength)
		}
	case []any:
		if len(v) < s.minItems || s.maxItems >= 0 && len(v) > s.maxItems {
			return false
		}
		if s.items != nil {
			for _, x := range v {
				if !s.items.accepts(x) {
					return false
				}
			}
		}
	case map[string]any:
		for _, name := range s.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
		for name, x := range v {
			if p, ok := s.props[name]; ok {
				if !p.accepts(x) {
					return false
				}
				continue
			}
			if s.noExtra || s.additional != nil && !s.additional.accepts(x) {
				return false
			}
		}
	}
	return true
}

func typeOf(v any) uint8 {
	switch v := v.(type) {
	case nil:
		return jsonNull
	case bool:
		return jsonBool
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			return jsonNumber | jsonInteger
		}
		return jsonNumber
	case string:
		return jsonString
	case []any:
		return jsonArray
	case map[string]any:
		return jsonObject
	}
	return 0
}

// acceptsJSON is accepts over the input's bytes, without decoding them:
// the fast path of every tool call, which would otherwise decode its
// input twice (here, and into the tool's own type). It reports whether
// data is certainly valid JSON and valid input, and may say no where
// accepts would say yes — a string with escapes whose length or value
// matters, a key with escapes, a key given twice, more than 64 required
// properties, deep nesting — which sends the input to the full
// validator, as a no from accepts does. The bytes are read once: the
// scanner checks that they are JSON as it goes.
func (s *fastSchema) acceptsJSON(data []byte) bool {
	sc := scanner{b: data}
	if !s.acceptValue(&sc) {
		return false
	}
	sc.space()
	return sc.i == len(sc.b)
}

// scanner reads JSON (RFC 8259, as encoding/json reads it: a string may
// hold any bytes but control characters), checking it as it goes. Its
// methods return false where what they read is not JSON, or ends early;
// the fast path then says no, and the full validator decides.
type scanner struct {
	b     []byte
	i     int
	depth int  // objects and arrays open
	fresh bool // an object or array was just opened: no member read yet
	bad   bool // what more read was not JSON
}

// maxDepth bounds the nesting the fast path reads (encoding/json's bound
// is 10,000); deeper input goes to the full validator.
const maxDepth = 500

func (sc *scanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space; 0 at the end (no JSON value
// starts with it).
func (sc *scanner) peek() byte {
	sc.space()
	if sc.i < len(sc.b) {
		return sc.b[sc.i]
	}
	return 0
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string at sc.i (its opening quote) and returns what is
// between the quotes and whether it has escapes.
func (sc *scanner) str() (raw []byte, escaped, ok bool) {
	b := sc.b
	start := sc.i + 1
	for i := start; i < len(b); {
		if plain[b[i]] {
			i++
			continue
		}
		switch b[i] {
		case '"':
			sc.i = i + 1
			return b[start:i], escaped, true
		case '\\':
			escaped = true
			if i+1 == len(b) {
				return nil, true, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !hex4(b[i+2:i+6]) {
					return nil, true, false
				}
				i += 6
			default:
				return nil, true, false
			}
		default: // a control character
			return nil, escaped, false
		}
	}
	return nil, escaped, false
}

func hex4(h []byte) bool {
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func digit(c byte) bool { return '0' <= c && c <= '9' }

// digitsFrom is the index past the run of digits at b[i:].
func digitsFrom(b []byte, i int) int {
	for i < len(b) && digit(b[i]) {
		i++
	}
	return i
}

// num reads a number at sc.i and returns its text.
func (sc *scanner) num() (text []byte, ok bool) {
	b, start := sc.b, sc.i
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digitsFrom(b, i)
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		if i = digitsFrom(b, i+1); !digit(b[i-1]) {
			return nil, false // no digit after the point
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digitsFrom(b, i); !digit(b[i-1]) {
			return nil, false // no digit in the exponent
		}
	}
	sc.i = i
	return b[start:i], true
}

// numberOf is the value of a number's text as encoding/json decodes it
// (float64); a whole number of up to 15 digits is exact without the
// general parser.
func numberOf(text []byte) (float64, bool) {
	digits := text
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return parseFloat(text)
	}
	var n int64
	for _, c := range digits {
		if !digit(c) {
			return parseFloat(text)
		}
		n = 10*n + int64(c-'0')
	}
	f := float64(n)
	if len(digits) < len(text) {
		f = -f
	}
	return f, true
}

func parseFloat(text []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(text), 64)
	return f, err == nil // out of range: encoding/json refuses it too
}

// literal reads word (true, false or null) at sc.i.
func (sc *scanner) literal(word string) bool {
	if !bytes.HasPrefix(sc.b[sc.i:], []byte(word)) {
		return false
	}
	sc.i += len(word)
	return true
}

// open reads the bracket that opens an object or an array.
func (sc *scanner) open() bool {
	sc.i++
	sc.depth++
	sc.fresh = true
	return sc.depth <= maxDepth
}

// more reports whether another member of the object or array just
// opened follows, reading the comma before it; false once it read the
// closing bracket, or where neither follows (then sc.bad is set, and
// whoever looped over the members must say no).
func (sc *scanner) more(closing byte) bool {
	first := sc.fresh
	sc.fresh = false
	switch c := sc.peek(); {
	case c == closing:
		sc.i++
		sc.depth--
		return false
	case first:
		return true
	case c == ',':
		sc.i++
		return true
	}
	sc.bad = true
	return false
}

// key reads a member's name and the colon after it.
func (sc *scanner) key() (name []byte, escaped, ok bool) {
	if sc.peek() != '"' {
		return nil, false, false
	}
	if name, escaped, ok = sc.str(); !ok || sc.peek() != ':' {
		return nil, false, false
	}
	sc.i++
	return name, escaped, true
}

// skip reads past one value, checking that it is JSON.
func (sc *scanner) skip() bool {
	switch c := sc.peek(); c {
	case '"':
		_, _, ok := sc.str()
		return ok
	case '{', '[':
		if !sc.open() {
			return false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		for sc.more(closing) {
			if c == '{' {
				if _, _, ok := sc.key(); !ok {
					return false
				}
			}
			if !sc.skip() {
				return false
			}
		}
		return !sc.bad
	case 't':
		return sc.literal("true")
	case 'f':
		return sc.literal("false")
	case 'n':
		return sc.literal("null")
	case 0:
		return false
	}
	_, ok := sc.num()
	return ok
}

func (s *fastSchema) acceptValue(sc *scanner) bool {
	switch c := sc.peek(); {
	case c == '{':
		return s.acceptObject(sc)
	case c == '[':
		return s.acceptArray(sc)
	case c == '"':
		raw, escaped, ok := sc.str()
		if !ok || s.types != 0 && s.types&jsonString == 0 {
			return false
		}
		if s.hasEnum || s.minLength > 0 || s.maxLength >= 0 {
			if escaped || !utf8.Valid(raw) {
				return false // the decoded string decides: the slow path
			}
		}
		if s.hasEnum && !slices.ContainsFunc(s.enum, func(e any) bool { v, ok := e.(string); return ok && v == string(raw) }) {
			return false
		}
		if s.minLength > 0 || s.maxLength >= 0 {
			n := utf8.RuneCount(raw)
			return n >= s.minLength && (s.maxLength < 0 || n <= s.maxLength)
		}
		return true
	case c == 't' || c == 'f':
		v := c == 't'
		if !sc.literal(strconv.FormatBool(v)) || s.types != 0 && s.types&jsonBool == 0 {
			return false
		}
		return !s.hasEnum || slices.Contains(s.enum, any(v))
	case c == 'n':
		if !sc.literal("null") || s.types != 0 && s.types&jsonNull == 0 {
			return false
		}
		return !s.hasEnum || slices.Contains(s.enum, nil)
	}
	text, ok := sc.num()
	if !ok {
		return false
	}
	f, ok := numberOf(text)
	if !ok || s.types != 0 && s.types&typeOf(f) == 0 {
		return false
	}
	if s.hasEnum && !slices.ContainsFunc(s.enum, func(e any) bool { v, ok := e.(float64); return ok && v == f }) {
		return false
	}
	return (s.minimum == nil || f >= *s.minimum) && (s.maximum == nil || f <= *s.maximum) &&
		(s.exclMin == nil || f > *s.exclMin) && (s.exclMax == nil || f < *s.exclMax)
}

func (s *fastSchema) acceptArray(sc *scanner) bool {
	if s.types != 0 && s.types&jsonArray == 0 || s.hasEnum || !sc.open() {
		return false
	}
	n := 0
	for sc.more(']') {
		ok := false
		if s.items != nil {
			ok = s.items.acceptValue(sc)
		} else {
			ok = sc.skip()
		}
		if !ok {
			return false
		}
		n++
	}
	return !sc.bad && n >= s.minItems && (s.maxItems < 0 || n <= s.maxItems)
}

func (s *fastSchema) acceptObject(sc *scanner) bool {
	if s.types != 0 && s.types&jsonObject == 0 || s.hasEnum || len(s.required) > 64 || !sc.open() {
		return false
	}
	var found uint64
	var seen [16][]byte // keys seen, to refuse one given twice (the slow path decides)
	nseen := 0
	for sc.more('}') {
		key, escaped, ok := sc.key()
		if !ok || escaped || nseen == len(seen) {
			return false
		}
		for _, k := range seen[:nseen] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		seen[nseen] = key
		nseen++
		for j, name := range s.required {
			if name == string(key) {
				found |= 1 << j
			}
		}
		switch p, named := s.props[string(key)]; {
		case named:
			ok = p.acceptValue(sc)
		case s.noExtra:
			return false
		case s.additional != nil:
			ok = s.additional.acceptValue(sc)
		default:
			ok = sc.skip()
		}
		if !ok {
			return false
		}
	}
	return !sc.bad && found == 1<<len(s.required)-1
}
