package tooltest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// note is a tool that keeps the contract: it writes a note to a file (in
// a map). Each broken tool below is a note with one thing changed.
type note struct {
	name, description string
	describe          func() string // if set, the description
	schema            func() json.RawMessage
	traits            func() tool.Traits
	access            func(json.RawMessage) tool.Access
	display           func(json.RawMessage) tool.Display
	execute           func(context.Context, *tool.Call) tool.Result
}

func (n *note) Name() string { return n.name }
func (n *note) Description() string {
	if n.describe != nil {
		return n.describe()
	}
	return n.description
}
func (n *note) Schema() json.RawMessage                               { return n.schema() }
func (n *note) Traits() tool.Traits                                   { return n.traits() }
func (n *note) Access(in json.RawMessage) tool.Access                 { return n.access(in) }
func (n *note) Display(in json.RawMessage) tool.Display               { return n.display(in) }
func (n *note) Execute(ctx context.Context, c *tool.Call) tool.Result { return n.execute(ctx, c) }

const noteSchema = `{"type": "object", "properties": {
	"path": {"type": "string", "description": "the file to write"},
	"text": {"type": "string", "description": "what to write; \"block\" waits for the call's end"},
	"urgent": {"type": "boolean"}
}, "required": ["path", "text"], "additionalProperties": false}`

type noteInput struct {
	Path, Text string
	Urgent     bool
}

func goodNote() *note {
	var mu sync.Mutex
	notes := map[string]string{}
	return &note{
		name:        "Note",
		description: "Writes a note to a file.",
		schema:      func() json.RawMessage { return json.RawMessage(noteSchema) },
		traits:      func() tool.Traits { return tool.Traits{Idempotent: true} },
		access: func(in json.RawMessage) tool.Access {
			return tool.Access{Writes: tool.Fields(in, "path")}
		},
		display: func(in json.RawMessage) tool.Display {
			return tool.Display{Summary: tool.OneLine(strings.Join(tool.Fields(in, "path"), ""))}
		},
		execute: func(ctx context.Context, c *tool.Call) tool.Result {
			var in noteInput
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return tool.Errorf("%v for Note: %v", tool.ErrInvalidInput, err)
			}
			if in.Text == "block" {
				<-ctx.Done()
			}
			if err := ctx.Err(); err != nil {
				return tool.Errorf("Note: %s not written: %v", in.Path, err)
			}
			mu.Lock()
			notes[in.Path] = in.Text
			mu.Unlock()
			return tool.Result{Content: "noted", Response: map[string]string{"filePath": in.Path}}
		},
	}
}

func goodCase() Case {
	return Case{
		Inputs: []Input{
			{JSON: `{"path": "a.txt", "text": "hello"}`, Access: &tool.Access{Writes: []string{"a.txt"}}, Display: &tool.Display{Summary: "a.txt"}},
			{JSON: `{"path": "notes/b.txt", "text": "", "urgent": true}`},
		},
		Invalid:  []string{`{"text": "no path"}`, `{"path": 3, "text": "x"}`, `{"path": "a", "text": "b", "colour": "red"}`},
		Blocking: `{"path": "c.txt", "text": "block"}`,
	}
}

func TestAToolThatKeepsTheContractPasses(t *testing.T) {
	Run(t, goodNote(), goodCase())
}

// A tool of the four methods alone, which declares nothing, passes too.
func TestABareToolPasses(t *testing.T) {
	c := goodCase()
	c.Inputs[0].Access, c.Inputs[0].Display = nil, nil
	Run(t, bareTool{goodNote()}, c)
}

type weatherIn struct {
	City string `json:"city" jsonschema:"the city to report on"`
	Days int    `json:"days,omitempty" jsonschema:"how many days ahead (default 1)"`
}

// A typed tool (tool.New) keeps the contract by construction, when its
// function does.
func TestATypedToolPasses(t *testing.T) {
	weather := tool.New("Weather", "Reports the weather for a city.",
		func(ctx context.Context, in weatherIn) (map[string]string, error) {
			return map[string]string{"city": in.City, "forecast": "sunny"}, ctx.Err()
		}, tool.ReadOnly(), tool.WithDisplay(func(in json.RawMessage) tool.Display {
			return tool.Display{Summary: tool.OneLine(strings.Join(tool.Fields(in, "city"), ""))}
		}))
	Run(t, weather, Case{
		Inputs:  []Input{{JSON: `{"city": "Oslo"}`, Display: &tool.Display{Summary: "Oslo"}}, {JSON: `{"city": "Lima", "days": 3}`}},
		Invalid: []string{`{"days": 2}`, `{"city": 7}`},
	})
}

