package elicit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/orca-agent/orca/elicit"
)

// The schema the MCP conformance suite's elicitation-sep1034-client-defaults
// scenario sends: an answer accepted without a value gets every default,
// each of its field's JSON type.
const sep1034 = `{"type": "object", "properties": {
	"name": {"type": "string", "description": "User name", "default": "John Doe"},
	"age": {"type": "integer", "description": "User age", "default": 30},
	"score": {"type": "number", "description": "User score", "default": 95.5},
	"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
	"verified": {"type": "boolean", "description": "Verification status", "default": true}},
	"required": []}`

func TestCompleteAppliesTheDefaults(t *testing.T) {
	f, err := elicit.ParseForm(json.RawMessage(sep1034))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !reflect.DeepEqual(got, []string{"name", "age", "score", "status", "verified"}) {
		t.Errorf("the fields, in the server's order: %v", got)
	}
	for _, content := range []map[string]any{nil, {}, {"age": nil}} {
		b, _ := json.Marshal(f.Complete(content))
		if want := `{"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}`; string(b) != want {
			t.Errorf("Complete(%v) = %s, want %s", content, b, want)
		}
	}
	// A value given stays; the others are filled in.
	got := f.Complete(map[string]any{"name": "Ada", "verified": false})
	if got["name"] != "Ada" || got["verified"] != false || got["age"] != int64(30) {
		t.Errorf("Complete kept and filled: %v", got)
	}
	if err := f.Check(got); err != nil {
		t.Errorf("the completed answer: %v", err)
	}
	// Complete copies: the form's defaults are not the answer's.
	got["age"] = int64(99)
	if f.Defaults()["age"] != int64(30) {
		t.Error("Complete handed out the form's own default")
	}
}

// The reference everything server's form: every kind the specification
// has — formats, bounds, the three single-select enums, the two
// multi-selects — read with its titles, defaults and required field.
func TestParseFormReadsEveryKind(t *testing.T) {
	f, err := elicit.ParseForm(json.RawMessage(everything))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]elicit.Kind{}
	for _, fl := range f.Fields {
		kinds[fl.Name] = fl.Kind
	}
	want := map[string]elicit.Kind{"name": "string", "check": "boolean", "firstLine": "string", "email": "string", "integer": "integer",
		"number": "number", "untitled": "enum", "titled": "enum", "legacy": "enum", "instruments": "multi", "fish": "multi"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	field := func(name string) elicit.Field {
		for _, fl := range f.Fields {
			if fl.Name == name {
				return fl
			}
		}
		t.Fatalf("no field %s", name)
		return elicit.Field{}
	}
	if fl := field("name"); !fl.Required || fl.Title != "String" {
		t.Errorf("name: %+v", fl)
	}
	if fl := field("legacy"); fl.Options[1] != (elicit.Option{Value: "pet-2", Title: "Dogs"}) || fl.Default != "pet-1" {
		t.Errorf("legacy enumNames: %+v", fl)
	}
	if fl := field("titled"); fl.Options[0] != (elicit.Option{Value: "hero-1", Title: "Superman"}) {
		t.Errorf("oneOf: %+v", fl)
	}
	if fl := field("fish"); !reflect.DeepEqual(fl.Default, []string{"fish-1"}) || fl.Options[2].Title != "Trout" || *fl.MaxItems != 3 {
		t.Errorf("anyOf multi-select: %+v", fl)
	}
	if fl := field("integer"); fl.Default != int64(42) || *fl.Minimum != 1 || *fl.Maximum != 100 {
		t.Errorf("integer: %+v", fl)
	}
	// Only name is required and has no default: accepting without it is
	// not an answer, with it the defaults complete one.
	var fe *elicit.FieldError
	if err := f.Check(f.Complete(nil)); !errors.As(err, &fe) || fe.Field != "name" || !strings.Contains(err.Error(), "required") {
		t.Errorf("no name: %v", err)
	}
	if err := f.Check(f.Complete(map[string]any{"name": "Ada"})); err != nil {
		t.Errorf("with a name: %v", err)
	}
}

