package serve

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// attachment answers an image or a document the session showed the model
// (its events' attachments name them by digest): its bytes, as the store
// keeps them, under its own type — one of the media types a model takes,
// never a page — and a policy that lets it run nothing.
func (s *Server) attachment(w http.ResponseWriter, r *http.Request) error {
	id, digest := r.PathValue("id"), r.PathValue("digest")
	recs, err := s.app.Store().Records(r.Context(), id, store.RecordFilter{IncludeCompacted: true})
	if errors.Is(err, store.ErrNotFound) {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("no session %s", id)}
	}
	if err != nil {
		return err
	}
	m := find(recs, digest)
	if m == nil {
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("session %s shows no attachment %s", id, digest)}
	}
	switch m.MediaType {
	case llm.MediaPNG, llm.MediaJPEG, llm.MediaGIF, llm.MediaWebP, llm.MediaPDF:
	default:
		return &apiError{status: http.StatusNotFound, code: "not_found", msg: fmt.Sprintf("attachment %s is of type %q, which is not served", digest, m.MediaType)}
	}
	h := w.Header()
	h.Set("Content-Type", m.MediaType)
	h.Set("Content-Length", strconv.Itoa(len(m.Data)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	// Named by its digest: the bytes under this name never change.
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	if m.Name != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": filepath.Base(m.Name)}))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(m.Data)
	}
	return nil
}

// find returns the media of recs named digest that has its bytes.
func find(recs []store.Record, digest string) *llm.Media {
	for i := range recs {
		for _, m := range recs[i].Message.Media() {
			if m.Digest == digest && m.Data != nil {
				return m
			}
		}
	}
	return nil
}

// withoutBytes returns msgs with their media's bytes left out (copies of
// the messages that have media; the others as they are).
func withoutBytes(msgs []llm.Message) []llm.Message {
	out := msgs
	for i, m := range msgs {
		if !m.HasMedia() {
			continue
		}
		if &out[0] == &msgs[0] {
			out = slices.Clone(msgs)
		}
		content := slices.Clone(m.Content)
		for j := range content {
			content[j].Media = described(content[j].Media)
		}
		out[i].Content = content
	}
	return out
}

func described(m *llm.Media) *llm.Media {
	if m == nil {
		return nil
	}
	c := *m
	c.Size = m.Len()
	c.Data = nil
	return &c
}
