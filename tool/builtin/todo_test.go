package builtin

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/orca-agent/orca/tool"
)

func todoInputOf(todos ...Todo) map[string]any {
	return map[string]any{"todos": todos}
}

func TestTodoWriteRendersAndStoresPerSession(t *testing.T) {
	f := newFixture(t)
	list := []Todo{
		{Content: "Read the code", Status: TodoCompleted, ActiveForm: "Reading the code"},
		{Content: "Fix the bug", Status: TodoInProgress, ActiveForm: "Fixing the bug"},
		{Content: "Run the tests", Status: TodoPending, ActiveForm: "Running the tests"},
	}
	got := f.ok(f.callCtx(context.Background(), "alice", "TodoWrite", todoInputOf(list...)))
	contains(t, got, "[x] Read the code\n[>] Fix the bug\n[ ] Run the tests\n", "3 todos: 1 completed, 1 in progress, 1 pending.")

	f.ok(f.callCtx(context.Background(), "bob", "TodoWrite", todoInputOf(Todo{Content: "Other", Status: TodoPending, ActiveForm: "Doing other"})))

	tw, _ := f.reg.Lookup("TodoWrite")
	if stored, ok := Todos(tw, "alice"); !ok || !slices.Equal(stored, list) {
		t.Fatalf("alice's todos = %v, %v", stored, ok)
	}
	if stored, ok := Todos(tw, "bob"); !ok || len(stored) != 1 || stored[0].Content != "Other" {
		t.Fatalf("bob's todos = %v, %v", stored, ok)
	}
	if _, ok := Todos(tw, "carol"); ok {
		t.Fatal("a session that wrote nothing has a list")
	}

	// A new call replaces the session's list; an empty list clears it.
	got = f.ok(f.callCtx(context.Background(), "alice", "TodoWrite", map[string]any{"todos": []Todo{}}))
	contains(t, got, "empty")
	if stored, ok := Todos(tw, "alice"); !ok || len(stored) != 0 {
		t.Fatalf("alice's todos after clearing = %v, %v", stored, ok)
	}
	// The accessor hands out copies.
	stored, _ := Todos(tw, "bob")
	stored[0].Content = "changed"
	if again, _ := Todos(tw, "bob"); again[0].Content != "Other" {
		t.Fatal("Todos shares its slice with the tool")
	}
}

func TestTodoWriteRefusesCallsWithoutSession(t *testing.T) {
	f := newFixture(t)
	r := f.callCtx(context.Background(), "", "TodoWrite", todoInputOf(Todo{Content: "x", Status: TodoPending, ActiveForm: "xing"}))
	f.fails(r, "session")
	tw, _ := f.reg.Lookup("TodoWrite")
	if _, ok := Todos(tw, ""); ok {
		t.Fatal("a call without a session stored a list")
	}
	if _, ok := Todos(nil, "s1"); ok {
		t.Fatal("Todos of a nil tool reported a list")
	}
}

func TestTodoListsBelongToOneRuntime(t *testing.T) {
	f := newFixture(t)
	other := newRegistry(t, f.fs)
	f.ok(f.call("TodoWrite", todoInputOf(Todo{Content: "mine", Status: TodoPending, ActiveForm: "doing mine"})))
	tw, _ := other.Lookup("TodoWrite")
	if _, ok := Todos(tw, "s1"); ok {
		t.Fatal("a second runtime sees the first runtime's todo list")
	}
	// Each Tools call builds new state.
	p := TodoProvider()
	env := tool.Env{Logger: slog.New(slog.DiscardHandler)}
	a, _ := p.Tools(env)
	b, _ := p.Tools(env)
	if a[0] == b[0] {
		t.Fatal("TodoProvider returned the same tool twice")
	}
}