// A tool whose traits say Background gets the kit's tool.Background, as
// the runtime hands it one; its tasks end when their context does.
func TestABackgroundToolPasses(t *testing.T) {
	n := goodNote()
	n.traits = func() tool.Traits { return tool.Traits{Background: true} }
	n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
		b := tool.BackgroundFrom(ctx)
		if b == nil {
			return tool.Errorf("Note: no background")
		}
		id, err := b.Start(c, "Note", "wait for the end", func(ctx context.Context, out io.Writer) error {
			io.WriteString(out, "waiting\n")
			<-ctx.Done()
			return ctx.Err()
		})
		if err != nil {
			return tool.Errorf("Note: %v", err)
		}
		return tool.Text("started " + id)
	}
	c := goodCase()
	c.Blocking = ""
	Run(t, n, c)
}

func TestCaseNeedsInputs(t *testing.T) {
	if _, err := newKit(goodNote(), Case{}); err == nil || !strings.Contains(err.Error(), "Case.Inputs is empty") {
		t.Errorf("newKit with no inputs: %v", err)
	}
	if _, err := newKit(nil, goodCase()); err == nil {
		t.Error("newKit with a nil tool succeeded")
	}
}

// Every check catches the defect it is there for: each broken tool fails
// the check named, saying what is wrong.
func TestTheKitCatchesBrokenTools(t *testing.T) {
	counter := func() func() int {
		var n atomic.Int64
		return func() int { return int(n.Add(1)) }
	}
	for _, tc := range []struct {
		name  string
		tool  func(n *note, release <-chan struct{})
		cas   func(c *Case)
		check string
		want  string
	}{
		{name: "a name with a space", tool: func(n *note, _ <-chan struct{}) { n.name = "Write Note" },
			check: "Name", want: `Name() = "Write Note": a tool's name is`},
		{name: "a name too long", tool: func(n *note, _ <-chan struct{}) { n.name = strings.Repeat("N", 65) },
			check: "Name", want: "a tool's name is 1 to 64"},
		{name: "a blank description", tool: func(n *note, _ <-chan struct{}) { n.description = " \n" },
			check: "Description", want: "Description() = \" \\n\""},
		{name: "a description that changes", tool: func(n *note, _ <-chan struct{}) {
			next := counter()
			n.describe = func() string { return fmt.Sprint("Writes note number ", next(), ".") }
		}, check: "Description", want: "Description() changed between two calls"},
		{name: "a schema of a string", tool: func(n *note, _ <-chan struct{}) {
			n.schema = func() json.RawMessage { return json.RawMessage(`{"type": "string"}`) }
		}, check: "Schema", want: `must be an object schema with "type": "object"`},
		{name: "a schema that does not compile", tool: func(n *note, _ <-chan struct{}) {
			n.schema = func() json.RawMessage {
				return json.RawMessage(`{"type": "object", "properties": {"path": {"type": "text"}}}`)
			}
		}, check: "Schema", want: "does not compile"},
		{name: "a schema that is not JSON", tool: func(n *note, _ <-chan struct{}) {
			n.schema = func() json.RawMessage { return json.RawMessage(`{"type": "object",`) }
		}, check: "Register", want: "is not JSON"},
		{name: "a schema that changes", tool: func(n *note, _ <-chan struct{}) {
			next := counter()
			n.schema = func() json.RawMessage {
				return json.RawMessage(fmt.Sprintf(`{"type": "object", "description": "version %d"}`, next()))
			}
		}, check: "Schema", want: "Schema() changed between two calls"},
		{name: "an alias that is its name", tool: func(n *note, _ <-chan struct{}) {
			n.traits = func() tool.Traits { return tool.Traits{Aliases: []string{"Note"}} }
		}, check: "Traits", want: `alias "Note"`},
		{name: "an alias the registry refuses", tool: func(n *note, _ <-chan struct{}) {
			n.traits = func() tool.Traits { return tool.Traits{Aliases: []string{"Note Writer"}} }
		}, check: "Register", want: `Registry.Add refuses the tool: tool "Note": alias "Note Writer"`},
		{name: "traits that change", tool: func(n *note, _ <-chan struct{}) {
			next := counter()
			n.traits = func() tool.Traits { return tool.Traits{ReadOnly: next()%2 == 0} }
		}, check: "Traits", want: "must read the same"},
		{name: "an input the schema refuses", cas: func(c *Case) {
			c.Inputs = append(c.Inputs, Input{JSON: `{"path": "d.txt"}`})
		}, check: "Valid", want: `Case.Inputs[2] "{\"path\": \"d.txt\"}" is refused`},
		{name: "a schema that lets a bad input through", tool: func(n *note, _ <-chan struct{}) {
			n.schema = func() json.RawMessage { return json.RawMessage(`{"type": "object"}`) }
		}, check: "Invalid", want: `Case.Invalid[0] "{\"text\": \"no path\"}" is accepted`},
		{name: "Access that panics on a null field", tool: func(n *note, _ <-chan struct{}) {
			n.access = func(in json.RawMessage) tool.Access {
				var m map[string]any
				json.Unmarshal(in, &m)
				if p, ok := m["path"]; ok {
					return tool.Access{Writes: []string{p.(string)}}
				}
				return tool.Access{}
			}
		}, check: "Access", want: `Access panicked on Case.Inputs[0] with "path" null`},
		{name: "Access that panics on an empty input", tool: func(n *note, _ <-chan struct{}) {
			n.access = func(in json.RawMessage) tool.Access {
				if in[0] != '{' {
					return tool.Access{}
				}
				return tool.Access{Writes: tool.Fields(in, "path")}
			}
		}, check: "Access", want: "Access panicked on an empty input"},
		{name: "Access that changes", tool: func(n *note, _ <-chan struct{}) {
			next := counter()
			n.access = func(in json.RawMessage) tool.Access { return tool.Access{Reads: []string{fmt.Sprint("f", next())}} }
		}, check: "Access", want: "read from its input alone"},
		{name: "Access with an empty path", tool: func(n *note, _ <-chan struct{}) {
			n.access = func(in json.RawMessage) tool.Access {
				var a struct{ Path string }
				json.Unmarshal(in, &a)
				return tool.Access{Writes: []string{a.Path}}
			}
		}, check: "Access", want: "Writes holds an empty path"},
		{name: "a read-only tool that writes", tool: func(n *note, _ <-chan struct{}) {
			n.traits = func() tool.Traits { return tool.Traits{ReadOnly: true} }
		}, check: "Access", want: "but the tool's traits say ReadOnly"},
		{name: "Access other than the case says", cas: func(c *Case) {
			c.Inputs[0].Access = &tool.Access{Reads: []string{"a.txt"}}
		}, check: "Access", want: "want {Reads:[a.txt]"},
		{name: "Display that panics without a path", tool: func(n *note, _ <-chan struct{}) {
			n.display = func(in json.RawMessage) tool.Display { return tool.Display{Summary: tool.Fields(in, "path")[0]} }
		}, check: "Display", want: "Display panicked on malformed input"},
		{name: "a Summary of two lines", tool: func(n *note, _ <-chan struct{}) {
			n.display = func(in json.RawMessage) tool.Display {
				return tool.Display{Summary: strings.Join(tool.Fields(in, "path"), "")}
			}
		}, check: "Display", want: `with "path" a string of line breaks`},
		{name: "Display that changes", tool: func(n *note, _ <-chan struct{}) {
			next := counter()
			n.display = func(json.RawMessage) tool.Display { return tool.Display{Summary: fmt.Sprint(next())} }
		}, check: "Display", want: "how a call is shown is read from its input alone"},
		{name: "Display other than the case says", cas: func(c *Case) {
			c.Inputs[0].Display = &tool.Display{Summary: "a.txt (5 bytes)"}
		}, check: "Display", want: "want {Summary:a.txt (5 bytes)"},
		{name: "Execute that panics", tool: func(n *note, _ <-chan struct{}) {
			good := n.execute
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				if strings.Contains(string(c.Input), "urgent") {
					panic("urgent notes are not written yet")
				}
				return good(ctx, c)
			}
		}, check: "Execute", want: `Execute panicked on Case.Inputs[1] "{\"path\": \"notes/b.txt\", \"text\": \"\", \"urgent\": true}": urgent notes are not written yet`},
		{name: "a Response that is not an object", tool: func(n *note, _ <-chan struct{}) {
			n.execute = func(context.Context, *tool.Call) tool.Result {
				return tool.Result{Content: "noted", Response: []string{"a.txt"}}
			}
		}, check: "Execute", want: "Result.Response []string encodes to"},
		{name: "a Response that does not encode", tool: func(n *note, _ <-chan struct{}) {
			n.execute = func(context.Context, *tool.Call) tool.Result {
				return tool.Result{Content: "noted", Response: map[string]any{"f": func() {}}}
			}
		}, check: "Execute", want: "does not encode to JSON"},
		{name: "a goroutine left running", tool: func(n *note, release <-chan struct{}) {
			good := n.execute
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				go func() { <-release }()
				return good(ctx, c)
			}
		}, check: "Execute", want: "goroutines still run after the calls of Case.Inputs returned"},
		{name: "a background task that ignores its context", tool: func(n *note, release <-chan struct{}) {
			n.traits = func() tool.Traits { return tool.Traits{Background: true} }
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				id, _ := tool.BackgroundFrom(ctx).Start(c, "Note", "wait", func(context.Context, io.Writer) error {
					<-release
					return nil
				})
				return tool.Text(id)
			}
		}, cas: func(c *Case) { c.Grace = 50 * time.Millisecond },
			check: "Execute", want: "started did not end within 50ms of its context's end"},
		{name: "a background task of no kind", tool: func(n *note, _ <-chan struct{}) {
			n.traits = func() tool.Traits { return tool.Traits{Background: true} }
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				id, _ := tool.BackgroundFrom(ctx).Start(c, "", "", func(context.Context, io.Writer) error { return nil })
				return tool.Text(id)
			}
		}, check: "Execute", want: "kind is empty"},
		{name: "Execute that is not safe beside itself", tool: func(n *note, _ <-chan struct{}) {
			// The first call waits for a second, so that two overlap
			// whatever the scheduler does, and then both find the other.
			var in atomic.Int64
			both := make(chan struct{})
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				if in.Add(1) == 2 {
					close(both)
				}
				<-both
				panic("a second call is running")
			}
		}, check: "Concurrent", want: "called beside the other inputs: a second call is running"},
		{name: "Execute that ignores a done context", tool: func(n *note, release <-chan struct{}) {
			n.execute = func(context.Context, *tool.Call) tool.Result {
				<-release // a slow call, that does not watch its context
				return tool.Text("noted")
			}
		}, cas: func(c *Case) { c.Grace = 50 * time.Millisecond },
			check: "Cancelled", want: "with a context done before the call, did not return within 50ms"},
		{name: "a blocking call that ignores cancellation", tool: func(n *note, release <-chan struct{}) {
			good := n.execute
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				if ctx.Err() == nil && strings.Contains(string(c.Input), "block") {
					<-release
				}
				return good(ctx, c)
			}
		}, cas: func(c *Case) { c.Grace = 50 * time.Millisecond },
			check: "Cancelled", want: `Case.Blocking "{\"path\": \"c.txt\", \"text\": \"block\"}", with a context cancelled while it runs, did not return within 50ms`},
		{name: "a blocking input that does not block", cas: func(c *Case) { c.Blocking = `{"path": "c.txt", "text": "quick"}` },
			check: "Cancelled", want: "returned before its context was done"},
		{name: "a goroutine left running by a cancelled call", tool: func(n *note, release <-chan struct{}) {
			good := n.execute
			n.execute = func(ctx context.Context, c *tool.Call) tool.Result {
				if ctx.Err() != nil {
					go func() { <-release }()
				}
				return good(ctx, c)
			}
		}, check: "Cancelled", want: "goroutines still run after the cancelled calls returned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			n, c := goodNote(), goodCase()
			if tc.tool != nil {
				tc.tool(n, release)
			}
			if tc.cas != nil {
				tc.cas(&c)
			}
			r := record(t, tc.check, n, c)
			if !r.failed {
				t.Fatalf("check %s passed %s", tc.check, tc.name)
			}
			if !strings.Contains(r.log.String(), tc.want) {
				t.Errorf("check %s failed, without saying %q:\n%s", tc.check, tc.want, r.log.String())
			}
		})
	}
}

