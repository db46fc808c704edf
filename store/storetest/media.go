package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// testMedia: images and documents come back with their bytes — in the
// user's blocks and in a tool result's parts, from Append and from
// Records, in every session that shows them — and with their digest,
// size, name and dimensions.
func testMedia(t *testing.T, s store.Store) {
	data := bytes.Repeat([]byte("\x89PNG\r\n\x1a\n-pixels-"), 1000)
	sum := sha256.Sum256(data)
	img := &llm.Media{MediaType: llm.MediaPNG, Data: data, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data)), Name: "shots/bug.png", Width: 300, Height: 200}
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4\n%%EOF\n"), Name: "spec.pdf"}
	wantPDF := *pdf
	sumPDF := sha256.Sum256(pdf.Data)
	wantPDF.Digest, wantPDF.Size = "sha256:"+hex.EncodeToString(sumPDF[:]), int64(len(pdf.Data))
	res := llm.ToolResultBlock("c1", "shots/bug.png: image/png 300×200", false)
	shown := llm.ImageBlock(img)
	shown.ToolUseID = "c1"
	recs := []store.Record{
		{Kind: "message", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), llm.ImageBlock(img), llm.DocumentBlock(pdf)}}},
		{Kind: "message", Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock("c1", "Read", []byte(`{"file_path":"shots/bug.png"}`))}}},
		{Kind: "message", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{res, shown}}},
	}
	check := func(what string, got []store.Record) {
		t.Helper()
		if len(got) != 3 {
			t.Fatalf("%s: %d records", what, len(got))
		}
		u := got[0].Message.Content
		if len(u) != 3 || !u[1].Media.Equal(img) || !u[2].Media.Equal(&wantPDF) || u[2].Type != llm.BlockDocument {
			t.Errorf("%s: the user's media %v, %v", what, u[1].Media, u[2].Media)
		}
		r := got[2].Message.Content
		if len(r) != 2 || r[0].Content != res.Content || r[1].Type != llm.BlockImage || r[1].ToolUseID != "c1" || !r[1].Media.Equal(img) {
			t.Errorf("%s: the tool result %+v", what, r)
		}
	}
	for _, id := range []string{"m1", "m2"} {
		provision(t, s, id, "r1")
		check("Append", appendRecs(t, s, id, recs...))
		check("Records", records(t, s, id, store.RecordFilter{}))
	}
}

// RunAttachmentsDeleted is for stores that keep media bytes apart, once
// each (the SQL stores' attachments table): count returns how many they
// keep. An image two sessions show is kept once, and until the last of
// them is deleted; one only a deleted session showed goes with it.
func RunAttachmentsDeleted(t *testing.T, s store.Store, count func() int) {
	t.Helper()
	shared := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG\r\n\x1a\nshared")}
	own := &llm.Media{MediaType: llm.MediaPNG, Data: []byte("\x89PNG\r\n\x1a\nown")}
	show := func(ms ...*llm.Media) store.Record {
		c := []llm.Block{llm.TextBlock("look")}
		for _, m := range ms {
			c = append(c, llm.ImageBlock(m))
		}
		return store.Record{Kind: "message", Message: llm.Message{Role: llm.RoleUser, Content: c}}
	}
	provision(t, s, "a1", "r1")
	provision(t, s, "a2", "r1")
	appendRecs(t, s, "a1", show(shared, own), show(shared))
	appendRecs(t, s, "a2", show(shared))
	if n := count(); n != 2 {
		t.Fatalf("%d attachments kept for 2 images", n)
	}
	if err := s.DeleteSession(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d attachments kept after deleting the only session that showed one", n)
	}
	if got := records(t, s, "a2", store.RecordFilter{}); !bytes.Equal(got[0].Message.Content[1].Media.Data, shared.Data) {
		t.Errorf("the other session lost its image: %+v", got[0].Message.Content[1].Media)
	}
	if err := s.DeleteSession(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d attachments kept with no session left", n)
	}
}
