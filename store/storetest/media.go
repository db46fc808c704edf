package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
// them is deleted; one only a deleted session showed goes with it, and so
// does one only put for it (PutAttachments), never shown.
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
	put(t, s, "a2", shared) // kept already: not again
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
	// Put, never shown in a record: they go with the session too, and
	// with DeleteSession of an id never provisioned.
	provision(t, s, "a3", "r1")
	put(t, s, "a3", own)
	put(t, s, "a4", shared)
	if n := count(); n != 2 {
		t.Fatalf("%d attachments kept for 2 put", n)
	}
	if err := s.DeleteSession(ctx, "a3"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "a4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting a session never provisioned: %v, want ErrNotFound", err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d attachments kept, put for deleted sessions and never shown", n)
	}
}

// image returns a PNG's worth of bytes, unique to what, described in
// full: digest, size, name and dimensions.
func image(what string, width, height int) *llm.Media {
	data := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte(what), 500)...)
	return &llm.Media{MediaType: llm.MediaPNG, Data: data, Digest: llm.DigestOf(data), Size: int64(len(data)), Name: what + ".png", Width: width, Height: height}
}

func put(t *testing.T, s store.Store, sessionID string, ms ...*llm.Media) {
	t.Helper()
	if err := s.PutAttachments(ctx, sessionID, ms); err != nil {
		t.Fatalf("PutAttachments(%q, %d media): %v", sessionID, len(ms), err)
	}
}

// wantAttachment fails unless session sessionID keeps want, bytes and
// description.
func wantAttachment(t *testing.T, s store.Store, what, sessionID string, want *llm.Media) {
	t.Helper()
	got, err := s.Attachment(ctx, sessionID, want.Digest)
	if err != nil {
		t.Errorf("%s: Attachment(%q, %s): %v", what, sessionID, want.Digest, err)
		return
	}
	if !got.Equal(want) {
		c := *got
		c.Data = nil
		t.Errorf("%s: Attachment(%q, %s) = %+v (%d bytes), want %v (%d bytes)", what, sessionID, want.Digest, c, len(got.Data), want, len(want.Data))
	}
}

// wantNoAttachment fails unless session sessionID keeps no attachment of
// digest (ErrNotFound, naming both).
func wantNoAttachment(t *testing.T, s store.Store, what, sessionID, digest string) {
	t.Helper()
	_, err := s.Attachment(ctx, sessionID, digest)
	wantErr(t, what, err, store.ErrNotFound, digest, sessionID)
}

// testAttachments: media put for a session — before it is provisioned,
// as a durable turn's client puts them — are read back by digest with
// their bytes and the session's description of them (its first: nothing
// is kept twice); a record may then show them by digest alone; media a
// record shows are the session's too; another session's are not.
func testAttachments(t *testing.T, s store.Store) {
	img := image("shot", 300, 200)
	pdf := &llm.Media{MediaType: llm.MediaPDF, Data: []byte("%PDF-1.4\n%%EOF\n"), Name: "spec.pdf"}
	wantPDF := *pdf
	wantPDF.Digest, wantPDF.Size = llm.DigestOf(pdf.Data), int64(len(pdf.Data))
	put(t, s, "s1", img, pdf)
	wantAttachment(t, s, "put before Provision", "s1", img)
	wantAttachment(t, s, "a PDF put with no digest or size", "s1", &wantPDF)
	got, err := s.Attachment(ctx, "s1", img.Digest)
	if err != nil {
		t.Fatal(err)
	}
	got.Name = "changed by the caller"
	wantAttachment(t, s, "after the caller changed what it read", "s1", img)

	again := *img
	again.Name, again.Width, again.Height = "again.png", 1, 1
	put(t, s, "s1", &again, &again)
	wantAttachment(t, s, "put again, described otherwise", "s1", img)
	provision(t, s, "s1", "r1")
	wantAttachment(t, s, "once provisioned", "s1", img)

	provision(t, s, "s2", "r1")
	wantNoAttachment(t, s, "another session's digest", "s2", img.Digest)
	wantNoAttachment(t, s, "an unknown digest", "s1", llm.DigestOf([]byte("unknown")))
	theirs := *img
	theirs.Name = "theirs.png"
	put(t, s, "s2", &theirs)
	wantAttachment(t, s, "the same bytes, put by another session", "s2", &theirs)
	wantAttachment(t, s, "the first session's, after the other put them", "s1", img)

	// A record shows the image by digest alone.
	ref := *img
	ref.Data = nil
	appendRecs(t, s, "s1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), llm.ImageBlock(&ref)}}})
	recs := records(t, s, "s1", store.RecordFilter{})
	if len(recs) != 1 || len(recs[0].Message.Content) != 2 || !recs[0].Message.Content[1].Media.Equal(img) {
		t.Errorf("a record showing an attachment by digest: %+v", recs)
	}
	// One that shows an image with its bytes keeps it for its session.
	shown := image("shown", 30, 20)
	appendRecs(t, s, "s2", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), llm.ImageBlock(shown)}}})
	wantAttachment(t, s, "shown in a record", "s2", shown)
	wantNoAttachment(t, s, "shown in another session's record", "s1", shown.Digest)
}

