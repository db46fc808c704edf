package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Option configures a typed tool.
type Option func(*typedConfig)

type typedConfig struct {
	schema json.RawMessage
}

// WithSchema replaces the schema derived from the input type with raw, for
// tools that need what Go types cannot say (enums, bounds, examples). The
// input must still decode into the Go type.
func WithSchema(raw json.RawMessage) Option {
	return func(c *typedConfig) { c.schema = raw }
}

// New returns a tool whose input schema is derived from In (a struct: field
// names from `json` tags, descriptions from `jsonschema` tags, fields
// without omitempty required) and whose input is decoded into In before fn
// runs.
//
// What fn returns becomes the observation: a string or a Result as is, any
// other value as JSON. An error becomes an error observation carrying its
// text. fn can learn the session it serves with CallFrom(ctx).
//
// If no schema can be derived from In, New still returns a tool, and adding
// it to a Registry fails with the reason.
func New[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) Tool {
	t := &typed[In, Out]{name: name, description: description, fn: fn}
	var cfg typedConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.schema != nil {
		t.schema = cfg.schema
		return t
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		t.bad = fmt.Errorf("tool %q: cannot derive an input schema from %v: %w", name, reflect.TypeFor[In](), err)
		return t
	}
	if s.Type != "object" {
		t.bad = fmt.Errorf("tool %q: input type %v must be a struct (its schema type is %q, tools take objects)", name, reflect.TypeFor[In](), s.Type)
		return t
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.bad = fmt.Errorf("tool %q: encode input schema: %w", name, err)
		return t
	}
	t.schema = raw
	return t
}

type typed[In, Out any] struct {
	name, description string
	schema            json.RawMessage
	fn                func(context.Context, In) (Out, error)
	bad               error
}

func (t *typed[In, Out]) Name() string            { return t.name }
func (t *typed[In, Out]) Description() string     { return t.description }
func (t *typed[In, Out]) Schema() json.RawMessage { return t.schema }
func (t *typed[In, Out]) err() error              { return t.bad }

func (t *typed[In, Out]) Execute(ctx context.Context, call *Call) Result {
	if t.bad != nil {
		return Result{Content: t.bad.Error(), IsError: true}
	}
	var in In
	if len(call.Input) > 0 {
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return Errorf("%v for %s: %v", ErrInvalidInput, t.name, err)
		}
	}
	out, err := t.fn(WithCall(ctx, call), in)
	if err != nil {
		return Result{Content: err.Error(), IsError: true}
	}
	switch v := any(out).(type) {
	case string:
		return Result{Content: v}
	case Result:
		return v
	case *Result:
		if v == nil {
			return Result{}
		}
		return *v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Errorf("tool %s: encode output: %v", t.name, err)
	}
	return Result{Content: string(b)}
}
