package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/orca-agent/orca/internal/tailbuf"
	"github.com/orca-agent/orca/sandbox"
)

// client is one running language server: its process, the connection to
// it, the documents opened in it and what it published of them.
type client struct {
	srv    *Server
	root   string
	stop   func() // kills the process
	conn   *jsonrpc2.Conn
	stderr *tailbuf.Buffer
	exited chan struct{} // closed when the process ended
	caps   map[string]json.RawMessage
	ids    atomic.Uint64 // the requests' ids

	mu        sync.Mutex
	docs      map[string]*document  // opened, by URI
	published map[string]*published // the last diagnostics of each URI
	changed   chan struct{}         // closed (and replaced) at each publish
	exitErr   error                 // how the process ended, once it did
}

// document is a file opened in the server: the text it was last given.
type document struct {
	version int
	text    string
}

// published is what the server last said of a document's diagnostics.
type published struct {
	version *int // the document's version they are of, if the server says
	seq     int  // how many times the server published them
	at      time.Time
	diags   []diagnostic
}

// start starts the server's process through runner in root, and
// initializes it within timeout.
func start(ctx context.Context, srv *Server, runner *sandbox.Runner, root string, timeout time.Duration) (*client, error) {
	c := newClient(srv, root)
	p, err := runner.StartPiped(root, srv.Env, c.stderr, append([]string{srv.Command}, srv.Args...)...)
	if err != nil {
		return nil, err
	}
	c.stop = p.Kill
	go func() {
		<-p.Done
		p.Stdout.Close()
		c.ended(p.Err())
	}()
	if err := c.connect(ctx, pipes{p.Stdout, p.Stdin}, timeout); err != nil {
		return nil, err
	}
	return c, nil
}

// newClient returns the client of a server yet to connect: its launcher
// sets stop, and calls ended when the process ends.
func newClient(srv *Server, root string) *client {
	return &client{srv: srv, root: root, stderr: &tailbuf.Buffer{Max: 2 << 10}, exited: make(chan struct{}),
		docs: map[string]*document{}, published: map[string]*published{}, changed: make(chan struct{})}
}

// ended records that the process ended, and how.
func (c *client) ended(err error) {
	c.mu.Lock()
	c.exitErr = err
	c.mu.Unlock()
	close(c.exited)
}

// connect speaks LSP over rwc (the server's stdout and stdin) and
// initializes the server within timeout; the process is killed if that
// fails.
func (c *client) connect(ctx context.Context, rwc io.ReadWriteCloser, timeout time.Duration) error {
	stream := jsonrpc2.NewBufferedStream(rwc, jsonrpc2.VSCodeObjectCodec{})
	c.conn = jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.HandlerWithError(c.handle), jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	if err := c.initialize(ctx, timeout); err != nil {
		c.kill()
		return err
	}
	return nil
}

// pipes is the server's stdout and stdin as one stream.
type pipes struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p pipes) Close() error {
	return errors.Join(p.w.Close(), p.ReadCloser.Close())
}

func (c *client) initialize(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := initializeParams{
		// No process id: orca's means nothing in the sandbox's PID
		// namespace, and servers that watch their parent's (the
		// vscode-languageserver library's: typescript-language-server,
		// pyright) would take it for gone and exit.
		ProcessID:             nil,
		ClientInfo:            clientInfo{Name: "orca"},
		RootURI:               fileURI(c.root),
		RootPath:              c.root,
		WorkspaceFolders:      []workspaceFolder{{URI: fileURI(c.root), Name: filepath.Base(c.root)}},
		Capabilities:          json.RawMessage(capabilities),
		InitializationOptions: c.srv.InitializationOptions,
	}
	var res initializeResult
	if err := c.call(ctx, "initialize", params, &res); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	c.caps = res.Capabilities
	if err := c.conn.Notify(ctx, "initialized", struct{}{}); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	if len(c.srv.Settings) > 0 {
		// Servers that pull their settings ask (workspace/configuration);
		// the others take them pushed.
		_ = c.conn.Notify(ctx, "workspace/didChangeConfiguration", map[string]json.RawMessage{"settings": c.srv.Settings})
	}
	return nil
}

