package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/orca-agent/orca/internal/names"
	"github.com/orca-agent/orca/llm"
)

// ErrUnknownTool is wrapped by Registry.Validate when no tool has the name.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidInput is wrapped by Registry.Validate when the input is not
// valid JSON or does not satisfy the tool's schema.
var ErrInvalidInput = errors.New("invalid tool input")

// Names follow the providers' rule for tool names (names.Token).
const nameRule = `^[a-zA-Z0-9_-]{1,64}$`

type entry struct {
	tool   Tool
	schema *jsonschema.Schema
	fast   *fastSchema // nil when the schema needs the full validator
}

// Registry holds one runtime's tools. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	order  []*entry
	byName map[string]*entry
	defs   []llm.ToolDefinition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: make(map[string]*entry)}
}

// Add registers t, compiling its schema. It fails if the name is invalid or
// taken, or the schema does not compile.
func (r *Registry) Add(t Tool) error {
	if t == nil {
		return errors.New("tool: Add(nil)")
	}
	if e, ok := t.(interface{ err() error }); ok && e.err() != nil {
		return e.err()
	}
	name := t.Name()
	if !names.Token(name) {
		return fmt.Errorf("tool %q: name must match %s", name, nameRule)
	}
	sch, fast, err := compile(name, t.Schema())
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("tool %q: already registered", name)
	}
	// A name must say which tool it means: an alias is no other tool's
	// name or alias.
	aliases := TraitsOf(t).Aliases
	for _, a := range aliases {
		if !names.Token(a) || a == name {
			return fmt.Errorf("tool %q: alias %q: an alias is another name matching %s", name, a, nameRule)
		}
		if _, dup := r.byName[a]; dup {
			return fmt.Errorf("tool %q: alias %q is the name of a registered tool", name, a)
		}
	}
	for _, o := range r.order {
		if other := TraitsOf(o.tool).Aliases; slices.Contains(other, name) {
			return fmt.Errorf("tool %q: the name is an alias of the registered tool %q", name, o.tool.Name())
		} else if i := slices.IndexFunc(aliases, func(a string) bool { return slices.Contains(other, a) }); i >= 0 {
			return fmt.Errorf("tool %q: alias %q is an alias of the registered tool %q too", name, aliases[i], o.tool.Name())
		}
	}
	e := &entry{tool: t, schema: sch, fast: fast}
	r.order = append(r.order, e)
	r.byName[name] = e
	r.define()
	return nil
}

// Remove takes the tool named name out (a tool an MCP server no longer
// offers): the model is not offered it from the next call on, and a call
// of it is an unknown tool's. It reports whether there was one.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byName[name]
	if !ok {
		return false
	}
	delete(r.byName, name)
	r.order = slices.DeleteFunc(slices.Clone(r.order), func(x *entry) bool { return x == e })
	r.define()
	return true
}

// define rebuilds the definitions the model is offered; r.mu is held.
// The slice is new each time: callers keep the one they got.
func (r *Registry) define() {
	defs := make([]llm.ToolDefinition, len(r.order))
	for i, e := range r.order {
		defs[i] = llm.ToolDefinition{Name: e.tool.Name(), Description: e.tool.Description(), InputSchema: e.tool.Schema()}
	}
	r.defs = defs
}

func compile(name string, schema json.RawMessage) (*jsonschema.Schema, *fastSchema, error) {
	return compileSchema("tool "+strconv.Quote(name), "input schema", schema)
}

// compileSchema compiles an object schema; what names it in errors
// (`tool "Read"`), kind says which schema it is.
func compileSchema(what, kind string, schema json.RawMessage) (*jsonschema.Schema, *fastSchema, error) {
	if len(schema) == 0 {
		return nil, nil, fmt.Errorf("%s: empty %s", what, kind)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s is not JSON: %w", what, kind, err)
	}
	if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
		return nil, nil, fmt.Errorf("%s: %s must be an object schema with \"type\": \"object\"", what, kind)
	}
	c := jsonschema.NewCompiler()
	loc := "orca:schema/" + url.PathEscape(what) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %s: %w", what, kind, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		// Not a valid schema: say where, in the schema, as invalid input
		// is said, not by the compiler's own name for the document.
		if sve := (*jsonschema.SchemaValidationError)(nil); errors.As(err, &sve) {
			return nil, nil, fmt.Errorf("%s: %s does not compile: it is not a valid JSON Schema: %s", what, kind, describeIn(sve.Err, "the schema"))
		}
		return nil, nil, fmt.Errorf("%s: %s does not compile: %w", what, kind, err)
	}
	return sch, compileFast(doc), nil
}

