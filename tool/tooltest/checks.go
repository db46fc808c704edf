package tooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/internal/names"
	"github.com/orca-agent/orca/tool"
)

func (k *kit) checkName(t testing.TB) {
	name := k.tool.Name()
	if !names.Token(name) {
		t.Errorf("Name() = %q: a tool's name is 1 to %d ASCII letters, digits, '_' and '-' (the providers' rule, ^[A-Za-z0-9_-]{1,64}$), or the registry refuses it", name, names.MaxLen)
	}
	if again := k.tool.Name(); again != name {
		t.Errorf("Name() = %q, then %q: the registry keys the tool by its name", name, again)
	}
}

func (k *kit) checkDescription(t testing.TB) {
	d := k.tool.Description()
	if strings.TrimSpace(d) == "" {
		t.Errorf("Description() = %q: the model learns from it what the tool does and when to use it", d)
	}
	if again := k.tool.Description(); again != d {
		t.Errorf("Description() changed between two calls (%s, then %s): the model is offered one", show(d), show(again))
	}
}

func (k *kit) checkSchema(t testing.TB) {
	raw := k.tool.Schema()
	if _, err := tool.CompileSchema(k.tool.Name(), raw); err != nil {
		t.Errorf("Schema() is no input schema the registry compiles: %v\nthe schema: %s", err, show(string(raw)))
	}
	if again := k.tool.Schema(); !bytes.Equal(again, raw) {
		t.Errorf("Schema() changed between two calls (%s, then %s): the registry compiles it once and checks every call against that, while the model is offered it anew", show(string(raw)), show(string(again)))
	}
}

func (k *kit) checkRegister(t testing.TB) {
	if err := tool.NewRegistry().Add(k.tool); err != nil {
		t.Errorf("Registry.Add refuses the tool: %v", err)
	}
}

func (k *kit) checkTraits(t testing.TB) {
	tr := tool.TraitsOf(k.tool)
	if again := tool.TraitsOf(k.tool); !reflect.DeepEqual(tr, again) {
		t.Errorf("Traits() = %+v, then %+v: the policy, the runtime and the registry read them at different times, and must read the same", tr, again)
	}
	for _, a := range tr.Aliases {
		if !names.Token(a) || a == k.tool.Name() {
			t.Errorf("alias %q: an alias is another name the tool goes by, a valid tool name that is not %q", a, k.tool.Name())
		}
	}
}

func (k *kit) checkValid(t testing.TB) {
	reg := k.registry(t)
	for i, in := range k.c.Inputs {
		if err := reg.Validate(k.tool.Name(), json.RawMessage(in.JSON)); err != nil {
			t.Errorf("Case.Inputs[%d] %s is refused, and the model's calls like it would be: %v", i, show(in.JSON), err)
		}
	}
}

func (k *kit) checkInvalid(t testing.TB) {
	reg := k.registry(t)
	name := k.tool.Name()
	refuse := func(in, what string) {
		t.Helper()
		err := reg.Validate(name, json.RawMessage(in))
		if err == nil {
			t.Errorf("%s %s is accepted: the registry would run the tool with it", what, show(in))
			return
		}
		if !errors.Is(err, tool.ErrInvalidInput) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s %s is refused with %q, which does not wrap tool.ErrInvalidInput and name the tool", what, show(in), err)
		}
		if res := reg.Call(context.Background(), k.call(in)); !res.IsError || !strings.Contains(res.Content, tool.ErrInvalidInput.Error()) {
			t.Errorf("a call of %s %s gives %+v, want the error observation saying the input is invalid", what, show(in), res)
		}
	}
	for i, in := range k.c.Invalid {
		refuse(in, fmt.Sprintf("Case.Invalid[%d]", i))
	}
	for _, in := range malformed {
		refuse(in, "the malformed input")
	}
}

func (k *kit) checkAccess(t testing.TB) {
	_, declares := k.tool.(tool.Accessor)
	if !declares && !slices.ContainsFunc(k.c.Inputs, func(in Input) bool { return in.Access != nil }) {
		t.Skip("the tool is no tool.Accessor: its calls touch no path and run no command the policy can see")
	}
	readOnly := tool.TraitsOf(k.tool).ReadOnly
	r := newReport(t)
	defer r.done()
	for _, in := range k.inputs {
		var a tool.Access
		if p, stack := caught(func() { a = tool.AccessOf(k.tool, json.RawMessage(in.json)) }); p != nil {
			r.errorf("Access panicked", "Access panicked on %s, %s: %v%s", in.what, show(in.json), p, r.first("Access panicked", stack))
			continue
		}
		if again := tool.AccessOf(k.tool, json.RawMessage(in.json)); !sameAccess(a, again) {
			r.errorf("Access changed", "Access of %s, %s, is %+v, then %+v: what a call touches is read from its input alone, and the policy and the hooks must read the same", in.what, show(in.json), a, again)
		}
		for field, paths := range map[string][]string{"Reads": a.Reads, "Writes": a.Writes} {
			if slices.Contains(paths, "") {
				r.errorf("Access held an empty path", "Access of %s, %s: %s holds an empty path, which names no file: leave it out", in.what, show(in.json), field)
			}
		}
		if readOnly && len(a.Writes) > 0 {
			r.errorf("Access wrote for a ReadOnly tool", "Access of %s, %s, writes %q, but the tool's traits say ReadOnly: it changes nothing, so it runs unasked", in.what, show(in.json), a.Writes)
		}
		if in.want != nil && in.want.Access != nil && !sameAccess(a, *in.want.Access) {
			t.Errorf("Access of %s, %s = %+v, want %+v", in.what, show(in.json), a, *in.want.Access)
		}
	}
}

