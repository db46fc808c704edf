package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

func ExampleNewMemory() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()

	// Every session starts with Provision; a write to any other is refused.
	if _, err := s.Append(ctx, "s1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser}}); errors.Is(err, store.ErrNotProvisioned) {
		fmt.Println("refused:", err)
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "coder-1"}); err != nil {
		panic(err)
	}

	recs, err := s.Append(ctx, "s1",
		store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("What is in a.go?")}}},
		store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("A package.")}}},
	)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Seq, r.Message.Role, r.Message.Text())
	}

	// A compaction: the summary stands for records 1–2 from now on.
	if _, err := s.Append(ctx, "s1", store.Record{Kind: store.KindSummary, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("The user asked about a.go.")}}}); err != nil {
		panic(err)
	}
	if err := s.MarkCompacted(ctx, "s1", 2); err != nil {
		panic(err)
	}
	live, _ := s.Records(ctx, "s1", store.RecordFilter{})
	fmt.Println(len(live), live[0].Kind, live[0].Message.Text())

	total, _ := s.AddTotals(ctx, "s1", store.Totals{Usage: llm.Usage{InputTokens: 120, OutputTokens: 8}, ToolCalls: 1})
	fmt.Println(total.Usage.Total(), total.ToolCalls)

	// Output:
	// refused: append to session "s1": store: session not provisioned
	// 1 user What is in a.go?
	// 2 assistant A package.
	// 1 summary The user asked about a.go.
	// 128 1
}
