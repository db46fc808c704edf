package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/orca-agent/orca/llm"
)

// fastSeeds are stored forms the fast path must take, and variants of them
// it must leave to encoding/json.
func fastSeeds(t testing.TB) [][]byte {
	msgs := []llm.Message{
		{Role: llm.RoleUser},
		{Role: llm.RoleUser, Content: []llm.Block{}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("héllo, 세계 🦀 \"quoted\" back\\slash /slash tab\t nl\n cr\r nul\x00 \u2028 <&>")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockThinking, Thinking: "hmm", Signature: "c2ln+/="},
			llm.TextBlock("Let me look."),
			llm.ToolUseBlock("toolu_01", "Read", json.RawMessage(`{ "path" : "a.go",`+"\n"+` "n": [1, 2.5e3, true, null, {"x": "\"y\""}] }`)),
			llm.ToolUseBlock("toolu_02", "Bash", json.RawMessage(` {"lead":true}`)),
			llm.ToolUseBlock("toolu_03", "Grep", json.RawMessage("{\"bad\":\"\xff\"}")),
			llm.ToolUseBlock("toolu_04", "Noop", json.RawMessage(`"just a string"`)),
			llm.ToolUseBlock("toolu_05", "Num", json.RawMessage(`42`)),
		}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("toolu_01", "package a\n", false), llm.ToolResultBlock("toolu_02", "exit status 1", true)}},
	}
	var out [][]byte
	for _, m := range msgs {
		data, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	for _, s := range []string{
		` {"role":"user","content":null}`,
		`{"role":"user","content":null} `,
		`{"role": "user","content":null}`,
		`{"Role":"user","content":null}`,
		`{"role":"user","role":"assistant","content":null}`,
		`{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}`,
		`{"role":"user","content":[{"type":"text","text":"\ud83e\udd80"}]}`,
		`{"role":"user","content":[{"type":"text","text":"\ud800"}]}`,
		`{"role":"user","content":[{"type":"text","text":"\u00e9\u0041"}]}`,
		`{"role":"user","content":[{"type":"tool_use","input":null}]}`,
		`{"role":"user","content":[{"type":"tool_use","input":{"a":}}]}`,
		`{"role":"user","content":[{"type":"tool_use","input":[1,2}]}`,
		`{"role":"user","content":[{"type":"tool_use","input":01}]}`,
		`{"role":"user","content":[{"type":"tool_use","input_text":""}]}`,
		`{"role":"user","content":[{"type":"tool_use","input_b64":""}]}`,
		`{"role":"user","content":[{"type":"tool_use","input_b64":"/w=="}]}`,
		`{"role":"user","content":[{"type":"tool_use","input_b64":"!!"}]}`,
		`{"role":"user","content":[{"type":"tool_result","is_error":true}]}`,
		`{"role":"user","content":[{"type":"tool_result","is_error":null}]}`,
		`{"role":"user","content":[{"type":"text","text":null}]}`,
		`{"role":"user","content":[{"type":"text","extra":1}]}`,
		"{\"role\":\"user\xff\",\"content\":null}",
		"{\"role\":\"us\ter\",\"content\":null}",
		`{"role":"user","content":[]}x`,
		`{"role":"user","content":[{},{"type":"text"}]}`,
		`{"role":"user","content":[,]}`,
		`{"role":"user",}`,
		`{"role":"user"`,
		`{}`,
		``,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// decodeJSON is Decode without the fast path.
func decodeJSON(data []byte) (llm.Message, error) {
	var w message
	if err := json.Unmarshal(data, &w); err != nil {
		return llm.Message{}, err
	}
	return fromWire(w), nil
}

// Whatever the fast path takes, it reads as json.Unmarshal does.
func checkFast(t *testing.T, data []byte) (took bool) {
	fast, ok := decodeFast(string(data))
	if !ok {
		return false
	}
	slow, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("the fast path took %q, which json.Unmarshal refuses: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %#v\nslow %#v", data, fast, slow)
	}
	return true
}

func TestDecodeFastAgreesWithJSON(t *testing.T) {
	seeds := fastSeeds(t)
	for i, data := range seeds {
		took := checkFast(t, data)
		if i < 5 && !took { // what Encode writes
			t.Errorf("the fast path declined Encode's %q", data)
		}
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, data := range fastSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFast(t, data) })
}

func BenchmarkDecode(b *testing.B) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.TextBlock("I'll read the file first."),
		llm.ToolUseBlock("toolu_1", "Read", json.RawMessage(`{"file_path": "internal/pkg1/file.go", "limit": 200}`)),
	}}
	data, err := Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
