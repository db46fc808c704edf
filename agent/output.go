package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/internal/names"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

// Output asks a turn for its answer as a JSON value of a schema — a value
// a program decodes (Result.Decode) rather than prose. Set it on the
// Definition for every turn, or on the Request for one.
//
// The runtime asks through the provider's own mechanism where the client
// has one (llm.OutputNative: Anthropic's output_config.format, OpenAI's
// response_format json_schema, strict when the schema allows it, the
// scripted model's Output responses); to any other client it offers a
// final-answer tool (OutputToolName) whose input is the answer. Either
// way the answer is checked with the validator tool input is checked
// with. One that does not hold goes back to the model with what is wrong,
// at most MaxOutputCorrections times; then the turn ends failed with the
// last errors (ErrInvalidOutput). A turn never ends answered with a value
// that does not hold. Tools may be called in the same turn as usual.
type Output struct {
	// Name names the schema for the provider: letters, digits, _ and -
	// ("answer" if empty).
	Name string
	// Schema is a JSON Schema of an object.
	Schema json.RawMessage
}

// OutputFor returns the Output of the Go type T, a struct, its schema
// derived as tool.New derives a tool's input schema (field tags
// `json:"…"` and `jsonschema:"description"`).
func OutputFor[T any]() (*Output, error) {
	raw, err := tool.SchemaFor[T]()
	if err != nil {
		return nil, fmt.Errorf("agent: output: %w", err)
	}
	return &Output{Schema: raw}, nil
}

// ReadOutput reads the Output of a JSON Schema file, such as orca run's
// --output-schema FILE: at most 1 MiB (a byte order mark before it is
// dropped), named after the file (its base name without the extension,
// other characters than letters, digits, _ and - made _), checked as Check
// checks it.
func ReadOutput(path string) (*Output, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > 1<<20 {
		return nil, fmt.Errorf("%s: %d bytes, at most 1 MiB", path, fi.Size())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	raw = bytes.TrimPrefix(raw, []byte("\uFEFF")) // a byte order mark a Windows editor wrote
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if len(name) > 64 {
		name = name[:64]
	}
	o := &Output{Name: name, Schema: raw}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// Check reports what a turn would refuse in o before it asks the model:
// a name other than letters, digits, _ and - (at most 64), a schema that
// is not JSON or does not compile. A server checks its users' schemas
// with it.
func (o *Output) Check() error {
	_, err := compileOutput(o, nil)
	return err
}

// MaxOutputCorrections caps how many times one turn's answer that does
// not hold goes back to the model.
const MaxOutputCorrections = 2

// OutputToolName is the final-answer tool offered for Output to a client
// with no mechanism of its own.
const OutputToolName = "StructuredOutput"

// ErrInvalidOutput is wrapped by the error of a turn whose answer still
// did not hold after MaxOutputCorrections corrections.
var ErrInvalidOutput = errors.New("the answer does not match the output schema")

// output is an Output compiled for a turn.
type output struct {
	req    *llm.Output
	schema *tool.Schema
	// def is the final-answer tool, for a client without a mechanism.
	def *llm.ToolDefinition
}

func compileOutput(o *Output, client llm.Client) (*output, error) {
	name := o.Name
	if name == "" {
		name = "answer"
	}
	if !names.Token(name) {
		return nil, fmt.Errorf("output name %q: letters, digits, _ and - only, at most 64", name)
	}
	s, err := tool.CompileSchema("output "+name, o.Schema)
	if err != nil {
		return nil, err
	}
	out := &output{schema: s}
	if llm.HasNativeOutput(client) {
		out.req = &llm.Output{Name: name, Schema: o.Schema, Strict: strictable(o.Schema)}
	} else {
		out.def = &llm.ToolDefinition{Name: OutputToolName, InputSchema: o.Schema,
			Description: "Give your final answer with this tool: call it once, when you are done, with the answer as its input. Do not answer in text."}
	}
	return out, nil
}

// value checks an answer in text: the JSON value alone (a Markdown code
// fence around it is tolerated). It returns the value, compacted, or what
// is wrong.
func (o *output) value(text string) (json.RawMessage, error) {
	text = strings.TrimSpace(text)
	if body, ok := strings.CutPrefix(text, "```"); ok {
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			if inner, ok := strings.CutSuffix(strings.TrimSpace(body[nl+1:]), "```"); ok {
				text = strings.TrimSpace(inner)
			}
		}
	}
	return o.check(json.RawMessage(text))
}

func (o *output) check(v json.RawMessage) (json.RawMessage, error) {
	if err := o.schema.Validate(v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// correction is what the model is told of an answer that did not hold.
func (o *output) correction(err error) string {
	if o.def != nil {
		return fmt.Sprintf("Your answer must be given with the %s tool, its input matching its schema. %v. Call %s with the corrected answer.", OutputToolName, err, OutputToolName)
	}
	return fmt.Sprintf("Your answer must be a JSON value matching the required schema, and nothing else. It is not: %v. Answer again with the corrected JSON value alone.", err)
}

// strictable reports whether OpenAI's strict mode can hold schema: every
// object schema in it lists all its properties as required and allows no
// others.
func strictable(schema json.RawMessage) bool {
	var doc any
	if json.Unmarshal(schema, &doc) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(n any) bool {
		switch n := n.(type) {
		case map[string]any:
			if props, ok := n["properties"].(map[string]any); ok {
				if n["additionalProperties"] != false {
					return false
				}
				req, _ := n["required"].([]any)
				if len(req) != len(props) {
					return false
				}
				for _, r := range req {
					if _, ok := props[fmt.Sprint(r)]; !ok {
						return false
					}
				}
			}
			for _, v := range n {
				if !walk(v) {
					return false
				}
			}
		case []any:
			for _, v := range n {
				if !walk(v) {
					return false
				}
			}
		}
		return true
	}
	return walk(doc)
}

// Decode decodes the turn's structured answer (Result.Output) into v.
// It fails when the turn gave none: it asked for no Output, or did not
// end answered.
func (r *Result) Decode(v any) error {
	if len(r.Output) == 0 {
		return fmt.Errorf("agent: the turn gave no structured answer (it ended %s)", r.StopReason)
	}
	return json.Unmarshal(r.Output, v)
}

// typedOutput is the turn's Output (out; nil: a text answer);
// corrections counts the answers sent back for not holding to it; given
// is the value the final-answer tool accepted, outputErr why it refused
// one.
type typedOutput struct {
	out         *output
	corrections int
	given       json.RawMessage
	outputErr   error
}