// testAttachmentsRefused: a medium whose digest is not its bytes', or
// that breaks the contract otherwise, is refused, named; nothing of its
// batch is kept.
func testAttachmentsRefused(t *testing.T, s store.Store) {
	provision(t, s, "s1", "r1")
	good := image("good", 3, 2)
	forged := image("forged", 3, 2)
	forged.Digest = llm.DigestOf([]byte("other bytes"))
	err := s.PutAttachments(ctx, "s1", []*llm.Media{good, forged})
	wantErr(t, "a digest that is not the bytes'", err, store.ErrInvalid, "media[1]", forged.Digest, "s1")
	wantNoAttachment(t, s, "the forged digest", "s1", forged.Digest)
	wantNoAttachment(t, s, "the good one of the refused batch", "s1", good.Digest)

	noBytes := *good
	noBytes.Data = nil
	noType := *good
	noType.MediaType = ""
	badSize := *good
	badSize.Size++
	for _, tc := range []struct {
		what, sessionID string
		m               *llm.Media
	}{
		{"no bytes", "s1", &noBytes},
		{"no media type", "s1", &noType},
		{"a size that is not the bytes'", "s1", &badSize},
		{"nil", "s1", nil},
		{"no session", "", good},
	} {
		err := s.PutAttachments(ctx, tc.sessionID, []*llm.Media{tc.m})
		wantErr(t, tc.what, err, store.ErrInvalid)
	}
	wantNoAttachment(t, s, "after the refusals", "s1", good.Digest)
	if err := s.PutAttachments(ctx, "s1", nil); err != nil {
		t.Errorf("putting no media: %v", err)
	}
}

// testAttachmentsDeleted: DeleteSession deletes the attachments the
// session keeps — put and never shown in a record too — but not another
// session's of the same bytes; those put for an id never provisioned go
// with DeleteSession of the id (ErrNotFound all the same); a session
// provisioned again under the id keeps none.
func testAttachmentsDeleted(t *testing.T, s store.Store) {
	shared, lone, shown := image("shared", 1, 1), image("lone", 1, 1), image("shown", 1, 1)
	provision(t, s, "a1", "r1")
	provision(t, s, "a2", "r1")
	put(t, s, "a1", shared, lone)
	put(t, s, "a2", shared)
	appendRecs(t, s, "a1", store.Record{Kind: store.KindMessage, Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), llm.ImageBlock(shown)}}})
	if err := s.DeleteSession(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*llm.Media{shared, lone, shown} {
		wantNoAttachment(t, s, "the deleted session's "+m.Name, "a1", m.Digest)
	}
	wantAttachment(t, s, "the other session's", "a2", shared)

	put(t, s, "never", lone)
	wantAttachment(t, s, "put for a session never provisioned", "never", lone)
	wantErr(t, "DeleteSession of a session never provisioned", s.DeleteSession(ctx, "never"), store.ErrNotFound, "never")
	wantNoAttachment(t, s, "put for it, after DeleteSession", "never", lone.Digest)

	provision(t, s, "a1", "r1")
	wantNoAttachment(t, s, "a session provisioned again under the id", "a1", shared.Digest)
}