func sameAccess(a, b tool.Access) bool {
	return slices.Equal(a.Reads, b.Reads) && slices.Equal(a.Writes, b.Writes) && a.Command == b.Command
}

func (k *kit) checkDisplay(t testing.TB) {
	_, declares := k.tool.(tool.Displayer)
	if !declares && !slices.ContainsFunc(k.c.Inputs, func(in Input) bool { return in.Display != nil }) {
		t.Skip("the tool is no tool.Displayer: UIs show its calls by their arguments")
	}
	r := newReport(t)
	defer r.done()
	for _, in := range k.inputs {
		var d tool.Display
		if p, stack := caught(func() { d = tool.DisplayOf(k.tool, json.RawMessage(in.json)) }); p != nil {
			r.errorf("Display panicked", "Display panicked on %s, %s: %v%s", in.what, show(in.json), p, r.first("Display panicked", stack))
			continue
		}
		if again := tool.DisplayOf(k.tool, json.RawMessage(in.json)); again != d {
			r.errorf("Display changed", "Display of %s, %s, is %+v, then %+v: how a call is shown is read from its input alone", in.what, show(in.json), d, again)
		}
		if strings.ContainsAny(d.Summary, "\r\n") {
			r.errorf("Summary was more than one line", "Display of %s, %s: Summary %s is more than one line (Detail is for what does not fit)", in.what, show(in.json), show(d.Summary))
		}
		if in.want != nil && in.want.Display != nil && d != *in.want.Display {
			t.Errorf("Display of %s, %s = %+v, want %+v", in.what, show(in.json), d, *in.want.Display)
		}
	}
}

// report reports the first few problems of each kind, and then how many
// there were: one defect shows on many of the odd inputs.
type report struct {
	t     testing.TB
	kinds []string
	n     map[string]int
}

const reportMax = 3

func newReport(t testing.TB) *report { return &report{t: t, n: map[string]int{}} }

func (r *report) errorf(kind, format string, args ...any) {
	r.t.Helper()
	if r.n[kind] == 0 {
		r.kinds = append(r.kinds, kind)
	}
	if r.n[kind]++; r.n[kind] <= reportMax {
		r.t.Errorf(format, args...)
	}
}

// first returns stack, on a line of its own, for the first problem of
// kind only.
func (r *report) first(kind, stack string) string {
	if r.n[kind] > 0 {
		return ""
	}
	return "\n" + stack
}

func (r *report) done() {
	r.t.Helper()
	for _, kind := range r.kinds {
		if n := r.n[kind]; n > reportMax {
			r.t.Errorf("%s on %d inputs in all (the first %d are above)", kind, n, reportMax)
		}
	}
}

// commands are what the kit asks a CommandRunner to run: plain, quoted,
// on two lines.
var commands = []struct{ command, description string }{
	{"echo tooltest", "Print a word"},
	{`printf '%s\n' "two words" 'and "quotes"' \$HOME`, "Print quoted words"},
	{"cd sub &&\nls -la", "List a folder, on two lines"},
}

func (k *kit) checkCommandRunner(t testing.TB) {
	cr, ok := k.tool.(tool.CommandRunner)
	if !ok {
		t.Skip("the tool is no tool.CommandRunner")
	}
	reg := k.registry(t)
	for _, c := range commands {
		var in json.RawMessage
		if p, stack := caught(func() { in = cr.CommandInput(c.command, c.description) }); p != nil {
			t.Errorf("CommandInput(%q, %q) panicked: %v\n%s", c.command, c.description, p, stack)
			continue
		}
		// The runtime's verification runs this input without the
		// registry's check: it must pass it all the same.
		if err := reg.Validate(k.tool.Name(), in); err != nil {
			t.Errorf("CommandInput(%q, %q) = %s, which the tool's schema refuses: %v", c.command, c.description, show(string(in)), err)
			continue
		}
		if got := tool.AccessOf(k.tool, in).Command; got != c.command {
			t.Errorf("Access(CommandInput(%q, …)).Command = %q: a call that runs a command must say which, or the policy does not judge it", c.command, got)
		}
	}
}

func (k *kit) checkExecute(t testing.TB) {
	bg := k.background(t)
	before := goleak.IgnoreCurrent()
	for i, in := range k.c.Inputs {
		o := k.run(context.Background(), bg, in.JSON)
		if o.panicked != nil {
			t.Errorf("Execute panicked on Case.Inputs[%d] %s: %v\n%s", i, show(in.JSON), o.panicked, o.stack)
			continue
		}
		if err := responseObject(o.res.Response); err != nil {
			t.Errorf("Execute of Case.Inputs[%d] %s: Result.Response %v: it must encode to a JSON object, for hooks and programs", i, show(in.JSON), err)
		}
	}
	if bg.stop() {
		k.noLeaks(t, before, "after the calls of Case.Inputs returned")
	}
}

