package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/orca-agent/orca/llm"
)

func TestRoundTripInputBytes(t *testing.T) {
	inputs := []string{
		`{"path":"a.go"}`,
		`{ "path" : "a.go",` + "\n\t" + `"n": 1 }`,
		` {"lead":true}`,
		`{"trail":true}` + "\n",
		`{"path": "unterminated`,
		`null`,
		`"just a string"`,
		`42`,
		`{"html":"<a href=\"x\">&amp;</a>"}`,
		`{"u":"\u00e9 é 한국어 🦀"}`,
		"{\"bad\":\"\xff\xfe\"}",
		"\xff not utf-8 at all",
	}
	for _, in := range inputs {
		m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("before"),
			llm.ToolUseBlock("t1", "Read", json.RawMessage(in)),
		}}
		data, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%q): %v", in, err)
		}
		if !utf8.Valid(data) || !json.Valid(data) {
			t.Fatalf("Encode(%q) = %q: not valid UTF-8 JSON", in, data)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("Decode(%q): %v", data, err)
		}
		if !bytes.Equal(got.Content[1].Input, []byte(in)) {
			t.Errorf("input %q came back as %q (stored %s)", in, got.Content[1].Input, data)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %q:\n got %#v\nwant %#v", in, got, m)
		}
	}
}

func TestVerbatimInputIsQueryableJSON(t *testing.T) {
	in := `{ "path" : "a.go" }`
	data, err := Encode(llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("t1", "Read", json.RawMessage(in))}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{ "path" : "a.go" }}]}`
	if string(data) != want {
		t.Errorf("Encode = %s\nwant     %s", data, want)
	}
}

func TestRoundTripShapes(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser},
		{Role: llm.RoleUser, Content: []llm.Block{}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "boom <&>", true), llm.ToolResultBlock("t2", "", false)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("a\x00b \u2028 🦀 e\u0301")}},
	}
	for _, m := range msgs {
		data, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, m)
		}
	}
}

// The stored form mirrors llm.Message and llm.Block field by field; a field
// added there must be added here, or it would be dropped silently.
func TestMirrorsLLMTypes(t *testing.T) {
	check := func(typ reflect.Type, want ...string) {
		t.Helper()
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v has fields %v; the stored form knows %v: update package wire", typ, got, want)
		}
	}
	check(reflect.TypeFor[llm.Message](), "Role", "Content")
	check(reflect.TypeFor[llm.Block](), "Type", "Text", "ID", "Name", "Input", "ToolUseID", "Content", "IsError", "Thinking", "Signature", "Media")
	check(reflect.TypeFor[llm.Media](), "MediaType", "Data", "Digest", "Size", "Name", "Width", "Height")
}

// Media are stored without their bytes: type, digest, size, name and
// dimensions, in the user's blocks and in a tool result's; Stored
// gives them back with their bytes and digest, as a store's read does
// once it has looked the bytes up; MediaOf lists what to keep.
func TestMediaWithoutBytes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nbytes")
	img := &llm.Media{MediaType: llm.MediaPNG, Data: png, Name: "bug.png", Width: 3, Height: 2}
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4"), Digest: "sha256:given"}
	res := llm.ToolResultBlock("c1", "read", false)
	m := llm.Message{Role: llm.RoleUser, Content: []llm.Block{res, llm.ResultMediaBlock("c1", img), llm.TextBlock("look"), llm.DocumentBlock(pdf)}}
	enc, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte("PDF-1.4")) || bytes.Contains(enc, []byte("Ynl0ZXM")) || !bytes.Contains(enc, []byte(Digest(img))) || !bytes.Contains(enc, []byte("sha256:given")) {
		t.Errorf("stored form %s", enc)
	}
	got, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Media{MediaType: llm.MediaPNG, Digest: Digest(img), Size: int64(len(png)), Name: "bug.png", Width: 3, Height: 2}
	if p := got.Content[1]; p.Type != llm.BlockImage || p.ToolUseID != "c1" || !reflect.DeepEqual(p.Media, want) {
		t.Errorf("decoded part %+v", p)
	}
	if d := got.Content[3]; d.Type != llm.BlockDocument || d.Media.Digest != "sha256:given" || d.Media.Data != nil || d.Media.Size != 8 {
		t.Errorf("decoded document %+v", d.Media)
	}
	stored, ok := Stored(m)
	if !ok || !bytes.Equal(stored.Content[1].Media.Data, png) || stored.Content[1].Media.Digest != want.Digest || stored.Content[1].Media == img {
		t.Errorf("Stored %+v", stored.Content[1].Media)
	}
	if all := m.Media(); len(all) != 2 || all[0] != img || all[1] != pdf {
		t.Errorf("Media %v", all)
	}
}

// Stored gives what a round trip through the stored form gives, or
// declines: for every shape of message, and for strings that are not
// UTF-8.
func TestStoredIsTheRoundTrip(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser},
		{Role: llm.RoleUser, Content: []llm.Block{}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("t1", "boom <&>", true), llm.ToolResultBlock("t2", "", false)}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("a\x00b \u2028 🦀 e\u0301 \x7f")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockThinking, Thinking: "hmm", Signature: "c2ln+/="},
			llm.ToolUseBlock("t1", "Read", json.RawMessage(`{"path":"a.go"}`)),
			llm.ToolUseBlock("t2", "Bash", json.RawMessage(" {not json\x00 ")),
			llm.ToolUseBlock("t3", "Grep", json.RawMessage("\xff\xfe")),
			llm.ToolUseBlock("t4", "Noop", json.RawMessage{}),
		}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("bad \xff byte")}},
		{Role: "\xc3", Content: []llm.Block{llm.TextBlock("ok")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("t\xff", "Read", json.RawMessage(`{}`))}},
	}
	for _, m := range msgs {
		data, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Stored(m)
		if !ok {
			if reflect.DeepEqual(want, m) {
				t.Errorf("Stored declined %#v, which the round trip keeps", m)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Stored(%#v)\n = %#v\nthe round trip gives %#v", m, got, want)
		}
		for i := range got.Content {
			if in := got.Content[i].Input; len(in) > 0 {
				in[0] ^= 0xff
				if m.Content[i].Input[0] == in[0] {
					t.Errorf("Stored shares the input of block %d with its argument", i)
				}
			}
		}
	}
}

// Rows written while a tool result's media were kept in its parts read
// back as the blocks that follow it.
func TestOldPartsReadAsBlocks(t *testing.T) {
	old := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"read","parts":[{"type":"image","media":{"media_type":"image/png","digest":"sha256:ab","size":9,"name":"a.png"}}]},{"type":"tool_result","tool_use_id":"c2","content":"ok"}]}`
	m, err := Decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Content
	if len(c) != 3 || c[0].ToolUseID != "c1" || c[1].Type != llm.BlockImage || c[1].ToolUseID != "c1" || c[1].Media.Digest != "sha256:ab" || c[1].Media.Name != "a.png" || c[2].ToolUseID != "c2" {
		t.Errorf("decoded %+v", c)
	}
	if p := llm.ResultMedia(c, 0); len(p) != 1 || p[0].Media != c[1].Media {
		t.Errorf("ResultMedia %+v", p)
	}
}
