package anthropic

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// FuzzAccumulator feeds the stream accumulator any events the API may
// send (one event's JSON a line; the seeds are the streams of testdata):
// it must never panic, what it streamed must be what it returns
// (llmtest.CheckDeltas), and every call has an input (at least {}).
func FuzzAccumulator(f *testing.F) {
	llmtest.AddSeeds(f, filepath.Join("testdata", "*.chunks.txt"))
	f.Add([]byte(`{"type":"message_start","message":{"model":"m","usage":{"input_tokens":3}}}
{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"I'll "}}
{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"read it."}}
{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}}
{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}}
{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"a.txt\"}"}}
{"type":"content_block_start","index":2,"content_block":{"type":"thinking","thinking":"","signature":""}}
{"type":"content_block_delta","index":2,"delta":{"type":"signature_delta","signature":"sig"}}
{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}
{"type":"message_stop"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var deltas []llm.Delta
		a := newAccumulator(func(d llm.Delta) { deltas = append(deltas, d) })
		for line := range bytes.Lines(data) {
			var ev sdk.MessageStreamEventUnion
			if json.Unmarshal(line, &ev) != nil {
				continue // the stream's decoder refuses it before the accumulator sees it
			}
			a.add(ev)
		}
		resp := a.response()
		llmtest.CheckDeltas(t, resp, deltas)
		for i, b := range resp.Message.Content {
			if b.Type == llm.BlockToolUse && len(b.Input) == 0 {
				t.Fatalf("block %d: a call without input: %+v", i, b)
			}
		}
	})
}
