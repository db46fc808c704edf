package session_test

import (
	"context"
	"fmt"
	"os"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/toolset"
)

// A live session runs one conversation's turns over a store, the one
// witness of its state: the second turn sees the first, and the totals and
// the budget outlive the handle.
func ExampleRouter_Open() {
	dir, _ := os.MkdirTemp("", "orca-session")
	defer os.RemoveAll(dir)
	model := script.New().Script("s1",
		script.Call("Write", map[string]string{"file_path": "notes.md", "content": "buy milk\n"}),
		script.Text("Noted."),
		script.Text("You asked me to note: buy milk."))
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "notes"}, agent.Collaborators{Client: model, Workspace: dir})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	st := store.NewMemory()
	defer st.Close()

	ctx := context.Background()
	router := session.NewRouter(rt, st, nil)
	s, err := router.Open(ctx, "s1", session.OpenOptions{})
	if err != nil {
		panic(err)
	}
	s.SetBudget(ctx, &budget.Limits{ToolCalls: 10})
	res, _ := s.Run(ctx, "Note: buy milk.")
	fmt.Println(res.StopReason, res.Answer)
	res, _ = s.Run(ctx, "What did I ask?")
	fmt.Println(res.Answer)
	s.Close(ctx)

	// Another handle, later: the store remembers.
	s, _ = router.Open(ctx, "s1", session.OpenOptions{})
	defer s.Close(ctx)
	t, _ := s.Totals(ctx)
	b, _ := s.Budget(ctx)
	fmt.Println(s.Source(), len(s.Transcript()), "messages,", t.Turns, "turns,", t.ToolCalls, "of", b.ToolCalls, "tool calls")
	// Output:
	// answered Noted.
	// You asked me to note: buy milk.
	// resumed 6 messages, 2 turns, 1 of 10 tool calls
}