// call sends a request and waits for its answer, the process's end or
// ctx; a request ctx ends is cancelled at the server too.
func (c *client) call(ctx context.Context, method string, params, result any) error {
	id := jsonrpc2.ID{Num: c.ids.Add(1)}
	w, err := c.conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		return c.gone(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait(ctx, result) }()
	select {
	case err := <-done:
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			_ = c.conn.Notify(context.Background(), "$/cancelRequest", map[string]any{"id": id.Num})
			return err
		}
		if err != nil {
			return c.gone(err)
		}
		return nil
	case <-c.exited:
		return c.gone(jsonrpc2.ErrClosed)
	}
}

// gone is err, or how the process ended once it did.
func (c *client) gone(err error) error {
	select {
	case <-c.exited:
		return c.exitError()
	default:
	}
	if errors.Is(err, jsonrpc2.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		select {
		case <-c.exited:
			return c.exitError()
		case <-time.After(time.Second):
		}
	}
	return err
}

// exitError says how the process ended (it has).
func (c *client) exitError() error {
	c.mu.Lock()
	err := c.exitErr
	c.mu.Unlock()
	if err == nil {
		err = errors.New("exited")
	} else {
		err = fmt.Errorf("exited: %w", err)
	}
	if tail, _ := c.stderr.Tail(); strings.TrimSpace(tail) != "" {
		err = fmt.Errorf("%w (stderr: %s)", err, lastLine(tail))
	}
	return &ExitError{Server: c.srv.Name, Err: err}
}

// lastLine is the last non-empty line of s, clipped.
func lastLine(s string) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, ""))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// alive reports whether the process still runs.
func (c *client) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// handle answers what the server asks and keeps what it publishes.
func (c *client) handle(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case "textDocument/publishDiagnostics":
		var p publishDiagnosticsParams
		if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil {
			return nil, nil
		}
		// Servers write a path's URI their own way (its escapes, a
		// drive's case): it is known by its path.
		if path := uriPath(p.URI); path != "" {
			p.URI = fileURI(path)
		}
		c.mu.Lock()
		prev := c.published[p.URI]
		seq := 1
		if prev != nil {
			seq = prev.seq + 1
		}
		c.published[p.URI] = &published{version: p.Version, seq: seq, at: time.Now(), diags: p.Diagnostics}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		return nil, nil
	case "workspace/configuration":
		var p configurationParams
		if req.Params != nil {
			_ = json.Unmarshal(*req.Params, &p)
		}
		out := make([]json.RawMessage, len(p.Items))
		for i, it := range p.Items {
			out[i] = c.srv.setting(it.Section)
		}
		return out, nil
	case "workspace/workspaceFolders":
		return []workspaceFolder{{URI: fileURI(c.root), Name: filepath.Base(c.root)}}, nil
	case "client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create", "window/showMessageRequest",
		"workspace/diagnostic/refresh", "workspace/semanticTokens/refresh", "workspace/inlayHint/refresh", "workspace/codeLens/refresh":
		return nil, nil
	case "workspace/applyEdit":
		// orca changes files through its tools only.
		return map[string]any{"applied": false, "failureReason": "orca applies no edits from a language server"}, nil
	}
	if req.Notif {
		return nil, nil // $/progress, window/logMessage, telemetry/event …
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "orca does not handle " + req.Method}
}

