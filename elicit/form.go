package elicit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Form is the form a requested schema describes: the MCP specification's
// restricted JSON Schema, a flat object of primitive fields — strings
// (with a format: email, uri, date, date-time), numbers, integers,
// booleans, single-select enums (enum, enum with enumNames, oneOf of
// const and title) and multi-select ones (an array of such items) — each
// with an optional default (SEP-1034).
type Form struct {
	// Fields are the schema's properties, in the order the server wrote
	// them.
	Fields []Field `json:"fields"`
}

// Kind is what a field takes.
type Kind string

// Kinds.
const (
	KindString  Kind = "string"
	KindNumber  Kind = "number"
	KindInteger Kind = "integer"
	KindBoolean Kind = "boolean"
	// KindEnum takes one of Options' values, KindMulti a list of them.
	KindEnum  Kind = "enum"
	KindMulti Kind = "multi"
)

// Field is one field of a Form. Its JSON form is what orca serve's API
// shows a page to draw the form with.
type Field struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Kind        Kind   `json:"kind"`
	// Format is a string's: email, uri, date or date-time.
	Format   string `json:"format,omitempty"`
	Required bool   `json:"required,omitempty"`
	// Default is the schema's default, of the field's kind (string,
	// float64 or int64, bool, []string); nil if it has none, or one the
	// field would not take.
	Default any      `json:"default,omitempty"`
	Options []Option `json:"options,omitempty"`
	// The bounds the schema sets: a number's, a string's length (in
	// characters), a multi-select's count.
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinLength *int     `json:"min_length,omitempty"`
	MaxLength *int     `json:"max_length,omitempty"`
	MinItems  *int     `json:"min_items,omitempty"`
	MaxItems  *int     `json:"max_items,omitempty"`
}

// Option is one choice of an enum: its value, and the title a person
// reads (the value when the schema gives none).
type Option struct {
	Value string `json:"value"`
	Title string `json:"title"`
}

// FieldError is an answer's problem with one field.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

