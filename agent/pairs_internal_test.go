package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
)

func TestCheckPairs(t *testing.T) {
	use := func(id string) llm.Block { return llm.ToolUseBlock(id, "Read", json.RawMessage(`{}`)) }
	res := func(id string) llm.Block { return llm.ToolResultBlock(id, "ok", false) }
	user := func(bs ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: bs} }
	asst := func(bs ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: bs} }
	for _, tc := range []struct {
		name string
		msgs []llm.Message
		want string // "" for a conversation the providers take
	}{
		{"in order", []llm.Message{user(llm.TextBlock("go")), asst(llm.TextBlock("two"), use("a"), use("b")), user(res("a"), res("b"))}, ""},
		{"out of order", []llm.Message{user(llm.TextBlock("go")), asst(use("a"), use("b"), use("c")), user(res("c"), res("a"), llm.TextBlock("note"), res("b"))}, ""},
		{"partly in order", []llm.Message{user(llm.TextBlock("go")), asst(use("a"), use("b"), use("c")), user(res("a"), res("c"), res("b"))}, ""},
		{"one missing", []llm.Message{user(llm.TextBlock("go")), asst(use("a"), use("b")), user(res("b"))}, "message 1 makes 2 tool calls, and message 2 answers 1 of them"},
		{"a result twice for another's place", []llm.Message{user(llm.TextBlock("go")), asst(use("a"), use("b")), user(res("a"), res("a"))}, "message 1 makes 2 tool calls, and message 2 answers 1 of them"},
		{"twice, out of order", []llm.Message{user(llm.TextBlock("go")), asst(use("a"), use("b")), user(res("b"), res("b"))}, "answers 1 of them"},
		{"a result for no call", []llm.Message{user(llm.TextBlock("go")), asst(use("a")), user(res("a"), res("z"))}, `a result for tool call "z", which message 1 does not make`},
		{"a result after a user message", []llm.Message{user(llm.TextBlock("go")), user(res("a"))}, `a result for tool call "a"`},
		{"calls left open", []llm.Message{user(llm.TextBlock("go")), asst(use("a"))}, "no results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPairs(tc.msgs, 0)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("checkPairs: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("checkPairs: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A turn of many parallel calls is checked in time linear in them: the
// results, in order and reversed, each found once.
func BenchmarkCheckPairs(b *testing.B) {
	for _, n := range []int{10, 300, 3000} {
		for _, order := range []string{"in-order", "reversed"} {
			b.Run(fmt.Sprintf("calls=%d/%s", n, order), func(b *testing.B) {
				calls := llm.Message{Role: llm.RoleAssistant}
				results := llm.Message{Role: llm.RoleUser}
				for i := range n {
					calls.Content = append(calls.Content, llm.ToolUseBlock(fmt.Sprint("call_", i), "Read", json.RawMessage(`{}`)))
					j := i
					if order == "reversed" {
						j = n - 1 - i
					}
					results.Content = append(results.Content, llm.ToolResultBlock(fmt.Sprint("call_", j), "ok", false))
				}
				msgs := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("go")}}, calls, results}
				for b.Loop() {
					if err := checkPairs(msgs, 1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
			})
		}
	}
}
