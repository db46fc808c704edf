package builtin

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixture is one runtime's default tools over a fresh workspace.
type fixture struct {
	t   *testing.T
	dir string // the workspace root, symlinks resolved
	fs  *workspace.Local
	reg *tool.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fsys, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return &fixture{t: t, dir: fsys.Root(), fs: fsys, reg: newRegistry(t, fsys)}
}

func newRegistry(t testing.TB, fsys workspace.FileSystem) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	env := tool.Env{RuntimeID: "rt", FS: fsys, Logger: slog.New(slog.DiscardHandler)}
	for _, p := range []tool.Provider{FilesProvider(), ShellProvider(), TodoProvider()} {
		tools, err := p.Tools(env)
		if err != nil {
			t.Fatalf("provider %s: %v", p.Name(), err)
		}
		for _, tl := range tools {
			if err := reg.Add(tl); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// call runs the tool name with input (a JSON string or a value to encode)
// through the registry, so that the schema is enforced, in session "s1".
func (f *fixture) call(name string, input any) tool.Result {
	f.t.Helper()
	return f.callCtx(context.Background(), "s1", name, input)
}

func (f *fixture) callCtx(ctx context.Context, session, name string, input any) tool.Result {
	f.t.Helper()
	var raw json.RawMessage
	switch v := input.(type) {
	case string:
		raw = json.RawMessage(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			f.t.Fatal(err)
		}
		raw = b
	}
	return f.reg.Call(ctx, &tool.Call{ID: "call-1", Name: name, Input: raw, Scope: scope.Scope{RuntimeID: "rt", SessionID: session, TurnID: "turn-1"}})
}

// ok fails the test unless r succeeded, and returns its content.
func (f *fixture) ok(r tool.Result) string {
	f.t.Helper()
	if r.IsError {
		f.t.Fatalf("unexpected error observation:\n%s", r.Content)
	}
	return r.Content
}

// fails fails the test unless r is an error whose content holds every one
// of wants.
func (f *fixture) fails(r tool.Result, wants ...string) {
	f.t.Helper()
	if !r.IsError {
		f.t.Fatalf("want an error observation, got:\n%s", r.Content)
	}
	for _, w := range wants {
		if !strings.Contains(r.Content, w) {
			f.t.Fatalf("error observation does not mention %q:\n%s", w, r.Content)
		}
	}
}

// write creates a file below the workspace root, with its folders.
func (f *fixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// read returns the contents of a file below the workspace root.
func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(rel)))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// touch sets the modification time of a file below the root.
func (f *fixture) touch(rel string, at time.Time) {
	f.t.Helper()
	if err := os.Chtimes(filepath.Join(f.dir, filepath.FromSlash(rel)), at, at); err != nil {
		f.t.Fatal(err)
	}
}

func contains(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Fatalf("output does not contain %q:\n%s", w, got)
		}
	}
}

func lacks(t *testing.T, got string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(got, w) {
			t.Fatalf("output contains %q:\n%s", w, got)
		}
	}
}

func TestToolsAndSchemas(t *testing.T) {
	f := newFixture(t)
	want := []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite"}
	if got := f.reg.Names(); !slices.Equal(got, want) {
		t.Fatalf("registry order = %v, want %v", got, want)
	}
	for _, d := range f.reg.Definitions() {
		var schema map[string]any
		if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", d.Name, err)
		}
		if schema["additionalProperties"] != false {
			t.Errorf("%s: schema allows additional properties", d.Name)
		}
		if req, _ := schema["required"].([]any); len(req) == 0 {
			t.Errorf("%s: schema has no required fields", d.Name)
		}
		if len(d.Description) < 100 {
			t.Errorf("%s: description is too thin: %q", d.Name, d.Description)
		}
	}
}

func TestSchemaRefusesUnknownAndMissingFields(t *testing.T) {
	f := newFixture(t)
	f.fails(f.call("Read", `{"file_path":"a","bogus":1}`), "bogus")
	f.fails(f.call("Edit", `{"file_path":"a","old_string":"x"}`), "new_string")
	f.fails(f.call("Grep", `{"pattern":"x","output_mode":"lines"}`), "output_mode")
	f.fails(f.call("TodoWrite", `{"todos":[{"content":"a","status":"done","activeForm":"b"}]}`), "status")
}

