package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrInvalidValue is wrapped by Schema.Validate when a value is not JSON
// or does not satisfy the schema.
var ErrInvalidValue = errors.New("invalid value")

// Schema is a compiled JSON Schema of an object that checks values as the
// Registry checks tool input: the same validator, errors in the same
// words (one "at /field: …" per problem). The runtime checks a turn's
// structured answer with it (agent.Output).
type Schema struct {
	name string
	raw  json.RawMessage
	e    entry
}

// CompileSchema compiles raw, which must be a JSON Schema with "type":
// "object"; name names it in errors.
func CompileSchema(name string, raw json.RawMessage) (*Schema, error) {
	sch, fast, err := compileSchema(name, "schema", raw)
	if err != nil {
		return nil, err
	}
	return &Schema{name: name, raw: raw, e: entry{schema: sch, fast: fast}}, nil
}

// Raw returns the schema as it was given.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate checks v against the schema. The error wraps ErrInvalidValue
// and says what is wrong in words a model can act on.
func (s *Schema) Validate(v json.RawMessage) error {
	if len(bytes.TrimSpace(v)) == 0 {
		return fmt.Errorf("%w for %s: there is no JSON value", ErrInvalidValue, s.name)
	}
	return check(s.e.schema, s.e.fast, v, "the value is", func(what string) error {
		return fmt.Errorf("%w for %s: %s", ErrInvalidValue, s.name, what)
	})
}

// SchemaFor derives the JSON Schema of T as tool.New derives a tool's
// input schema: T must be a struct (the schema of an object).
func SchemaFor[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("cannot derive a schema from %v: %w", reflect.TypeFor[T](), err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("%v must be a struct (its schema type is %q, not an object)", reflect.TypeFor[T](), s.Type)
	}
	return json.Marshal(s)
}
