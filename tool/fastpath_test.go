package tool

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path may only accept what the full validator accepts.

var fastSchemas = []string{
	`{"type":"object","properties":{"file_path":{"type":"string","description":"x"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","exclusiveMinimum":0,"maximum":5000}},"required":["file_path"],"additionalProperties":false}`,
	`{"type":"object","properties":{"todos":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"object","properties":{"content":{"type":"string","minLength":1,"maxLength":5},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"],"additionalProperties":false}}},"required":["todos"]}`,
	`{"type":"object","properties":{"n":{"type":["null","number"],"exclusiveMaximum":10},"flag":{"type":"boolean"},"k":{"enum":[1,2.5,null,true,"x"]}},"additionalProperties":{"type":"string"}}`,
}

var fastInputs = []string{
	`{}`, `null`, `[]`, `"s"`, `1`,
	`{"file_path":"a"}`, `{"file_path":1}`, `{"file_path":"a","offset":0}`, `{"file_path":"a","offset":1}`,
	`{"file_path":"a","offset":1.5}`, `{"file_path":"a","offset":2.0}`, `{"file_path":"a","limit":0}`, `{"file_path":"a","limit":5000}`,
	`{"file_path":"a","limit":5001}`, `{"file_path":"a","extra":true}`, `{"file_path":null}`, `{"offset":3}`,
	`{"todos":[]}`, `{"todos":[{"content":"a","status":"pending"}]}`, `{"todos":[{"content":"","status":"pending"}]}`,
	`{"todos":[{"content":"héllo","status":"completed"}]}`, `{"todos":[{"content":"toolong","status":"pending"}]}`,
	`{"todos":[{"content":"a","status":"done"}]}`, `{"todos":[{"content":"a"}]}`, `{"todos":[{"content":"a","status":"pending","x":1}]}`,
	`{"todos":[{"content":"a","status":"pending"},{"content":"b","status":"pending"},{"content":"c","status":"pending"},{"content":"d","status":"pending"}]}`,
	`{"n":null}`, `{"n":9.99}`, `{"n":10}`, `{"n":"1"}`, `{"flag":1}`, `{"flag":false}`, `{"k":1}`, `{"k":1.0}`, `{"k":2.5}`, `{"k":3}`,
	`{"k":null}`, `{"k":"x"}`, `{"k":"y"}`, `{"k":true}`, `{"other":"s"}`, `{"other":1}`, `{"file_path":"a","offset":1e400}`,
	` { "file_path" : "a" , "offset" : 2 } `, `{"file_path":"a","file_path":1}`, `{"file_path":"a\"b"}`, `{"fil\u0065_path":"a"}`,
	`{"todos":[{"content":"\u00e9","status":"pending"}]}`, `{"todos":[ ]}`, `{"k":-0}`, `{"k":25e-1}`, `{"n":1E1}`, `{"file_path":"a"} x`,
	`{"todos":[{"content":"ab","status":"pending"} , {"content":"c","status":"completed"}]}`, "{\"file_path\":\"\xff\"}",
}

func checkAgreement(t *testing.T, schema, input string) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	if err != nil {
		t.Fatal(err)
	}
	fast := compileFast(doc)
	if fast == nil {
		t.Fatalf("schema not handled by the fast path: %s", schema)
	}
	_, full, err := compile("T", json.RawMessage(schema))
	if err != nil || full == nil {
		t.Fatalf("compile: %v", err)
	}
	sch, _, _ := compile("T", json.RawMessage(schema))
	var v any
	decoded := json.Unmarshal([]byte(input), &v) == nil
	// The byte path accepts only what the decoded path accepts.
	if fast.acceptsJSON([]byte(input)) && (!decoded || !fast.accepts(v)) {
		t.Errorf("acceptsJSON accepted %s against %s, which accepts (on the decoded value) does not", input, schema)
	}
	if !decoded || !fast.accepts(v) {
		return
	}
	w, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(input)))
	if err != nil {
		t.Fatalf("validator cannot decode %s: %v", input, err)
	}
	if err := sch.Validate(w); err != nil {
		t.Errorf("fast path accepted %s against %s, the validator refuses: %v", input, schema, err)
	}
}

func TestFastPathNeverAcceptsWhatTheValidatorRefuses(t *testing.T) {
	for _, s := range fastSchemas {
		for _, in := range fastInputs {
			checkAgreement(t, s, in)
		}
	}
}

func TestFastPathAcceptsTheCommonCase(t *testing.T) {
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(fastSchemas[0])))
	var v any
	in := []byte(`{"file_path":"a.go","offset":3,"limit":10}`)
	json.Unmarshal(in, &v)
	f := compileFast(doc)
	if f == nil || !f.accepts(v) || !f.acceptsJSON(in) {
		t.Error("fast path does not accept a plain valid input")
	}
	if n := testing.AllocsPerRun(100, func() { f.acceptsJSON(in) }); n != 0 {
		t.Errorf("acceptsJSON allocates %v times", n)
	}
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		`{"type":"object","anyOf":[{"required":["a"]}]}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"enum":[[1]]}}}`,
	} {
		doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
		if compileFast(doc) != nil {
			t.Errorf("fast path claims to handle %s", s)
		}
	}
}

func FuzzFastPathAgreesWithValidator(f *testing.F) {
	for _, in := range fastInputs {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, input string) {
		for _, s := range fastSchemas {
			checkAgreement(t, s, input)
		}
	})
}

