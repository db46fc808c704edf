package tool

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
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
// data is certainly valid, and may say no where accepts would say yes —
// a string with escapes whose length or value matters, a key with
// escapes, a key given twice, more than 64 required properties — which
// sends the input to the full validator, as a no from accepts does.
func (s *fastSchema) acceptsJSON(data []byte) bool {
	if !json.Valid(data) {
		return false
	}
	sc := scanner{b: data}
	if !s.acceptValue(&sc) {
		return false
	}
	sc.space()
	return sc.i == len(sc.b)
}

// scanner reads JSON that json.Valid accepted.
type scanner struct {
	b []byte
	i int
}

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

// str reads a string at sc.i (its opening quote) and returns what is
// between the quotes and whether it has escapes.
func (sc *scanner) str() (raw []byte, escaped bool) {
	start := sc.i + 1
	for i := start; i < len(sc.b); i++ {
		switch sc.b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			sc.i = i + 1
			return sc.b[start:i], escaped
		}
	}
	sc.i = len(sc.b)
	return nil, true
}

// skip reads past one value.
func (sc *scanner) skip() {
	sc.space()
	switch sc.b[sc.i] {
	case '"':
		sc.str()
	case '{', '[':
		depth := 0
		for sc.i < len(sc.b) {
			switch sc.b[sc.i] {
			case '"':
				sc.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					sc.i++
					return
				}
			}
			sc.i++
		}
	default: // a number, true, false, null
		for sc.i < len(sc.b) && !strings.ContainsRune(",}] \t\n\r", rune(sc.b[sc.i])) {
			sc.i++
		}
	}
}

func (s *fastSchema) acceptValue(sc *scanner) bool {
	sc.space()
	switch c := sc.b[sc.i]; {
	case c == '{':
		return s.acceptObject(sc)
	case c == '[':
		return s.acceptArray(sc)
	case c == '"':
		raw, escaped := sc.str()
		if s.types != 0 && s.types&jsonString == 0 {
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
		sc.skip()
		if s.types != 0 && s.types&jsonBool == 0 {
			return false
		}
		return !s.hasEnum || slices.Contains(s.enum, any(v))
	case c == 'n':
		sc.skip()
		if s.types != 0 && s.types&jsonNull == 0 {
			return false
		}
		return !s.hasEnum || slices.Contains(s.enum, nil)
	default:
		start := sc.i
		sc.skip()
		f, err := strconv.ParseFloat(string(sc.b[start:sc.i]), 64)
		if err != nil {
			return false // out of range: encoding/json refuses it too
		}
		if s.types != 0 && s.types&typeOf(f) == 0 {
			return false
		}
		if s.hasEnum && !slices.ContainsFunc(s.enum, func(e any) bool { v, ok := e.(float64); return ok && v == f }) {
			return false
		}
		return (s.minimum == nil || f >= *s.minimum) && (s.maximum == nil || f <= *s.maximum) &&
			(s.exclMin == nil || f > *s.exclMin) && (s.exclMax == nil || f < *s.exclMax)
	}
}

func (s *fastSchema) acceptArray(sc *scanner) bool {
	if s.types != 0 && s.types&jsonArray == 0 || s.hasEnum {
		return false
	}
	sc.i++ // [
	n := 0
	for {
		sc.space()
		if sc.b[sc.i] == ']' {
			sc.i++
			break
		}
		if n > 0 {
			sc.i++ // ,
		}
		if s.items != nil {
			if !s.items.acceptValue(sc) {
				return false
			}
		} else {
			sc.skip()
		}
		n++
	}
	return n >= s.minItems && (s.maxItems < 0 || n <= s.maxItems)
}

func (s *fastSchema) acceptObject(sc *scanner) bool {
	if s.types != 0 && s.types&jsonObject == 0 || s.hasEnum || len(s.required) > 64 {
		return false
	}
	sc.i++ // {
	var found uint64
	var seen [16][]byte // keys seen, to refuse one given twice (the slow path decides)
	nseen := 0
	for first := true; ; first = false {
		sc.space()
		if sc.b[sc.i] == '}' {
			sc.i++
			break
		}
		if !first {
			sc.i++ // ,
			sc.space()
		}
		key, escaped := sc.str()
		if escaped || nseen == len(seen) {
			return false
		}
		for _, k := range seen[:nseen] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		seen[nseen] = key
		nseen++
		sc.space()
		sc.i++ // :
		for j, name := range s.required {
			if name == string(key) {
				found |= 1 << j
			}
		}
		if p, ok := s.props[string(key)]; ok {
			if !p.acceptValue(sc) {
				return false
			}
			continue
		}
		if s.noExtra {
			return false
		}
		if s.additional != nil {
			if !s.additional.acceptValue(sc) {
				return false
			}
			continue
		}
		sc.skip()
	}
	return found == 1<<len(s.required)-1
}
