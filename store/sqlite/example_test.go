package sqlite_test

import (
	"context"
	"fmt"
	"os"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

func ExampleOpen() {
	ctx := context.Background()
	workspace, err := os.MkdirTemp("", "orca-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(workspace)

	s, err := sqlite.Open(sqlite.DefaultPath(workspace)) // <workspace>/.orca/orca.db
	if err != nil {
		panic(err)
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "coder-1", Workspace: workspace}); err != nil {
		panic(err)
	}
	if _, err := s.Append(ctx, "s1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hello")}}}); err != nil {
		panic(err)
	}
	if err := s.SetBudget(ctx, "s1", &budget.Limits{CostUSD: 0.50}); err != nil {
		panic(err)
	}
	s.Close()

	// Another process, later: the session is all there.
	s, err = sqlite.Open(sqlite.DefaultPath(workspace))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	recs, _ := s.Records(ctx, "s1", store.RecordFilter{})
	budget, _ := s.Budget(ctx, "s1")
	fmt.Println(len(recs), recs[0].Seq, recs[0].Message.Text(), budget.CostUSD)
	// Output: 1 1 hello 0.5
}
