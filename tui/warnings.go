package tui

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
)

// Warnings returns a logger of what orca's packages warn about
// (app.Config.Logger), for people, on w (stderr): each record a line that
// begins with prefix, without slog's time and level, its attributes after
// the message in slog's text form — with prefix "orca: warning: ",
//
//	orca: warning: MCP server not started: server=web err="connecting to …"
//
// Records below slog.LevelWarn are dropped, and so are those whose
// message is one of skip (what the program reports otherwise).
func Warnings(w io.Writer, prefix string, skip ...string) *slog.Logger {
	h := &warnHandler{out: w, prefix: prefix, mu: new(sync.Mutex), buf: new(bytes.Buffer), skip: skip}
	h.attrs = slog.NewTextHandler(h.buf, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return a
		}})
	return slog.New(h)
}

// warnHandler writes the message itself and has attrs, a text handler
// writing into buf, write the attributes. Handlers made by WithAttrs and
// WithGroup share out, mu and buf.
type warnHandler struct {
	out    io.Writer
	prefix string
	mu     *sync.Mutex
	buf    *bytes.Buffer
	attrs  slog.Handler
	skip   []string
}

func (h *warnHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.attrs.Enabled(ctx, l)
}

func (h *warnHandler) Handle(ctx context.Context, r slog.Record) error {
	if slices.Contains(h.skip, r.Message) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Reset()
	if err := h.attrs.Handle(ctx, r); err != nil {
		return err
	}
	attrs := bytes.TrimSpace(h.buf.Bytes())
	line := append([]byte(h.prefix), r.Message...)
	if len(attrs) > 0 {
		line = append(append(line, ": "...), attrs...)
	}
	_, err := h.out.Write(append(line, '\n'))
	return err
}

func (h *warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithAttrs(as)
	return &c
}

func (h *warnHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithGroup(name)
	return &c
}
