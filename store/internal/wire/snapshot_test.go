package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
)

func TestSnapshotRoundTrip(t *testing.T) {
	recs := []SnapRecord{
		{Seq: 1, Time: time.Unix(0, 1234567890).UTC(), TurnID: "turn-1", Kind: "message", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("héllo, ünïcode 🐋")}}},
		{Seq: 2, Time: time.Unix(1700000000, 5).UTC(), Kind: "message", Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig"},
			llm.ToolUseBlock("t1", "Bash", json.RawMessage(" {not json\x00\xff ")),
			llm.ToolUseBlock("t2", "Read", json.RawMessage(`{}`)),
		}}},
		{Seq: 3, Kind: "summary", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "", true), {Type: llm.BlockToolUse, ID: "x", Input: json.RawMessage{}}}}},
		{Seq: 4, Kind: "message", Message: llm.Message{Role: llm.RoleAssistant}},
		// Media without their bytes, as a store's records hold them.
		{Seq: 5, Kind: "message", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{
			{Type: llm.BlockToolResult, ToolUseID: "t2", Content: "read"},
			llm.ResultMediaBlock("t2", &llm.Media{MediaType: llm.MediaPNG, Digest: "sha256:ab", Size: 9, Name: "a.png", Width: 3, Height: 2}),
			llm.DocumentBlock(&llm.Media{MediaType: llm.MediaPDF, Digest: "sha256:cd", Size: 4}),
		}}},
	}
	same := func(r SnapRecord) SnapRecord { return r }
	got, err := DecodeSnapshot(EncodeSnapshot(recs), nil, nil, same)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if recs[i].Time.IsZero() {
			recs[i].Time = time.Unix(0, recs[i].Time.UnixNano()).UTC()
		}
	}
	if !reflect.DeepEqual(got, recs) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, recs)
	}
	// Truncated or garbled snapshots are refused, never half read.
	b := EncodeSnapshot(recs)
	for _, bad := range [][]byte{nil, {9}, b[:len(b)-1], append(append([]byte(nil), b...), 0)} {
		if _, err := DecodeSnapshot(bad, nil, nil, same); err == nil {
			t.Errorf("a bad snapshot of %d bytes decoded", len(bad))
		}
	}
}

// Records carved from shared allocations are still each their own: a
// caller appending to one's blocks, or writing into one's input, changes
// no other record.
func TestSnapshotRecordsDoNotAlias(t *testing.T) {
	var recs []SnapRecord
	for i := range 300 {
		recs = append(recs, SnapRecord{Seq: int64(i + 1), Kind: "message", Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock("t", "Read", json.RawMessage(`{"n":1}`)),
		}}})
	}
	got, err := DecodeSnapshot(EncodeSnapshot(recs), nil, nil, func(r SnapRecord) SnapRecord { return r })
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Message.Content = append(got[i].Message.Content, llm.TextBlock("mine"))
		got[i].Message.Content[0].Input[1] = 'X'
	}
	for i, r := range got {
		if len(r.Message.Content) != 2 || r.Message.Content[1].Text != "mine" || string(r.Message.Content[0].Input) != `{Xn":1}` {
			t.Fatalf("record %d after each was changed on its own: %+v", i, r.Message.Content)
		}
	}
}
