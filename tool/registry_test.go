package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

type rawTool struct {
	name   string
	schema string
	run    func(*tool.Call) tool.Result
}

func (r rawTool) Name() string            { return r.name }
func (r rawTool) Description() string     { return "test tool" }
func (r rawTool) Schema() json.RawMessage { return json.RawMessage(r.schema) }
func (r rawTool) Execute(ctx context.Context, c *tool.Call) tool.Result {
	if r.run == nil {
		return tool.Text("ran")
	}
	return r.run(c)
}

const pathSchema = `{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["file_path"],"additionalProperties":false}`

func TestAddRefusesBadTools(t *testing.T) {
	for _, tc := range []struct {
		tool tool.Tool
		want string
	}{
		{rawTool{name: "has space", schema: `{"type":"object"}`}, "name must match"},
		{rawTool{name: "", schema: `{"type":"object"}`}, "name must match"},
		{rawTool{name: "NoSchema"}, "empty input schema"},
		{rawTool{name: "NotJSON", schema: `{`}, "not JSON"},
		{rawTool{name: "NotObject", schema: `{"type":"string"}`}, "object schema"},
		{rawTool{name: "BadSchema", schema: `{"type":"object","properties":{"a":{"type":"nonsense"}}}`}, `tool "BadSchema": input schema does not compile: it is not a valid JSON Schema: at /properties/a/type: value must be one of`},
		{rawTool{name: "BadMinimum", schema: `{"type":"object","minProperties":"two"}`}, "not a valid JSON Schema: at /minProperties: got string, want"},
		{tool.New("Str", "x", func(ctx context.Context, in string) (string, error) { return "", nil }), "must be a struct"},
		{tool.New[struct{}, string]("NilFn", "x", nil), `tool "NilFn": the function is nil`},
	} {
		err := tool.NewRegistry().Add(tc.tool)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%q) = %v, want an error containing %q", tc.tool.Name(), err, tc.want)
		}
	}
	r := tool.NewRegistry()
	if err := r.Add(rawTool{name: "A", schema: `{"type":"object"}`}); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(rawTool{name: "A", schema: `{"type":"object"}`}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("duplicate: %v", err)
	}
	if got := r.Names(); len(got) != 1 {
		t.Errorf("names after a refused duplicate = %v", got)
	}
}

