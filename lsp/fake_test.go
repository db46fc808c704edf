package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orca-agent/orca/workspace"
)

// fake is a language server in the test's process, over a net.Pipe, so
// that time can be the bubble's (testing/synctest): it publishes, after
// delay, a diagnostic for every line of a document that says "bad"; it
// may crash when it is given a document, or stop answering requests.
type fake struct {
	mu       sync.Mutex
	launches int
	delay    time.Duration // before diagnostics are published; < 0: never
	crash    bool          // exit when given a document
	hang     bool          // answer no request but initialize and shutdown
	noVer    bool          // publish without the document's version
	parts    time.Duration // > 0: publish none first, the diagnostics this later
	procs    []*fakeProc
}

type fakeProc struct {
	conn *jsonrpc2.Conn
	dead chan struct{}
	end  func(error)
}

func (f *fake) set(mu func(*fake)) {
	f.mu.Lock()
	mu(f)
	f.mu.Unlock()
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.launches
}

func (f *fake) launch(root string) func(ctx context.Context, srv *Server) (*client, error) {
	return func(ctx context.Context, srv *Server) (*client, error) {
		a, b := net.Pipe()
		c := newClient(srv, root)
		p := &fakeProc{dead: make(chan struct{})}
		var once sync.Once
		p.end = func(err error) {
			once.Do(func() {
				close(p.dead)
				a.Close()
				b.Close()
				c.ended(err)
			})
		}
		c.stop = func() { p.end(errors.New("signal: killed")) }
		p.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(b, jsonrpc2.VSCodeObjectCodec{}),
			jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(func(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
				return f.handle(p, req)
			})), jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
		f.mu.Lock()
		f.launches++
		f.procs = append(f.procs, p)
		f.mu.Unlock()
		if err := c.connect(ctx, a, srv.StartupTimeout); err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (f *fake) handle(p *fakeProc, req *jsonrpc2.Request) (any, error) {
	f.mu.Lock()
	delay, crash, hang, noVer, parts := f.delay, f.crash, f.hang, f.noVer, f.parts
	f.mu.Unlock()
	switch req.Method {
	case "initialize":
		return map[string]any{"capabilities": map[string]any{"hoverProvider": true, "definitionProvider": true, "textDocumentSync": 1}}, nil
	case "shutdown":
		return nil, nil
	case "exit":
		p.end(nil)
		return nil, nil
	case "textDocument/didOpen", "textDocument/didChange":
		if crash {
			p.end(errors.New("exit status 2"))
			return nil, nil
		}
		var doc struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int    `json:"version"`
				Text    string `json:"text"`
			} `json:"textDocument"`
			ContentChanges []struct {
				Text string `json:"text"`
			} `json:"contentChanges"`
		}
		_ = json.Unmarshal(*req.Params, &doc)
		text := doc.TextDocument.Text
		if len(doc.ContentChanges) > 0 {
			text = doc.ContentChanges[0].Text
		}
		var ds []diagnostic
		for i, line := range strings.Split(text, "\n") {
			if j := strings.Index(line, "bad"); j >= 0 {
				ds = append(ds, diagnostic{Range: rng{Start: position{Line: i, Character: len(utf16.Encode([]rune(line[:j])))}}, Severity: 1, Source: "fake", Message: "bad here"})
			}
		}
		pub := publishDiagnosticsParams{URI: doc.TextDocument.URI, Diagnostics: ds}
		if !noVer {
			v := doc.TextDocument.Version
			pub.Version = &v
		}
		switch {
		case delay < 0:
		case parts > 0:
			first := pub
			first.Diagnostics = []diagnostic{}
			time.AfterFunc(delay, func() { _ = p.conn.Notify(context.Background(), "textDocument/publishDiagnostics", first) })
			time.AfterFunc(delay+parts, func() { _ = p.conn.Notify(context.Background(), "textDocument/publishDiagnostics", pub) })
		default:
			time.AfterFunc(delay, func() { _ = p.conn.Notify(context.Background(), "textDocument/publishDiagnostics", pub) })
		}
		return nil, nil
	}
	if req.Notif {
		return nil, nil
	}
	if hang {
		<-p.dead
		return nil, errors.New("dead")
	}
	switch req.Method {
	case "textDocument/hover":
		return map[string]any{"contents": map[string]string{"kind": "markdown", "value": "a fake hover"}}, nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: req.Method}
}

// fakeSet returns a Set of one server, "fake", for .txt files in a new
// workspace, launched by f.
func fakeSet(t *testing.T, f *fake, maxRestarts int) (*Set, *workspace.Local) {
	t.Helper()
	fsys, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	s, err := New([]Server{{Name: "fake", Command: "fake", Languages: map[string]string{".txt": "plaintext"}, MaxRestarts: maxRestarts}}, Options{FS: fsys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.launch = f.launch(fsys.Root())
	return s, fsys
}