// A command runner's input must pass its own schema, and its Access name
// the command it runs.
func TestTheKitCatchesBrokenCommandRunners(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input func(command string) json.RawMessage
		want  string
	}{
		{"an input the schema refuses", func(command string) json.RawMessage {
			b, _ := json.Marshal(map[string]string{"cmd": command})
			return b
		}, `which the tool's schema refuses`},
		{"a command the policy cannot see", func(command string) json.RawMessage {
			b, _ := json.Marshal(map[string]string{"path": "-", "text": command})
			return b
		}, `Access(CommandInput("echo tooltest", …)).Command = "": a call that runs a command must say which`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record(t, "CommandRunner", &runner{note: goodNote(), input: tc.input}, goodCase())
			if !r.failed || !strings.Contains(r.log.String(), tc.want) {
				t.Errorf("failed %v, want a failure saying %q:\n%s", r.failed, tc.want, r.log.String())
			}
		})
	}
	// One that keeps the contract passes.
	good := &runner{note: goodNote(), input: func(command string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"path": "-", "text": command})
		return b
	}}
	good.note.access = func(in json.RawMessage) tool.Access {
		return tool.Access{Command: strings.Join(tool.Fields(in, "text"), "")}
	}
	if r := record(t, "CommandRunner", good, goodCase()); r.failed || r.skipped {
		t.Errorf("a good command runner: failed %v, skipped %v:\n%s", r.failed, r.skipped, r.log.String())
	}
}

