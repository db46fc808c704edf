package openai

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// FuzzAccumulator feeds the stream accumulator any chunks a server of the
// protocol may send (one chunk's JSON a line; the seeds are the streams of
// testdata): it must never panic, and what it streamed must be what it
// returns — every delta names a block of the final message, a tool call
// is announced once, before its arguments, with the final id and name,
// the text and arguments streamed are the final ones, and every call has
// an id for its result to answer.
func FuzzAccumulator(f *testing.F) {
	llmtest.AddSeeds(f, filepath.Join("testdata", "*.chunks.txt"))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"Read","arguments":"1}"}}]},"finish_reason":"tool_calls"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var deltas []llm.Delta
		a := newAccumulator(func(d llm.Delta) { deltas = append(deltas, d) })
		for line := range bytes.Lines(data) {
			var ch sdk.ChatCompletionChunk
			if json.Unmarshal(line, &ch) != nil {
				continue // the stream's decoder refuses it before the accumulator sees it
			}
			if a.add(ch) != nil {
				return
			}
		}
		resp := a.response()
		llmtest.CheckDeltas(t, resp, deltas)
		for i, b := range resp.Message.Content {
			if b.Type == llm.BlockToolUse && b.ID == "" {
				t.Fatalf("block %d: a call without an id for its result to answer: %+v", i, b)
			}
		}
	})
}
