package scope_test

import (
	"encoding/json"
	"testing"

	"github.com/orca-agent/orca/scope"
)

func TestChildInheritsTheUsersSessionAndTurn(t *testing.T) {
	top := scope.Scope{RuntimeID: "rt", SessionID: "s", TurnID: "t1", ExecutionID: "e0"}
	fork := top.Child("rt/explorer", "e1")
	grand := fork.Child("rt/worker", "e2")
	want := scope.Scope{RuntimeID: "rt/worker", RootRuntimeID: "rt", SessionID: "s", TurnID: "t1", ExecutionID: "e2", ParentExecutionID: "e1", Depth: 2}
	if grand != want {
		t.Errorf("grandchild %+v, want %+v", grand, want)
	}
	if top.Fork() || !fork.Fork() || !grand.Fork() {
		t.Errorf("Fork(): top %v, fork %v, grand %v", top.Fork(), fork.Fork(), grand.Fork())
	}
	if top.Root() != "rt" || fork.Root() != "rt" || grand.Root() != "rt" {
		t.Errorf("roots %q %q %q, want rt", top.Root(), fork.Root(), grand.Root())
	}
}

func TestStateKeyKeepsForksApart(t *testing.T) {
	top := scope.Scope{RuntimeID: "rt", SessionID: "s", ExecutionID: "e0"}
	for _, tc := range []struct {
		s    scope.Scope
		want string
	}{
		{top, "s"},
		{top.Child("rt/x", "e1"), "exec:e1"},
		{scope.Scope{ExecutionID: "e9"}, "exec:e9"},
		{scope.Scope{}, ""},
	} {
		if got := tc.s.StateKey(); got != tc.want {
			t.Errorf("%+v: StateKey %q, want %q", tc.s, got, tc.want)
		}
	}
}

// The JSON form is flat where a Scope is embedded, and a user's turn
// carries no fork fields.
func TestJSONOfATurnHasNoForkFields(t *testing.T) {
	type envelope struct {
		Name string `json:"name"`
		scope.Scope
	}
	b, err := json.Marshal(envelope{"x", scope.Scope{RuntimeID: "rt", SessionID: "s", TurnID: "t", ExecutionID: "e"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"name":"x","runtime_id":"rt","session_id":"s","turn_id":"t","execution_id":"e"}`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
}