func TestValidateNamesTheProblem(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Add(rawTool{name: "Read", schema: pathSchema}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{`{}`, []string{"file_path", "missing"}},
		{``, []string{"file_path"}},
		{`{"file_path": 3}`, []string{"/file_path", "string"}},
		{`{"file_path": "a", "limit": 0}`, []string{"/limit"}},
		{`{"file_path": "a", "extra": 1}`, []string{"extra"}},
		{`{"file_path": "a"`, []string{"not valid JSON", `{"file_path": "a"`}},
		{`[1]`, []string{"object"}},
	} {
		err := r.Validate("Read", json.RawMessage(tc.input))
		if !errors.Is(err, tool.ErrInvalidInput) {
			t.Errorf("Validate(%s) = %v, want ErrInvalidInput", tc.input, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Validate(%s) = %q, want it to mention %q", tc.input, err, w)
			}
		}
	}
	if err := r.Validate("Read", json.RawMessage(`{"file_path":"a.go","limit":3}`)); err != nil {
		t.Errorf("valid input refused: %v", err)
	}
	if err := r.Validate("Nope", nil); !errors.Is(err, tool.ErrUnknownTool) || !strings.Contains(err.Error(), "Read") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestCallNeverFails(t *testing.T) {
	r := tool.NewRegistry()
	var ran int
	r.Add(rawTool{name: "Read", schema: pathSchema, run: func(c *tool.Call) tool.Result { ran++; return tool.Text("read " + c.Name) }})
	r.Add(rawTool{name: "Boom", schema: `{"type":"object"}`, run: func(*tool.Call) tool.Result { panic("kaboom") }})
	ctx := context.Background()

	if res := r.Call(ctx, &tool.Call{Name: "Read", Input: json.RawMessage(`{"file_path":"x"}`)}); res.IsError || res.Content != "read Read" {
		t.Errorf("valid call = %+v", res)
	}
	if res := r.Call(ctx, &tool.Call{Name: "Read", Input: json.RawMessage(`{"file_path":1}`)}); !res.IsError || ran != 1 {
		t.Errorf("invalid call = %+v, ran %d times (the tool must not run)", res, ran)
	}
	if res := r.Call(ctx, &tool.Call{Name: "Boom"}); !res.IsError || !strings.Contains(res.Content, "kaboom") {
		t.Errorf("panicking tool = %+v", res)
	}
	if res := r.Call(ctx, &tool.Call{Name: "Ghost"}); !res.IsError || !strings.Contains(res.Content, `"Ghost"`) {
		t.Errorf("unknown tool = %+v", res)
	}
}

func TestDefinitionsFollowRegistrationOrder(t *testing.T) {
	r := tool.NewRegistry()
	for _, n := range []string{"B", "A", "C"} {
		if err := r.Add(rawTool{name: n, schema: `{"type":"object"}`}); err != nil {
			t.Fatal(err)
		}
	}
	defs := r.Definitions()
	if len(defs) != 3 || defs[0].Name != "B" || defs[1].Name != "A" || defs[2].Name != "C" || string(defs[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("definitions = %+v", defs)
	}
}

// Tools come and go while calls look them up (an MCP server's list
// changes during a turn): each reader sees a whole set, the definitions a
// reader got never change under it, and a tool removed is unknown after.
func TestRegistryChangesWhileRead(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Add(rawTool{name: "Stay", schema: pathSchema}); err != nil {
		t.Fatal(err)
	}
	held := r.Definitions()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := r.Lookup("Stay"); !ok {
					t.Error("Stay is not found while others change")
					return
				}
				if err := r.Validate("Stay", json.RawMessage(`{"file_path":"a"}`)); err != nil {
					t.Errorf("Validate: %v", err)
					return
				}
				var offered []string
				for _, d := range r.Definitions() {
					offered = append(offered, d.Name)
				}
				if !wholeSet(offered) {
					t.Errorf("definitions: %v", offered)
				}
				if names := r.Names(); !wholeSet(names) {
					t.Errorf("names: %v", names)
				}
			}
		})
	}
	for i := range 300 {
		name := fmt.Sprint("T", i%7)
		if _, there := r.Lookup(name); there {
			if !r.Remove(name) {
				t.Fatalf("Remove(%s) = false", name)
			}
		} else if err := r.Add(rawTool{name: name, schema: `{"type":"object"}`}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if len(held) != 1 || held[0].Name != "Stay" {
		t.Errorf("the definitions first read changed: %+v", held)
	}
	for i := range 7 {
		name := fmt.Sprint("T", i)
		_, ok := r.Lookup(name)
		defs := r.Definitions()
		listed := slices.ContainsFunc(defs, func(d llm.ToolDefinition) bool { return d.Name == name })
		if ok != listed {
			t.Errorf("%s: found %v, offered %v", name, ok, listed)
		}
		if err := r.Validate(name, nil); ok == (err != nil) {
			t.Errorf("%s: found %v, Validate: %v", name, ok, err)
		}
	}
	if n := len(r.Names()); n != len(r.Definitions()) || n != len(r.Tools()) {
		t.Errorf("%d names, %d definitions, %d tools", n, len(r.Definitions()), len(r.Tools()))
	}
}

// wholeSet reports whether names are a set the registry can have had:
// Stay first, no name twice.
func wholeSet(names []string) bool {
	return len(names) > 0 && names[0] == "Stay" && len(slices.Compact(slices.Sorted(slices.Values(names)))) == len(names)
}

type closer struct {
	rawTool
	log *[]string
	err error
}

func (c closer) Close() error { *c.log = append(*c.log, c.name); return c.err }

func TestCloseInReverseOrder(t *testing.T) {
	var log []string
	r := tool.NewRegistry()
	r.Add(closer{rawTool{name: "First", schema: `{"type":"object"}`}, &log, nil})
	r.Add(rawTool{name: "Plain", schema: `{"type":"object"}`})
	r.Add(closer{rawTool{name: "Second", schema: `{"type":"object"}`}, &log, errors.New("stuck")})
	err := r.Close()
	if strings.Join(log, ",") != "Second,First" {
		t.Errorf("close order = %v", log)
	}
	if err == nil || !strings.Contains(err.Error(), "Second") || !strings.Contains(err.Error(), "stuck") {
		t.Errorf("close error = %v", err)
	}
}

func TestTypedToolSeesItsCall(t *testing.T) {
	var session string
	who := tool.New("Who", "x", func(ctx context.Context, in struct{}) (tool.Result, error) {
		session = tool.CallFrom(ctx).SessionID
		return tool.Result{Content: "custom", IsError: true}, nil
	})
	res := tool.Run(context.Background(), who, &tool.Call{Name: "Who", Scope: scope.Scope{SessionID: "s-42"}})
	if session != "s-42" || res.Content != "custom" || !res.IsError {
		t.Errorf("session %q, result %+v", session, res)
	}
}
