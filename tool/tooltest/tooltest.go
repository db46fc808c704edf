// Package tooltest is the conformance kit of tool.Tool, beside its
// contract (as testing/fstest is io/fs's): a tool's author runs Run from a
// test of their own to prove that the runtime can offer the tool, check
// its input and call it — a valid name and a description, an input schema
// that compiles and tells the calls a model could make from those it must
// not, Access and Display that never panic whatever the model sends, and
// calls that return once their context is done and leave no goroutine
// behind.
//
//	func TestWeatherConforms(t *testing.T) {
//		tooltest.Run(t, weather, tooltest.Case{
//			Inputs:  []tooltest.Input{{JSON: `{"city": "Oslo"}`}},
//			Invalid: []string{`{"days": 2}`},
//		})
//	}
//
// Each property is a subtest, so `go test -run 'Weather/Access'` runs one
// of them. The kit asserts what package tool's contract says and nothing
// more: what a call answers is the tool's own tests' business.
package tooltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
)

// Case is what the kit needs to know of the tool under test.
type Case struct {
	// Inputs are calls a model could make: the schema must accept each.
	// The kit runs every one of them, several times and at once (so they
	// should touch only the test's own workspace), and asks Access and
	// Display of each. At least one is needed; the first that is an
	// object is the base of the odd inputs the kit makes up (a field
	// null, of another type, huge, of invalid UTF-8).
	Inputs []Input
	// Invalid are inputs the schema must refuse, each for a reason of the
	// tool's own: a required field missing, a value of the wrong type or
	// out of its enum. The kit adds the inputs no tool's schema accepts
	// (malformed JSON, values that are not objects).
	Invalid []string
	// Blocking, if not "", is an input whose call goes on until its
	// context is done (Bash's `sleep 60`): the kit cancels such a call
	// while it runs and wants it back within Grace. Without it, only
	// calls whose context was done before they started are checked.
	Blocking string
	// Context, if set, returns the context a call runs in from the kit's:
	// what the runtime would hand the tool there (a subagent.Forker for a
	// tool that forks, a tool.Granter). The kit itself hands a tool whose
	// traits say Background a tool.Background of its own, as the runtime
	// does, and stops the tasks started in it at the end of each check.
	Context func(ctx context.Context) context.Context
	// Scope is the scope of every call; the zero Scope means runtime
	// "tooltest", session "tooltest-session", turn "tooltest-turn" and
	// execution "tooltest-execution".
	Scope scope.Scope
	// Grace is how long a call, or a background task, may take to return
	// once its context is done; 5s if zero.
	Grace time.Duration
}

// Input is one call a model could make, and, optionally, what the tool
// must declare of it.
type Input struct {
	// JSON is the call's input.
	JSON string
	// Access, if not nil, is what Access must return for the call
	// (compared field by field; a nil and an empty list are the same).
	Access *tool.Access
	// Display, if not nil, is what Display must return for the call.
	Display *tool.Display
}

// DefaultGrace is Case.Grace when it is zero.
const DefaultGrace = 5 * time.Second

// Run runs the conformance suite on t, with the calls c describes. It
// does not call t.Parallel, and must not be run beside tests that start
// goroutines: the leak checks count every goroutine the process starts
// while a check runs.
//
// The checks, one subtest each:
//
//   - Name: the name is one the registry takes (names.Token: 1 to 64
//     ASCII letters, digits, '_' and '-'), the same at every call;
//   - Description: not blank, the same at every call;
//   - Schema: compiles as the registry compiles input schemas (an object
//     schema, tool.CompileSchema), the same at every call;
//   - Register: tool.Registry.Add takes the tool (a typed tool's
//     construction errors and its aliases show here);
//   - Traits: the same at every call; every alias a valid name other
//     than the tool's;
//   - Valid: the registry accepts every one of c.Inputs;
//   - Invalid: the registry refuses every one of c.Invalid, and malformed
//     JSON and values that are not objects, with an error wrapping
//     tool.ErrInvalidInput that names the tool, and a call of them is an
//     error observation;
//   - Access, Display: for every input — c.Inputs, c.Invalid, malformed
//     JSON and the odd inputs the kit makes — neither panics and both say
//     the same when asked twice; no path is empty and a ReadOnly tool
//     writes none; a Summary is one line; for c.Inputs, what Input.Access
//     and Input.Display say;
//   - CommandRunner (for a tool.CommandRunner): the input CommandInput
//     returns is valid, and its Access names the command;
//   - Execute: every one of c.Inputs runs without a panic; a
//     Result.Response encodes to a JSON object; no goroutine outlives the
//     calls, and background tasks end once their context is done;
//   - Concurrent: the calls of c.Inputs run at once, twice each, without
//     a panic (run the tests with -race to see data races);
//   - Cancelled: a call whose context is done — before it starts, and
//     while c.Blocking runs — returns within c.Grace and leaves no
//     goroutine behind.
func Run(t *testing.T, tl tool.Tool, c Case) {
	t.Helper()
	k, err := newKit(tl, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) { ch.fn(k, t) })
	}
}

// kit is one tool under test, with its case.
type kit struct {
	tool   tool.Tool
	c      Case
	scope  scope.Scope
	grace  time.Duration
	inputs []odd // every input Access and Display are asked of
}

func newKit(tl tool.Tool, c Case) (*kit, error) {
	if tl == nil {
		return nil, fmt.Errorf("tooltest: the tool is nil")
	}
	if len(c.Inputs) == 0 {
		return nil, fmt.Errorf("tooltest: Case.Inputs is empty: the kit needs at least one call a model could make of %s", tl.Name())
	}
	k := &kit{tool: tl, c: c, scope: c.Scope, grace: c.Grace}
	if k.scope == (scope.Scope{}) {
		k.scope = scope.Scope{RuntimeID: "tooltest", SessionID: "tooltest-session", TurnID: "tooltest-turn", ExecutionID: "tooltest-execution"}
	}
	if k.grace <= 0 {
		k.grace = DefaultGrace
	}
	k.inputs = oddInputs(tl.Schema(), c)
	return k, nil
}

// check is one property of the suite: a subtest of Run.
type check struct {
	name string
	fn   func(k *kit, t testing.TB)
}

// checks are the suite, in the order Run runs them.
var checks = []check{
	{"Name", (*kit).checkName},
	{"Description", (*kit).checkDescription},
	{"Schema", (*kit).checkSchema},
	{"Register", (*kit).checkRegister},
	{"Traits", (*kit).checkTraits},
	{"Valid", (*kit).checkValid},
	{"Invalid", (*kit).checkInvalid},
	{"Access", (*kit).checkAccess},
	{"Display", (*kit).checkDisplay},
	{"CommandRunner", (*kit).checkCommandRunner},
	{"Execute", (*kit).checkExecute},
	{"Concurrent", (*kit).checkConcurrent},
	{"Cancelled", (*kit).checkCancelled},
}