// The byte path says yes wherever the decoded path does, but for what it
// leaves to the validator on purpose: escapes, repeated keys.
func TestAcceptsJSONAgreesOnPlainInput(t *testing.T) {
	for _, schema := range fastSchemas {
		doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
		fast := compileFast(doc)
		for _, in := range fastInputs {
			var v any
			if json.Unmarshal([]byte(in), &v) != nil || bytes.Contains([]byte(in), []byte(`\`)) || in == `{"file_path":"a","file_path":1}` {
				continue
			}
			if got, want := fast.acceptsJSON([]byte(in)), fast.accepts(v); got != want {
				t.Errorf("%s against %s: acceptsJSON %v, accepts %v", in, schema, got, want)
			}
		}
	}
}

// BenchmarkAcceptsJSON is the check every tool call's input takes: a
// no-op tool's input, and Read's.
func BenchmarkAcceptsJSON(b *testing.B) {
	for _, c := range []struct{ name, schema, input string }{
		{"small", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":1}`},
		{"read", fastSchemas[0], `{"file_path":"/home/user/project/internal/server/handler.go","offset":120,"limit":200}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(c.schema)))
			f, in := compileFast(doc), []byte(c.input)
			for b.Loop() {
				if !f.acceptsJSON(in) {
					b.Fatal("refused")
				}
			}
		})
	}
}

// The scanner reads the input once, checking that it is JSON: where the
// schema constrains nothing, the fast path says yes exactly where
// encoding/json says the input is valid (but for nesting past maxDepth,
// and a key given twice or with escapes, which it leaves to the
// validator).
var notJSON = []string{
	``, ` `, `x`, `"`, `"a`, "\"a\x01\"", "\"\t\"", `"\x"`, `"\u12"`, `"\u12g4"`, `"\`, `"\u"`,
	`0x1`, `01`, `-`, `-01`, `1.`, `.5`, `1e`, `1e+`, `1.e3`, `+1`, `1 2`, `- 1`, `--1`, `1ee2`, `Infinity`, `NaN`,
	`tru`, `truex`, `nul`, `nulll`, `f`, `fals`, `True`, `[`, `[1`, `[1,]`, `[,1]`, `[1 2]`, `]`, `[]]`,
	`{`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{1:1}`, `{a:1}`, `{"a":1}}`, `{}}`,
	`{"a":[1,{"b":[}]}`, `{"a":"b":1}`, "\"\xff\"", "[\"a\x00\"]",
}

var isJSON = []string{
	`0`, `-0`, `1`, `-1.5e+3`, `1E-2`, `0.0`, `123456789012345678901234567890`, `1e308`, `""`, `"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`,
	"\"\xff\xfe\"", `true`, `false`, `null`, `[]`, `[ ]`, `[1,"a",null,[],{}]`, `{}`, `{ "a" : { "b" : [ 1 , 2 ] } }`,
	`{"a":{"b":{"c":{"d":{"e":[[[[[]]]]]}}}}}`, "\t\n\r [1]\r\n",
}

func TestScannerIsJSON(t *testing.T) {
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"type":"object"}`)))
	f := compileFast(doc)
	for _, list := range [][]string{notJSON, isJSON} {
		for _, v := range list {
			in := []byte(`{"k":` + v + `}`)
			if got, want := f.acceptsJSON(in), json.Valid(in); got != want {
				t.Errorf("%q: the fast path says %v, encoding/json's json.Valid %v", in, got, want)
			}
		}
	}
	deep := bytes.Repeat([]byte("["), maxDepth+1)
	deep = append(deep, bytes.Repeat([]byte("]"), maxDepth+1)...)
	if in := append(append([]byte(`{"k":`), deep...), '}'); f.acceptsJSON(in) {
		t.Error("the fast path read input nested past maxDepth")
	}
	if in := []byte(`{"k":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`); !f.acceptsJSON(in) {
		t.Error("the fast path refused input nested to maxDepth")
	}
}

func FuzzScannerIsJSON(f *testing.F) {
	for _, v := range append(notJSON, isJSON...) {
		f.Add(v)
	}
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"type":"object"}`)))
	fast := compileFast(doc)
	f.Fuzz(func(t *testing.T, v string) {
		in := []byte(`{"k":` + v + `}`)
		got, want := fast.acceptsJSON(in), json.Valid(in)
		if got && !want {
			t.Fatalf("the fast path accepts %q, which is not JSON", in)
		}
		if !got && want && strings.Count(v, "[")+strings.Count(v, "{") < maxDepth && !strings.Contains(v, `\`) && !hasRepeatedKey(in) {
			t.Fatalf("the fast path refuses %q, which is JSON", in)
		}
	})
}

// hasRepeatedKey reports whether an object of in, a valid JSON text,
// has a key twice.
func hasRepeatedKey(in []byte) bool {
	d := json.NewDecoder(bytes.NewReader(in))
	var open []map[string]bool // per open object its keys so far; nil for an array
	expectKey := false
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				open = append(open, map[string]bool{})
				expectKey = true
				continue
			case '[':
				open = append(open, nil)
				expectKey = false
				continue
			}
			open = open[:len(open)-1]
		case string:
			if expectKey {
				if open[len(open)-1][v] {
					return true
				}
				open[len(open)-1][v] = true
				expectKey = false
				continue
			}
		}
		expectKey = len(open) > 0 && open[len(open)-1] != nil
	}
}
