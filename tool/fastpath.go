package tool

import (
	"encoding/json"
	"math"
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
