package tooltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// odd is an input Access and Display are asked of: one of the case's, or
// one the kit made up.
type odd struct {
	json string
	what string // "Case.Inputs[0]", `Case.Inputs[0] with "path" null`
	want *Input // for the case's Inputs
}

// malformed are inputs no tool's schema accepts: not JSON, or JSON that
// is not an object.
var malformed = []string{
	`{`, `}`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{}}`, "{\xff}", "\xff\xfe",
	`null`, `[]`, `[{}]`, `"an object"`, `42`, `true`,
}

// odds are values the kit puts in an input's fields, one at a time: of
// every type, empty, huge, with line breaks, not UTF-8.
var odds = []struct{ what, json string }{
	{"null", `null`},
	{"false", `false`},
	{"0", `0`},
	{"-1", `-1`},
	{"a huge number", `1e308`},
	{"a number past float64", `1e400`},
	{"a fraction", `0.5`},
	{"an empty string", `""`},
	{"a string", `"tooltest"`},
	{"a string of line breaks", `"first line\nsecond line\r\nthird line"`},
	{"a string with a carriage return", `"before\rafter"`},
	{"a string of invalid UTF-8", "\"\xff\xfe \xc3(\""},
	{"a lone surrogate", `"\ud800"`},
	{"a string with a NUL", `"a\u0000b"`},
	{"a path out of the workspace", `"../../../../etc/passwd"`},
	{"a huge string", `"` + strings.Repeat("x", 256<<10) + `"`},
	{"an empty array", `[]`},
	{"an array of everything", `[null, 1, "two", {}, []]`},
	{"an empty object", `{}`},
	{"an object", `{"nested": {"deeper": [1, 2]}}`},
	{"deep nesting", strings.Repeat("[", 512) + strings.Repeat("]", 512)},
}

// oddInputs returns what Access and Display are asked of: the case's
// inputs (valid, then invalid), malformed ones, an empty one, and the
// first valid object input with each field — of the schema's top-level
// properties and of the input — set to each of odds in turn.
func oddInputs(schema json.RawMessage, c Case) []odd {
	var out []odd
	for i := range c.Inputs {
		out = append(out, odd{json: c.Inputs[i].JSON, what: fmt.Sprintf("Case.Inputs[%d]", i), want: &c.Inputs[i]})
	}
	for i, in := range c.Invalid {
		out = append(out, odd{json: in, what: fmt.Sprintf("Case.Invalid[%d]", i)})
	}
	for _, in := range malformed {
		out = append(out, odd{json: in, what: "malformed input"})
	}
	out = append(out, odd{json: "", what: "an empty input"}, odd{json: "{}", what: "an empty object"})

	base, from := map[string]json.RawMessage{}, "an empty object"
	for i, in := range c.Inputs {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(in.JSON), &m) == nil && m != nil {
			base, from = m, fmt.Sprintf("Case.Inputs[%d]", i)
			break
		}
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s) // a schema that does not decode has no fields to try
	fields := slices.Sorted(maps.Keys(base))
	for _, f := range slices.Sorted(maps.Keys(s.Properties)) {
		if _, ok := base[f]; !ok {
			fields = append(fields, f)
		}
	}
	for _, f := range fields {
		for _, v := range odds {
			out = append(out, odd{json: with(base, f, v.json), what: fmt.Sprintf("%s with %q %s", from, f, v.what)})
		}
	}
	return out
}

// with returns the JSON object m with field set to raw, written by hand so
// that raw goes in as it is, invalid UTF-8 and all.
func with(m map[string]json.RawMessage, field, raw string) string {
	var b bytes.Buffer
	b.WriteByte('{')
	keys := slices.Sorted(maps.Keys(m))
	if _, ok := m[field]; !ok {
		keys = append(keys, field)
	}
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		if k == field {
			b.WriteString(raw)
		} else {
			b.Write(m[k])
		}
	}
	b.WriteByte('}')
	return b.String()
}
