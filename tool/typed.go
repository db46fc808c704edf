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
	schema        json.RawMessage
	traits        Traits
	reads, writes []string
	command       string
	display       func(json.RawMessage) Display
}

// WithSchema replaces the schema derived from the input type with raw, for
// tools that need what Go types cannot say (enums, bounds, examples). The
// input must still decode into the Go type.
func WithSchema(raw json.RawMessage) Option {
	return func(c *typedConfig) { c.schema = raw }
}

// ReadOnly declares the tool read-only (Traits.ReadOnly): it changes
// nothing, so the permission modes that ask before changes let it run.
func ReadOnly() Option { return func(c *typedConfig) { c.traits.ReadOnly = true } }

// Idempotent declares that running a call twice has the effect of running
// it once (Traits.Idempotent).
func Idempotent() Option { return func(c *typedConfig) { c.traits.Idempotent = true } }

// Elicits declares that a call of the tool may ask the person a question
// (Traits.Elicits): it finds the turn's Elicitor with elicit.From.
func Elicits() Option { return func(c *typedConfig) { c.traits.Elicits = true } }

// Reports declares that a call of the tool says how far it has come
// (Traits.Reports), with Report.
func Reports() Option { return func(c *typedConfig) { c.traits.Reports = true } }

// Aliases declares other names the tool goes by (Traits.Aliases): rules,
// hook matchers and subagent tool lists may name it by them, and a
// model's call of one runs the tool.
func Aliases(names ...string) Option {
	return func(c *typedConfig) { c.traits.Aliases = append(c.traits.Aliases, names...) }
}

// Reads names the input fields that hold paths the tool reads: the policy
// matches Read(...) rules and the workspace's protection against them.
func Reads(fields ...string) Option {
	return func(c *typedConfig) { c.reads = append(c.reads, fields...) }
}

// Writes names the input fields that hold paths the tool writes: the
// policy matches Edit(...) rules, accept-edits mode and protection
// against them.
func Writes(fields ...string) Option {
	return func(c *typedConfig) { c.writes = append(c.writes, fields...) }
}

// RunsCommand names the input field that holds a shell command line the
// tool runs: the policy judges it as parsed shell, as it does Bash's.
func RunsCommand(field string) Option { return func(c *typedConfig) { c.command = field } }

// WithDisplay says how a call is shown in UIs (see Display); without it,
// a call is shown by its arguments.
func WithDisplay(fn func(input json.RawMessage) Display) Option {
	return func(c *typedConfig) { c.display = fn }
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
// Options declare the tool's traits (ReadOnly, Idempotent), the fields of
// its input that name what a call touches (Reads, Writes, RunsCommand) and
// how a call is shown (WithDisplay).
//
// If no schema can be derived from In, New still returns a tool, and adding
// it to a Registry fails with the reason.
func New[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) Tool {
	t := &typed[In, Out]{name: name, description: description, fn: fn}
	cfg := &t.cfg
	for _, o := range opts {
		o(cfg)
	}
	if fn == nil {
		// Refused where the tool is added (Registry.Add, agent.New), not
		// at its first call.
		t.bad = fmt.Errorf("tool %q: the function is nil", name)
		return t
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
	cfg               typedConfig
	bad               error
}

func (t *typed[In, Out]) Traits() Traits { return t.cfg.traits }

func (t *typed[In, Out]) Access(input json.RawMessage) Access {
	c := &t.cfg
	if c.reads == nil && c.writes == nil && c.command == "" {
		return Access{}
	}
	a := Access{Reads: Fields(input, c.reads...), Writes: Fields(input, c.writes...)}
	if c.command != "" {
		if cmd := Fields(input, c.command); len(cmd) > 0 {
			a.Command = cmd[0]
		}
	}
	return a
}

func (t *typed[In, Out]) Display(input json.RawMessage) Display {
	if t.cfg.display != nil {
		return t.cfg.display(input)
	}
	return Display{}
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