const everything = `{"type": "object", "properties": {
	"name": {"title": "String", "type": "string", "description": "Your full, legal name"},
	"check": {"title": "Boolean", "type": "boolean"},
	"firstLine": {"type": "string", "default": "It was a dark and stormy night."},
	"email": {"type": "string", "format": "email"},
	"integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
	"number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 3.14},
	"untitled": {"type": "string", "enum": ["Monica", "Rachel", "Joey"], "default": "Monica"},
	"titled": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Green Lantern"}], "default": "hero-1"},
	"legacy": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"], "default": "pet-1"},
	"instruments": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums"]}, "default": ["Guitar"]},
	"fish": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}, {"const": "fish-3", "title": "Trout"}]}, "default": ["fish-1"]}},
	"required": ["name"]}`

// What a person types is read as the field's kind, or refused with what
// the field wants — the terminal asks again with that.
func TestFieldParse(t *testing.T) {
	f, err := elicit.ParseForm(json.RawMessage(everything))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*elicit.Field{}
	for i := range f.Fields {
		byName[f.Fields[i].Name] = &f.Fields[i]
	}
	for _, c := range []struct {
		field, text string
		want        any
		err         string
	}{
		{"name", "  Ada Lovelace ", "Ada Lovelace", ""},
		{"check", "y", true, ""},
		{"check", "No", false, ""},
		{"check", "maybe", nil, "want yes or no"},
		{"integer", "7", int64(7), ""},
		{"integer", "7.5", nil, "want a whole number"},
		{"integer", "0", nil, "want at least 1"},
		{"integer", "101", nil, "want at most 100"},
		{"number", "2.5", 2.5, ""},
		{"number", "NaN", nil, "want a number"},
		{"number", "lots", nil, "want a number"},
		{"email", "ada@example.com", "ada@example.com", ""},
		{"email", "ada at example", nil, "not an email address"},
		{"untitled", "2", "Rachel", ""},
		{"untitled", "joey", "Joey", ""},
		{"untitled", "Ross", nil, "not one of the choices (1) Monica, 2) Rachel, 3) Joey)"},
		{"titled", "Green Lantern", "hero-2", ""},
		{"titled", "hero-1", "hero-1", ""},
		{"legacy", "dogs", "pet-2", ""},
		{"instruments", "1, Drums", []string{"Guitar", "Drums"}, ""},
		{"instruments", "", nil, "choose at least 1"},
		{"instruments", "1,2,3,4", nil, "choose at most 3"},
		{"instruments", "1, Guitar", nil, "chosen twice"},
		{"fish", "Salmon,3", []string{"fish-2", "fish-3"}, ""},
	} {
		got, err := byName[c.field].Parse(c.text)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %q: error %v, want %q", c.field, c.text, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s %q: %v", c.field, c.text, err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("%s %q = %#v, want %#v", c.field, c.text, got, c.want)
		}
	}
	if got := byName["fish"].Text([]any{"fish-1", "fish-3"}); got != "Tuna, Trout" {
		t.Errorf("Text of a multi-select: %q", got)
	}
	if got := byName["check"].Text(true); got != "yes" {
		t.Errorf("Text of a boolean: %q", got)
	}
}

// An answer from JSON (a hook's, the API's) is checked field by field:
// numbers as JSON decodes them, an unknown field, a wrong type, a choice
// not offered.
func TestFormCheck(t *testing.T) {
	f, err := elicit.ParseForm(json.RawMessage(everything))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct{ content, field, err string }{
		{`{"name": "Ada", "integer": 5, "number": 1e2, "instruments": ["Piano"], "check": false}`, "", ""},
		{`{"name": "Ada", "nickname": "A"}`, "nickname", "no such field"},
		{`{"name": 3}`, "name", "want a string, got a number"},
		{`{"name": "Ada", "integer": 5.5}`, "integer", "whole number"},
		{`{"name": "Ada", "check": "yes"}`, "check", "want true or false"},
		{`{"name": "Ada", "titled": "Superman"}`, "titled", "not one of the choices"},
		{`{"name": "Ada", "fish": "fish-1"}`, "fish", "want a list"},
		{`{"name": "Ada", "fish": [1]}`, "fish", "holding a number"},
		{`{}`, "name", "required"},
	} {
		err := f.Check(decode(c.content))
		var fe *elicit.FieldError
		if c.err == "" {
			if err != nil {
				t.Errorf("%s: %v", c.content, err)
			}
			continue
		}
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want field %s: %s", c.content, err, c.field, c.err)
		}
	}
}

