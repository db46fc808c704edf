package tool

import (
	"bytes"
	"encoding/json"
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