type runner struct {
	*note
	input func(command string) json.RawMessage
}

func (r *runner) CommandInput(command, _ string) json.RawMessage { return r.input(command) }

// A tool that declares no Access, Display or command has those checks
// skipped, saying why, and fails them when the case wants one.
func TestOptionalInterfaces(t *testing.T) {
	bare := bareTool{goodNote()}
	one := Case{Inputs: []Input{{JSON: `{"path": "a.txt", "text": "hello"}`}}}
	for _, check := range []string{"Access", "Display", "CommandRunner"} {
		if r := record(t, check, bare, one); !r.skipped || r.failed {
			t.Errorf("%s of a tool without it: skipped %v, failed %v: %s", check, r.skipped, r.failed, r.log.String())
		}
	}
	want := one
	want.Inputs = []Input{{JSON: one.Inputs[0].JSON, Access: &tool.Access{Writes: []string{"a.txt"}}, Display: &tool.Display{Summary: "a.txt"}}}
	for _, check := range []string{"Access", "Display"} {
		if r := record(t, check, bare, want); !r.failed || !strings.Contains(r.log.String(), "want {") {
			t.Errorf("%s wanted of a tool that declares none: failed %v: %s", check, r.failed, r.log.String())
		}
	}
}

// bareTool is a note without its optional methods: no Traits, Access or
// Display.
type bareTool struct{ n *note }