// property is a property's schema as a requested schema may write it.
type property struct {
	Type        json.RawMessage   `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Format      string            `json:"format"`
	MinLength   *int              `json:"minLength"`
	MaxLength   *int              `json:"maxLength"`
	Minimum     *float64          `json:"minimum"`
	Maximum     *float64          `json:"maximum"`
	MinItems    *int              `json:"minItems"`
	MaxItems    *int              `json:"maxItems"`
	Enum        []json.RawMessage `json:"enum"`
	EnumNames   []string          `json:"enumNames"`
	OneOf       []titled          `json:"oneOf"`
	AnyOf       []titled          `json:"anyOf"`
	Items       *property         `json:"items"`
	Default     json.RawMessage   `json:"default"`
}

type titled struct {
	Const json.RawMessage `json:"const"`
	Title string          `json:"title"`
}

// ParseForm reads a requested schema (empty or null: a form of no
// fields). A schema it cannot show — not an object, a field of a type the
// specification does not allow, a nested object — is an error naming the
// field; nothing a server sends makes it panic. A default the field would
// not take is left out.
func ParseForm(schema json.RawMessage) (*Form, error) {
	schema = bytes.TrimSpace(schema)
	if len(schema) == 0 || string(schema) == "null" {
		return &Form{}, nil
	}
	var top struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("the requested schema is not a JSON Schema of an object: %v", err)
	}
	if typ, err := typeOf(top.Type); err != nil || typ != "" && typ != "object" {
		return nil, fmt.Errorf("the requested schema is not of an object (type %s)", clipJSON(top.Type))
	}
	f := &Form{}
	props := bytes.TrimSpace(top.Properties)
	if len(props) == 0 || string(props) == "null" {
		return f, nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("the requested schema's properties are not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the requested schema's properties: %v", err)
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("the requested schema's property %q: %v", name, err)
		}
		if slices.ContainsFunc(f.Fields, func(x Field) bool { return x.Name == name }) {
			return nil, fmt.Errorf("the requested schema has the property %q twice", name)
		}
		fl, err := parseField(name, raw)
		if err != nil {
			return nil, &FieldError{Field: name, Err: err}
		}
		fl.Required = slices.Contains(top.Required, name)
		f.Fields = append(f.Fields, fl)
	}
	return f, nil
}

// typeOf reads a schema's type: a string, or a list of them of which the
// first that is not "null" counts.
func typeOf(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("type %s is neither a string nor a list of them", clipJSON(raw))
	}
	for _, t := range list {
		if t != "null" {
			return t, nil
		}
	}
	return "", nil
}

func parseField(name string, raw json.RawMessage) (Field, error) {
	var p property
	if err := json.Unmarshal(raw, &p); err != nil {
		return Field{}, fmt.Errorf("not a schema orca can show: %v", err)
	}
	typ, err := typeOf(p.Type)
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name, Title: p.Title, Description: p.Description, Format: p.Format,
		Minimum: p.Minimum, Maximum: p.Maximum, MinLength: p.MinLength, MaxLength: p.MaxLength, MinItems: p.MinItems, MaxItems: p.MaxItems}
	for _, n := range []*int{p.MinLength, p.MaxLength, p.MinItems, p.MaxItems} {
		if n != nil && *n < 0 {
			return Field{}, fmt.Errorf("a negative length (%d)", *n)
		}
	}
	for _, x := range []*float64{p.Minimum, p.Maximum} {
		if x != nil && (math.IsNaN(*x) || math.IsInf(*x, 0)) {
			return Field{}, errors.New("a bound that is not a number")
		}
	}
	switch {
	case typ == "array":
		if p.Items == nil {
			return Field{}, errors.New("an array of no items: a multi-select needs items with enum or anyOf")
		}
		f.Kind = KindMulti
		f.Options, err = options(p.Items.Enum, p.Items.EnumNames, append(p.Items.AnyOf, p.Items.OneOf...))
		if err == nil && len(f.Options) == 0 {
			err = errors.New("a multi-select without choices (items need enum or anyOf)")
		}
	case (typ == "string" || typ == "") && (len(p.Enum) > 0 || len(p.OneOf) > 0):
		f.Kind = KindEnum
		f.Options, err = options(p.Enum, p.EnumNames, p.OneOf)
	case typ == "string":
		f.Kind = KindString
	case typ == "number":
		f.Kind = KindNumber
	case typ == "integer":
		f.Kind = KindInteger
	case typ == "boolean":
		f.Kind = KindBoolean
	case typ == "":
		err = errors.New("it has no type")
	default:
		err = fmt.Errorf("type %q is not one a form can ask for (string, number, integer, boolean, or an enum)", typ)
	}
	if err != nil {
		return Field{}, err
	}
	if d := bytes.TrimSpace(p.Default); len(d) > 0 && string(d) != "null" {
		if v, err := f.decode(d); err == nil && f.Check(v) == nil {
			f.Default = v
		}
	}
	return f, nil
}

// options reads an enum's choices: enum (with enumNames as their titles,
// when there are as many), else oneOf/anyOf entries of const and title.
func options(enum []json.RawMessage, names []string, entries []titled) ([]Option, error) {
	var out []Option
	for i, raw := range enum {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("enum value %s is not a string", clipJSON(raw))
		}
		title := v
		if len(names) == len(enum) && names[i] != "" {
			title = names[i]
		}
		out = append(out, Option{Value: v, Title: title})
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, e := range entries {
		var v string
		if err := json.Unmarshal(e.Const, &v); err != nil {
			return nil, fmt.Errorf("choice %s: its const is not a string", clipJSON(e.Const))
		}
		out = append(out, Option{Value: v, Title: cmp.Or(e.Title, v)})
	}
	return out, nil
}

// decode reads raw as a value of the field's kind.
func (f *Field) decode(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return f.normal(v)
}

// normal returns v as the field's kind holds it (float64 or int64,
// []string), or an error naming what v is.
func (f *Field) normal(v any) (any, error) {
	switch f.Kind {
	case KindString, KindEnum:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("want a string, got %s", describe(v))
	case KindBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("want true or false, got %s", describe(v))
	case KindNumber, KindInteger:
		x, ok := number(v)
		if !ok {
			return nil, fmt.Errorf("want a number, got %s", describe(v))
		}
		if f.Kind == KindInteger {
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, fmt.Errorf("want a whole number, got %v", x)
			}
			return int64(x), nil
		}
		return x, nil
	case KindMulti:
		switch l := v.(type) {
		case []string:
			return slices.Clone(l), nil
		case []any:
			out := make([]string, 0, len(l))
			for _, x := range l {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("want a list of strings, got one holding %s", describe(x))
				}
				out = append(out, s)
			}
			return out, nil
		}
		return nil, fmt.Errorf("want a list of choices, got %s", describe(v))
	}
	return nil, fmt.Errorf("a field of kind %q", f.Kind)
}

// number returns v as a finite float64, if it is a number.
func number(v any) (float64, bool) {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case float32:
		x = float64(n)
	case int:
		x = float64(n)
	case int64:
		x = float64(n)
	case int32:
		x = float64(n)
	case json.Number:
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		x = f
	default:
		return 0, false
	}
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any, []string:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// Check reports what is wrong with v as the field's value.
func (f *Field) Check(v any) error {
	n, err := f.normal(v)
	if err != nil {
		return err
	}
	switch f.Kind {
	case KindString:
		s := n.(string)
		l := utf8.RuneCountInString(s)
		if f.MinLength != nil && l < *f.MinLength {
			return fmt.Errorf("want at least %d characters, got %d", *f.MinLength, l)
		}
		if f.MaxLength != nil && l > *f.MaxLength {
			return fmt.Errorf("want at most %d characters, got %d", *f.MaxLength, l)
		}
		return checkFormat(f.Format, s)
	case KindNumber, KindInteger:
		x, _ := number(n)
		if f.Minimum != nil && x < *f.Minimum {
			return fmt.Errorf("want at least %s, got %s", fmtNum(*f.Minimum), fmtNum(x))
		}
		if f.Maximum != nil && x > *f.Maximum {
			return fmt.Errorf("want at most %s, got %s", fmtNum(*f.Maximum), fmtNum(x))
		}
	case KindEnum:
		if !f.has(n.(string)) {
			return fmt.Errorf("%q is not one of the choices (%s)", n, f.choices())
		}
	case KindMulti:
		l := n.([]string)
		for i, s := range l {
			if !f.has(s) {
				return fmt.Errorf("%q is not one of the choices (%s)", s, f.choices())
			}
			if slices.Contains(l[:i], s) {
				return fmt.Errorf("%q is chosen twice", s)
			}
		}
		if f.MinItems != nil && len(l) < *f.MinItems {
			return fmt.Errorf("choose at least %d, got %d", *f.MinItems, len(l))
		}
		if f.MaxItems != nil && len(l) > *f.MaxItems {
			return fmt.Errorf("choose at most %d, got %d", *f.MaxItems, len(l))
		}
	}
	return nil
}

func (f *Field) has(v string) bool {
	return slices.ContainsFunc(f.Options, func(o Option) bool { return o.Value == v })
}

// choices lists the options, numbered as Parse takes them.
func (f *Field) choices() string {
	s := make([]string, len(f.Options))
	for i, o := range f.Options {
		s[i] = strconv.Itoa(i+1) + ") " + o.Title
		if o.Title != o.Value {
			s[i] += " [" + o.Value + "]"
		}
	}
	return strings.Join(s, ", ")
}

func checkFormat(format, s string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s || a.Name != "" {
			return fmt.Errorf("%q is not an email address", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || strings.ContainsAny(s, " \t\n") {
			return fmt.Errorf("%q is not an absolute URI (such as https://example.com)", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("%q is not a date and time (such as 2026-05-01T10:00:00Z)", s)
		}
	}
	return nil
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Parse reads what a person typed for the field: a number, yes or no,
// a choice by its number in the list, its value or its title (a
// multi-select: several, separated by commas), and checks it. Empty text
// is the caller's to decide (keep the default, leave the field out).
func (f *Field) Parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	var v any
	switch f.Kind {
	case KindString:
		v = text
	case KindInteger:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a whole number, such as 42; got %q", text)
		}
		v = n
	case KindNumber:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("want a number, such as 3.5; got %q", text)
		}
		v = x
	case KindBoolean:
		switch strings.ToLower(text) {
		case "y", "yes", "true", "1", "on":
			v = true
		case "n", "no", "false", "0", "off":
			v = false
		default:
			return nil, fmt.Errorf("want yes or no; got %q", text)
		}
	case KindEnum:
		o, err := f.pick(text)
		if err != nil {
			return nil, err
		}
		v = o
	case KindMulti:
		l := []string{}
		for _, part := range strings.Split(text, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			o, err := f.pick(part)
			if err != nil {
				return nil, err
			}
			l = append(l, o)
		}
		v = l
	default:
		return nil, fmt.Errorf("a field of kind %q", f.Kind)
	}
	if err := f.Check(v); err != nil {
		return nil, err
	}
	return v, nil
}

// pick finds the option s names: its number, its value, or its title
// (any case).
func (f *Field) pick(s string) (string, error) {
	for _, o := range f.Options {
		if o.Value == s {
			return o.Value, nil
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.Options) {
		return f.Options[n-1].Value, nil
	}
	for _, o := range f.Options {
		if strings.EqualFold(o.Title, s) || strings.EqualFold(o.Value, s) {
			return o.Value, nil
		}
	}
	return "", fmt.Errorf("%q is not one of the choices (%s)", s, f.choices())
}

// Text is v as a person reads it: yes or no, a choice's title, a list
// separated by commas.
func (f *Field) Text(v any) string {
	n, err := f.normal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	switch x := n.(type) {
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return fmtNum(x)
	case []string:
		s := make([]string, len(x))
		for i, v := range x {
			s[i] = f.title(v)
		}
		return strings.Join(s, ", ")
	case string:
		if f.Kind == KindEnum {
			return f.title(x)
		}
		return x
	}
	return fmt.Sprint(v)
}

func (f *Field) title(v string) string {
	for _, o := range f.Options {
		if o.Value == v {
			return o.Title
		}
	}
	return v
}

// Defaults returns the fields' defaults, by name (nil if none has one).
func (f *Form) Defaults() map[string]any {
	var out map[string]any
	for _, fl := range f.Fields {
		if fl.Default != nil {
			if out == nil {
				out = map[string]any{}
			}
			out[fl.Name] = cloneValue(fl.Default)
		}
	}
	return out
}

// Complete returns content with the default of every field it leaves out
// (or null), as SEP-1034 has a client fill them in: a copy, never content
// itself.
func (f *Form) Complete(content map[string]any) map[string]any {
	out := make(map[string]any, len(content)+len(f.Fields))
	for k, v := range content {
		if v != nil {
			out[k] = v
		}
	}
	for _, fl := range f.Fields {
		if _, ok := out[fl.Name]; !ok && fl.Default != nil {
			out[fl.Name] = cloneValue(fl.Default)
		}
	}
	return out
}

func cloneValue(v any) any {
	if l, ok := v.([]string); ok {
		return slices.Clone(l)
	}
	return v
}

// Check reports the first thing wrong with content as the form's answer,
// as a *FieldError: a field the form does not have, a required one left
// out, a value the field does not take.
func (f *Form) Check(content map[string]any) error {
	for _, k := range sortedKeys(content) {
		if !slices.ContainsFunc(f.Fields, func(fl Field) bool { return fl.Name == k }) {
			return &FieldError{Field: k, Err: errors.New("the form has no such field")}
		}
	}
	for i := range f.Fields {
		fl := &f.Fields[i]
		v, ok := content[fl.Name]
		if !ok || v == nil {
			if fl.Required {
				return &FieldError{Field: fl.Name, Err: errors.New("it is required")}
			}
			continue
		}
		if err := fl.Check(v); err != nil {
			return &FieldError{Field: fl.Name, Err: err}
		}
	}
	return nil
}

// Names returns the fields' names, in order.
func (f *Form) Names() []string {
	out := make([]string, len(f.Fields))
	for i, fl := range f.Fields {
		out[i] = fl.Name
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clipJSON shortens raw for a message.
func clipJSON(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "(none)"
	}
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}