// sync gives the server the text of the file at path (absolute) as it is
// on disk, opening it if it is not open yet; languageID names its
// language. It returns the document's mark — its version, and where its
// diagnostics stood before the server was told — and whether the server
// was told anything (false: it already had that text). A file that is
// gone is closed.
func (c *client) sync(ctx context.Context, path, languageID string, text []byte, gone bool) (mark, bool, error) {
	uri := fileURI(path)
	c.mu.Lock()
	m := mark{uri: uri}
	if p := c.published[uri]; p != nil {
		m.seq = p.seq
	}
	doc := c.docs[uri]
	switch {
	case gone && doc == nil:
		c.mu.Unlock()
		return m, false, nil
	case gone:
		delete(c.docs, uri)
		delete(c.published, uri)
		c.mu.Unlock()
		return m, true, c.conn.Notify(ctx, "textDocument/didClose", didCloseParams{TextDocument: docID{URI: uri}})
	case doc != nil && doc.text == string(text):
		m.version = doc.version
		c.mu.Unlock()
		return m, false, nil
	case doc != nil:
		doc.version++
		doc.text = string(text)
		m.version = doc.version
		c.mu.Unlock()
		err := c.conn.Notify(ctx, "textDocument/didChange", didChangeParams{TextDocument: versionedDocID{URI: uri, Version: m.version}, ContentChanges: []wholeText{{Text: string(text)}}})
		if err == nil {
			err = c.conn.Notify(ctx, "textDocument/didSave", didSaveParams{TextDocument: docID{URI: uri}})
		}
		return m, true, err
	}
	c.docs[uri] = &document{version: 1, text: string(text)}
	m.version = 1
	c.mu.Unlock()
	return m, true, c.conn.Notify(ctx, "textDocument/didOpen", didOpenParams{TextDocument: textDocumentItem{URI: uri, LanguageID: languageID, Version: 1, Text: string(text)}})
}

// mark is where a document's diagnostics stood when it was changed: a
// publish after it is of the change.
type mark struct {
	uri     string
	version int
	seq     int
}

// diagnosticsOf returns what the server last published of m's document
// if it published it since m — of m's version, when it names versions.
func (c *client) diagnosticsOf(m mark) (published, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.published[m.uri]
	if p == nil || p.seq <= m.seq {
		return published{}, false
	}
	if p.version != nil && *p.version < m.version {
		return published{}, false
	}
	return *p, true
}

// unversionedQuiet is how long a server that does not say which version
// its diagnostics are of must publish nothing more of a document before
// its last publish is taken as complete: such servers (typescript-
// language-server) publish a document's diagnostics in parts, the
// syntax's first, the types' later.
const unversionedQuiet = time.Second

// wait waits until every mark's diagnostics were published — and, of a
// server that names no versions, until it published nothing more of them
// for unversionedQuiet — the deadline passes, ctx ends or the process
// does; it returns what was published of the marks that came.
func (c *client) wait(ctx context.Context, marks []mark, deadline time.Time) map[mark]published {
	got := make(map[mark]published, len(marks))
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		quietUntil := time.Time{}
		for _, m := range marks {
			if p, ok := c.diagnosticsOf(m); ok {
				got[m] = p
				if p.version == nil && p.at.Add(unversionedQuiet).After(quietUntil) {
					quietUntil = p.at.Add(unversionedQuiet)
				}
			}
		}
		var quiet <-chan time.Time
		stop := func() bool { return true }
		if len(got) == len(marks) {
			if !time.Now().Before(quietUntil) {
				return got
			}
			t := time.NewTimer(time.Until(quietUntil))
			quiet, stop = t.C, t.Stop
		}
		select {
		case <-ch:
			stop()
		case <-quiet:
		case <-timer.C:
			stop()
			return got
		case <-ctx.Done():
			stop()
			return got
		case <-c.exited:
			stop()
			return got
		}
	}
}

// latest returns what the server last published of uri.
func (c *client) latest(uri string) (published, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.published[uri]; p != nil {
		return *p, true
	}
	return published{}, false
}

// text returns the text the server has of uri, if it is open.
func (c *client) text(uri string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.docs[uri]; d != nil {
		return d.text, true
	}
	return "", false
}

// supports reports whether the server offers a capability (a
// "…Provider" of its initialize result that is present and not false).
func (c *client) supports(name string) bool {
	v, ok := c.caps[name]
	return ok && string(v) != "false" && string(v) != "null"
}

// kill ends the process now, and what it started.
func (c *client) kill() {
	c.conn.Close()
	c.stop()
	<-c.exited
}

// shutdown asks the server to shut down and exit, within timeout, and
// kills it if it does not.
func (c *client) shutdown(timeout time.Duration) {
	if c.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		if c.call(ctx, "shutdown", nil, nil) == nil {
			_ = c.conn.Notify(ctx, "exit", nil)
			select {
			case <-c.exited:
			case <-ctx.Done():
			}
		}
		cancel()
	}
	c.kill()
}