func (b bareTool) Name() string            { return b.n.Name() }
func (b bareTool) Description() string     { return b.n.Description() }
func (b bareTool) Schema() json.RawMessage { return b.n.Schema() }
func (b bareTool) Execute(ctx context.Context, c *tool.Call) tool.Result {
	return b.n.Execute(ctx, c)
}

// record runs the check named on tl with c, reporting to a recorder.
func record(t *testing.T, name string, tl tool.Tool, c Case) *recorder {
	t.Helper()
	k, err := newKit(tl, c)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(checks, func(ch check) bool { return ch.name == name })
	if i < 0 {
		t.Fatalf("no check %q", name)
	}
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		checks[i].fn(k, r)
	}()
	<-done
	return r
}

// recorder is a testing.TB that keeps what a check reports instead of
// failing the test, so that the kit's own tests can see it fail. Fatal
// and Skip end the check's goroutine, as they end a test's.
type recorder struct {
	testing.TB // nil: a method the kit has no business calling panics

	mu      sync.Mutex
	failed  bool
	skipped bool
	log     strings.Builder
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "recorder" }

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.log, format+"\n", args...)
}

func (r *recorder) Log(args ...any) { r.Logf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) Errorf(format string, args ...any) { r.Fail(); r.Logf(format, args...) }
func (r *recorder) Error(args ...any)                 { r.Fail(); r.Log(args...) }
func (r *recorder) FailNow()                          { r.Fail(); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }

func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any)                 { r.Log(args...); r.SkipNow() }
func (r *recorder) Skipf(format string, args ...any) { r.Logf(format, args...); r.SkipNow() }
func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}
