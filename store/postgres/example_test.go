package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/postgres"
)

// Two workers share a session through one database: the one holding the
// lease writes a step, any process reads it. (It needs a server, so it is
// compiled, not run, by go test.)
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("ORCA_STORE_DSN")) // postgres://user@host:5432/orca
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "coder-1"}); err != nil {
		log.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "worker-a", 30*time.Second); err != nil {
		log.Fatal(err) // a *store.LeaseError names the worker that holds it
	}
	step := store.Step{
		Owner:   "worker-a",
		Records: []store.Record{{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hello")}}}},
		Totals:  store.Totals{ToolCalls: 1},
	}
	recs, totals, err := s.AppendStep(ctx, "s1", step)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(recs[0].Seq, totals.ToolCalls)
}