// Resolve returns the tool that goes by name — registered under it, or
// declaring it as an alias — and that tool's name.
func (r *Registry) Resolve(name string) (Tool, string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.byName[name]; ok {
		return e.tool, name, true
	}
	for _, e := range r.order {
		if slices.Contains(TraitsOf(e.tool).Aliases, name) {
			return e.tool, e.tool.Name(), true
		}
	}
	return nil, "", false
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	e, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// CommandRunner returns the first tool of the registry that runs shell
// commands (see CommandRunner), if any.
func (r *Registry) CommandRunner() (CommandRunner, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, e := range r.order {
		if c, ok := e.tool.(CommandRunner); ok {
			return c, true
		}
	}
	return nil, false
}

// Names returns the registered names in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, len(r.order))
	for i, e := range r.order {
		out[i] = e.tool.Name()
	}
	return out
}

// Tools returns the registered tools in registration order.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, len(r.order))
	for i, e := range r.order {
		out[i] = e.tool
	}
	return out
}

// Definitions returns what the model is told about the registered tools, in
// registration order. The slice is shared: callers must not modify it.
func (r *Registry) Definitions() []llm.ToolDefinition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.defs
}

// Validate checks input against the schema of the tool called name. Empty
// input counts as {}. The error wraps ErrUnknownTool or ErrInvalidInput and
// says what is wrong in words a model can act on.
func (r *Registry) Validate(name string, input json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		return r.unknown(name)
	}
	return validate(e, input)
}

// unknown says that no tool is called name, and which tool the model may
// have meant: one with the alias name (Claude Code's BashOutput is
// AgentOutput here), else one whose name differs only in case.
func (r *Registry) unknown(name string) error {
	meant := ""
	for _, t := range r.Tools() {
		if slices.Contains(TraitsOf(t).Aliases, name) {
			meant = fmt.Sprintf(" (this runtime's %s does what %s does elsewhere: call it, with its own input schema)", t.Name(), name)
			break
		}
		if strings.EqualFold(t.Name(), name) && meant == "" {
			meant = fmt.Sprintf(" (did you mean %s? tool names are case-sensitive)", t.Name())
		}
	}
	return fmt.Errorf("%w %q%s; available tools: %s", ErrUnknownTool, name, meant, strings.Join(r.Names(), ", "))
}

func validate(e *entry, input json.RawMessage) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = emptyObject
	}
	return check(e.schema, e.fast, input, "arguments are", func(what string) error {
		return fmt.Errorf("%w for %s: %s", ErrInvalidInput, e.tool.Name(), what)
	})
}

// check validates input against a compiled schema; noun says what input
// is ("arguments are") and wrap words the error.
func check(schema *jsonschema.Schema, fast *fastSchema, input json.RawMessage, noun string, wrap func(string) error) error {
	if fast != nil && fast.acceptsJSON(input) {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return wrap(fmt.Sprintf("%s not valid JSON (%v): %s", noun, err, clip(input, 200)))
	}
	if err := schema.Validate(v); err != nil {
		return wrap(describe(err))
	}
	return nil
}

var emptyObject = json.RawMessage(`{}`)

// describe turns a schema validation error into one line per problem, each
// naming the field ("at /file_path: …").
func describe(err error) string { return describeIn(err, "the input") }

// describeIn is describe of a value that whole calls.
func describeIn(err error, whole string) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var lines []string
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			loc := "/" + strings.Join(v.InstanceLocation, "/")
			if loc == "/" {
				loc = whole
			}
			lines = append(lines, fmt.Sprintf("at %s: %s", loc, v.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(lines, "; ")
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// Call looks up, validates and runs call.Name. An unknown tool, invalid
// input or a panic in the tool becomes an error Result; Call never fails.
func (r *Registry) Call(ctx context.Context, call *Call) (res Result) {
	r.mu.RLock()
	e, ok := r.byName[call.Name]
	r.mu.RUnlock()
	if !ok {
		return Result{Content: r.unknown(call.Name).Error(), IsError: true}
	}
	if err := validate(e, call.Input); err != nil {
		return Result{Content: err.Error(), IsError: true}
	}
	return Run(ctx, e.tool, call)
}

// Run executes t, turning a panic into an error Result.
func Run(ctx context.Context, t Tool, call *Call) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			res = Errorf("tool %s failed: panic: %v", t.Name(), p)
		}
	}()
	return t.Execute(ctx, call)
}

// Close closes every registered tool that implements io.Closer, in reverse
// registration order, and returns their errors joined.
func (r *Registry) Close() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	for i := len(r.order) - 1; i >= 0; i-- {
		if c, ok := r.order[i].tool.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("tool %s: close: %w", r.order[i].tool.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

var printer = message.NewPrinter(language.English)