// Odd schemas from a server are an error naming what is wrong, or a form
// — never a panic; a default the field would not take is left out.
func TestParseFormOddSchemas(t *testing.T) {
	for _, c := range []struct{ schema, err string }{
		{``, ""},
		{`null`, ""},
		{`{}`, ""},
		{`{"type": "object"}`, ""},
		{`{"type": ["object", "null"], "properties": {"a": {"type": ["string", "null"]}}}`, ""},
		{`[]`, "not a JSON Schema of an object"},
		{`"form"`, "not a JSON Schema of an object"},
		{`{"type": "string"}`, "not of an object"},
		{`{"type": 7}`, "not of an object"},
		{`{"properties": []}`, "properties are not an object"},
		{`{"properties": {"a": true}}`, `field "a": not a schema`},
		{`{"properties": {"a": {}}}`, "no type"},
		{`{"properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}`, `type "object" is not one a form can ask for`},
		{`{"properties": {"a": {"type": "array"}}}`, "an array of no items"},
		{`{"properties": {"a": {"type": "array", "items": {"type": "string"}}}}`, "without choices"},
		{`{"properties": {"a": {"type": "string", "enum": [1, 2]}}}`, "enum value 1 is not a string"},
		{`{"properties": {"a": {"type": "string", "oneOf": [{"title": "x"}]}}}`, "its const is not a string"},
		{`{"properties": {"a": {"type": "string", "maxLength": -1}}}`, "negative length"},
		{`{"properties": {"a": {"type": "string", "title": 5}}}`, "not a schema"},
		{`{"properties": {"a": {"type": "string"}, "a": {"type": "string"}}}`, "twice"},
	} {
		f, err := elicit.ParseForm(json.RawMessage(c.schema))
		switch {
		case c.err == "" && (err != nil || f == nil):
			t.Errorf("%s: %v", c.schema, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.schema, err, c.err)
		}
	}
	f, err := elicit.ParseForm(json.RawMessage(`{"properties": {
		"n": {"type": "integer", "default": 2.5}, "e": {"type": "string", "enum": ["a"], "default": "b"},
		"m": {"type": "number", "maximum": 1, "default": 3}, "s": {"type": "string", "default": 4}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Defaults(); d != nil {
		t.Errorf("defaults the fields would not take were kept: %v", d)
	}
}

func FuzzParseForm(f *testing.F) {
	for _, s := range []string{sep1034, everything, `{"properties": {"a": {"type": "array", "items": {"anyOf": [{"const": "x"}]}}}}`, `{"properties": {"a": {"type": "integer", "minimum": 1e400}}}`} {
		f.Add(s, "1, 2")
	}
	f.Fuzz(func(t *testing.T, schema, typed string) {
		form, err := elicit.ParseForm(json.RawMessage(schema))
		if err != nil {
			return
		}
		content := form.Complete(nil)
		for i := range form.Fields {
			fl := &form.Fields[i]
			if v, err := fl.Parse(typed); err == nil {
				if err := fl.Check(v); err != nil {
					t.Fatalf("%s: Parse(%q) gave %#v, which Check refuses: %v", fl.Name, typed, v, err)
				}
				content[fl.Name] = v
				_ = fl.Text(v)
			}
		}
		_ = form.Check(content)
		if _, err := json.Marshal(content); err != nil {
			t.Fatalf("content does not encode: %v", err)
		}
	})
}

func ExampleForm_Complete() {
	form, _ := elicit.ParseForm(json.RawMessage(`{"type": "object", "properties": {
		"city": {"type": "string", "default": "Paris"},
		"nights": {"type": "integer", "minimum": 1, "default": 2}}}`))
	nights := &form.Fields[1]
	n, err := nights.Parse("0")
	fmt.Println(n, err)
	n, _ = nights.Parse("3")
	b, _ := json.Marshal(form.Complete(map[string]any{"nights": n}))
	fmt.Println(string(b))
	// Output:
	// <nil> want at least 1, got 0
	// {"city":"Paris","nights":3}
}