// fsWithoutRoot is a workspace that is not a local folder.
type fsWithoutRoot struct{ workspace.FileSystem }

func (fsWithoutRoot) Root() string { return "" }

func TestProvidersRefuseMissingWorkspace(t *testing.T) {
	f := newFixture(t)
	env := tool.Env{RuntimeID: "rt", FS: fsWithoutRoot{f.fs}, Logger: slog.New(slog.DiscardHandler)}
	if _, err := ShellProvider().Tools(env); err == nil {
		t.Fatal("Bash provider accepted a workspace without a root folder")
	}
	if tools, err := FilesProvider().Tools(env); err != nil || len(tools) != 5 {
		t.Fatalf("file tools over a rootless workspace: %v, %d tools", err, len(tools))
	}
	env.FS = nil
	for _, p := range []tool.Provider{FilesProvider(), ShellProvider()} {
		if _, err := p.Tools(env); err == nil {
			t.Errorf("provider %s accepted an Env without a FileSystem", p.Name())
		}
	}
}

// A count the model sends as a number is a whole number: 2.0 reads as 2;
// 2.5 and one past any file's size (or past a float64's) are refused, each
// saying why.
func TestCountsAreWholeNumbers(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\ntwo\nthree\n")
	if r := f.call("Read", `{"file_path":"a.txt","offset":2,"limit":1.0}`); r.IsError || !strings.Contains(r.Content, "2\ttwo") || strings.Contains(r.Content, "three") {
		t.Errorf("limit 1.0: %+v", r)
	}
	for in, want := range map[string]string{
		`{"file_path":"a.txt","limit":2.5}`:   "2.5 is not a whole number",
		`{"file_path":"a.txt","limit":1e22}`:  "1e22 is out of range (a count is at most 1099511627776)",
		`{"file_path":"a.txt","limit":1e400}`: "1e400 is out of range (a count is at most 1099511627776)",
	} {
		if r := f.call("Read", in); !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("Read(%s) = %+v, want an error saying %q", in, r, want)
		}
	}
}

// Tools run without a registry (no schema validation) must still turn odd
// input into error observations, never panics.
func TestOddInputNeverPanics(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "hello\n")
	inputs := []string{
		``, `null`, `[]`, `"x"`, `{}`, `{"file_path":""}`, `{"file_path":"a.txt","offset":-3}`,
		`{"file_path":"a.txt","limit":2.5}`, `{"file_path":"a.txt","offset":1e300}`,
		`{"pattern":"(("}`, `{"pattern":"x","-A":-1}`, `{"pattern":"x","head_limit":-1}`,
		`{"pattern":"[","glob":"[["}`, `{"pattern":"x","glob":"!"}`, `{"command":""}`,
		`{"command":"true","timeout":-5}`, `{"todos":null}`, `{"todos":[{}]}`,
		`{"file_path":"a.txt","old_string":"","new_string":""}`, `{"file_path":"\u0000"}`,
		`{"pattern":"x","path":"\u0000"}`, `{"pattern":"/"}`, `{"pattern":"***/[a-"}`,
	}
	for _, tl := range f.reg.Tools() {
		for _, in := range inputs {
			r := tool.Run(context.Background(), tl, &tool.Call{Name: tl.Name(), Input: json.RawMessage(in), Scope: scope.Scope{SessionID: "s1"}})
			if strings.Contains(r.Content, "panic") {
				t.Errorf("%s(%s) panicked: %s", tl.Name(), in, r.Content)
			}
		}
	}
}

// Read's line says which lines it reads, in words: one line, or several.
func TestReadDisplaySaysTheLines(t *testing.T) {
	var r readTool
	for in, want := range map[string]string{
		`{"file_path":"a.go"}`:                        "a.go",
		`{"file_path":"a.go","offset":2,"limit":1}`:   "a.go from line 2 (1 line)",
		`{"file_path":"a.go","limit":20}`:             "a.go (20 lines)",
		`{"file_path":"a.go","offset":7,"limit":1.0}`: "a.go from line 7 (1 line)",
	} {
		if got := r.Display(json.RawMessage(in)).Summary; got != want {
			t.Errorf("Display(%s) = %q, want %q", in, got, want)
		}
	}
}