// responseObject says why r, a Result.Response, does not encode to a
// JSON object; nil if it does, or is nil.
func responseObject(r any) error {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("%T does not encode to JSON: %w", r, err)
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("%T encodes to %s", r, show(string(b)))
	}
	return nil
}

func (k *kit) checkConcurrent(t testing.TB) {
	bg := k.background(t)
	outcomes := make([][2]outcome, len(k.c.Inputs))
	var wg sync.WaitGroup
	for i, in := range k.c.Inputs {
		for j := range 2 {
			wg.Go(func() { outcomes[i][j] = k.run(context.Background(), bg, in.JSON) })
		}
	}
	wg.Wait()
	bg.stop()
	r := newReport(t)
	defer r.done()
	for i, two := range outcomes {
		for _, o := range two {
			if o.panicked != nil {
				in := k.c.Inputs[i].JSON
				r.errorf("Execute panicked", "Execute panicked on Case.Inputs[%d] %s, called beside the other inputs: %v%s", i, show(in), o.panicked, r.first("Execute panicked", o.stack))
			}
		}
	}
}

func (k *kit) checkCancelled(t testing.TB) {
	bg := k.background(t)
	before := goleak.IgnoreCurrent()
	returned := true
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, in := range k.c.Inputs {
		returned = k.returns(t, ctx, bg, in.JSON, fmt.Sprintf("Case.Inputs[%d]", i), "a context done before the call") && returned
	}
	if k.c.Blocking != "" {
		// The call is cancelled while it runs: a little after it started,
		// there being no telling when it blocks.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		returned = k.returns(t, ctx, bg, k.c.Blocking, "Case.Blocking", "a context cancelled while it runs") && returned
	}
	if bg.stop() && returned {
		k.noLeaks(t, before, "after the cancelled calls returned")
	}
}

// returns runs a call of input (what names it) in ctx and reports
// whether it returned within the grace of ctx's end.
func (k *kit) returns(t testing.TB, ctx context.Context, bg *background, input, what, how string) bool {
	t.Helper()
	done := make(chan outcome, 1)
	go func() { done <- k.run(ctx, bg, input) }()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		timer := time.NewTimer(k.grace)
		defer timer.Stop()
		select {
		case o = <-done:
		case <-timer.C:
			t.Errorf("Execute of %s %s, with %s, did not return within %v of its context's end: Execute must return promptly once ctx is done", what, show(input), how, k.grace)
			return false
		}
	}
	switch {
	case o.panicked != nil:
		t.Errorf("Execute panicked on %s %s, with %s: %v\n%s", what, show(input), how, o.panicked, o.stack)
	case !o.ctxDone:
		t.Errorf("Execute of %s %s returned before its context was done, so its cancellation was not tried: Case.Blocking must run until its context is done (it returned %+v)", what, show(input), o.res)
	}
	return true
}

// outcome is how one call went.
type outcome struct {
	res      tool.Result
	panicked any    // what Execute panicked with
	stack    string // where
	ctxDone  bool   // the call's context was done when it returned
}

var callN atomic.Int64

// call returns a call of the tool with input, as the runtime would make
// it.
func (k *kit) call(input string) *tool.Call {
	return &tool.Call{ID: fmt.Sprintf("tooltest-%d", callN.Add(1)), Name: k.tool.Name(), Input: json.RawMessage(input), Scope: k.scope}
}

// run calls Execute with input in ctx and what the runtime would add to
// it: the case's Context, bg.
func (k *kit) run(ctx context.Context, bg *background, input string) (o outcome) {
	if k.c.Context != nil {
		ctx = k.c.Context(ctx)
	}
	if bg != nil {
		ctx = tool.WithBackground(ctx, bg)
	}
	call := k.call(input)
	o.panicked, o.stack = caught(func() { o.res = k.tool.Execute(ctx, call) })
	o.ctxDone = ctx.Err() != nil
	return o
}

// registry returns a registry holding the tool, or ends the check.
func (k *kit) registry(t testing.TB) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Add(k.tool); err != nil {
		t.Fatalf("cannot check: the registry refuses the tool (see Register): %v", err)
	}
	return reg
}

// noLeaks fails t if a goroutine started since before still runs (after
// goleak's retries, which give ending goroutines a moment).
func (k *kit) noLeaks(t testing.TB, before goleak.Option, when string) {
	t.Helper()
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines still run %s: a call's goroutines must end before it returns (work that outlives it runs as a tool.Background task)\n%v", when, err)
	}
}

// caught runs fn and returns what it panicked with, and the stack.
func caught(fn func()) (p any, stack string) {
	defer func() {
		if r := recover(); r != nil {
			p, stack = r, string(debug.Stack())
		}
	}()
	fn()
	return nil, ""
}

// show quotes s for a failure message, cut if long.
func show(s string) string {
	const max = 120
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:max]), len(s))
}
