package lsp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/workspace"
)

// Options configure a Set.
type Options struct {
	// FS is the workspace: the servers' root is its Root, and the files
	// they are given are read through it.
	FS workspace.FileSystem
	// Runner starts the servers: the runner of the workspace's commands,
	// with its OS sandbox (nil: the sandbox of an empty policy).
	Runner *sandbox.Runner
	// Hidden reports whether a workspace path (slash-separated) is one
	// the agent may not read: no line of it is shown. Nil: none is.
	Hidden func(rel string) bool
	// Wait is how long a change's diagnostics are waited for once a
	// server has checked a first file (DefaultWait if zero); those that
	// come later join the next change's report.
	Wait time.Duration
	// Timeout bounds a request (DefaultTimeout if zero). A server that
	// lets two in a row time out is killed, and restarted.
	Timeout time.Duration
	// Logger gets the servers' starts and failures (slog.Default() if nil).
	Logger *slog.Logger
}

// DefaultWait is how long a change's diagnostics are waited for.
const DefaultWait = 3 * time.Second

// DefaultTimeout bounds a request to a server.
const DefaultTimeout = 15 * time.Second

// MaxShown is how many diagnostics a Report shows; the rest are counted.
const MaxShown = 20

// Set is a workspace's language servers. Its methods may be called at
// once; Close stops the servers.
type Set struct {
	o       Options
	root    string
	servers []*server
	byExt   map[string]*server

	mu     sync.Mutex
	closed bool
	shown  map[string]*shown // the diagnostics reported, by file

	// launch starts a server and connects to it (start; a test's fake).
	launch func(ctx context.Context, srv *Server) (*client, error)
}

// server is one configured server and its process, if it runs.
type server struct {
	cfg Server
	set *Set

	mu       sync.Mutex
	c        *client
	starting chan struct{} // while a start is under way
	failures int           // in a row
	retryAt  time.Time
	lastErr  error
	timeouts int // requests timed out in a row
	checked  bool
	// watch are the files changed, and the last of their diagnostics
	// reported: what the server publishes of them later is reported with
	// the next change.
	watch map[string]watch
}

// watch is a file changed, and the last publish of its diagnostics that
// was reported (seq).
type watch struct {
	rel string
	seq int
}

// New returns the Set of servers; none starts before it is needed. A
// server that Check refuses, or an extension two servers claim, is an
// error naming them.
func New(servers []Server, o Options) (*Set, error) {
	if o.FS == nil || o.FS.Root() == "" {
		return nil, errors.New("lsp: the workspace is not a local folder")
	}
	if o.Runner == nil {
		o.Runner = &sandbox.Runner{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Wait = cmp.Or(o.Wait, DefaultWait)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	s := &Set{o: o, root: o.FS.Root(), byExt: map[string]*server{}, shown: map[string]*shown{}}
	s.launch = func(ctx context.Context, srv *Server) (*client, error) {
		return start(ctx, srv, s.o.Runner, s.root, srv.StartupTimeout)
	}
	for _, cfg := range servers {
		if err := cfg.Check(); err != nil {
			return nil, err
		}
		cfg.StartupTimeout = cmp.Or(cfg.StartupTimeout, DefaultStartupTimeout)
		cfg.MaxRestarts = cmp.Or(cfg.MaxRestarts, DefaultMaxRestarts)
		srv := &server{cfg: cfg, set: s, watch: map[string]watch{}}
		for ext := range cfg.Languages {
			if other, ok := s.byExt[ext]; ok {
				return nil, fmt.Errorf("language servers %s and %s both serve %s files", other.cfg.Name, cfg.Name, ext)
			}
			s.byExt[ext] = srv
		}
		s.servers = append(s.servers, srv)
	}
	return s, nil
}

// Servers returns the names of the Set's servers.
func (s *Set) Servers() []string {
	out := make([]string, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.cfg.Name
	}
	return out
}

// Handles reports whether a server serves the file at path (its
// extension).
func (s *Set) Handles(path string) bool {
	return s.serverOf(path) != nil
}

func (s *Set) serverOf(p string) *server {
	return s.byExt[strings.ToLower(filepath.Ext(p))]
}

// Running reports whether a server of the Set runs.
func (s *Set) Running() bool {
	for _, srv := range s.servers {
		srv.mu.Lock()
		up := srv.c != nil && srv.c.alive()
		srv.mu.Unlock()
		if up {
			return true
		}
	}
	return false
}

// Close stops the servers (a shutdown request, then a kill).
func (s *Set) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, srv := range s.servers {
		srv.mu.Lock()
		c := srv.c
		srv.c = nil
		starting := srv.starting
		srv.mu.Unlock()
		if starting != nil {
			<-starting
			srv.mu.Lock()
			c, srv.c = srv.c, nil
			srv.mu.Unlock()
		}
		if c != nil {
			wg.Go(func() { c.shutdown(2 * time.Second) })
		}
	}
	wg.Wait()
	return nil
}

// errClosed: the Set was closed.
var errClosed = errors.New("lsp: the language servers were stopped")

// backoff is how long a server that failed n times in a row waits before
// its next start: 1 s, 2 s, 4 s … 30 s.
func backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}

// get returns the server's running client, starting it if it does not
// run. A server that failed is started again only after its backoff, and
// not after MaxRestarts failures in a row: the error says when, or that
// it will not be.
func (srv *server) get(ctx context.Context) (*client, error) {
	for {
		srv.mu.Lock()
		if c := srv.c; c != nil {
			if c.alive() {
				srv.mu.Unlock()
				return c, nil
			}
			srv.failedLocked(c.exitError())
			srv.c = nil
		}
		if ch := srv.starting; ch != nil {
			srv.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		srv.set.mu.Lock()
		closed := srv.set.closed
		srv.set.mu.Unlock()
		if closed {
			srv.mu.Unlock()
			return nil, errClosed
		}
		if srv.failures > 0 {
			if srv.cfg.MaxRestarts < 0 || srv.failures > srv.cfg.MaxRestarts {
				err := fmt.Errorf("language server %s failed %d times in a row and is not restarted: %v", srv.cfg.Name, srv.failures, srv.lastErr)
				srv.mu.Unlock()
				return nil, err
			}
			if wait := time.Until(srv.retryAt); wait > 0 {
				err := fmt.Errorf("%v; it is restarted in %s", srv.lastErr, wait.Round(100*time.Millisecond))
				srv.mu.Unlock()
				return nil, err
			}
		}
		ch := make(chan struct{})
		srv.starting = ch
		srv.mu.Unlock()

		c, err := srv.set.launch(ctx, &srv.cfg)
		srv.mu.Lock()
		srv.starting = nil
		close(ch)
		if err != nil {
			err = fmt.Errorf("language server %s did not start: %w", srv.cfg.Name, err)
			srv.failedLocked(err)
			srv.mu.Unlock()
			srv.set.o.Logger.Warn("language server not started", "server", srv.cfg.Name, "err", err)
			return nil, err
		}
		srv.c, srv.checked, srv.timeouts = c, false, 0
		srv.watch = map[string]watch{}
		srv.mu.Unlock()
		srv.set.o.Logger.Debug("language server started", "server", srv.cfg.Name)
		return c, nil
	}
}

// failedLocked counts a failure (srv.mu held) and schedules the restart.
func (srv *server) failedLocked(err error) {
	srv.failures++
	srv.lastErr = err
	srv.retryAt = time.Now().Add(backoff(srv.failures))
	srv.set.o.Logger.Warn("language server failed", "server", srv.cfg.Name, "failures", srv.failures, "err", err)
}

// lost records that c, the server's client, is gone (its process ended)
// the moment that is seen: the restart's backoff counts from then.
func (srv *server) lost(c *client) {
	if c.alive() {
		return
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.c == c {
		srv.failedLocked(c.exitError())
		srv.c = nil
	}
}

// worked records that the server answered: its failures are behind it.
func (srv *server) worked() {
	srv.mu.Lock()
	srv.failures, srv.timeouts = 0, 0
	srv.mu.Unlock()
}

// timedOut records a request that timed out; a second in a row kills the
// server as hung (it is restarted on next use, after its backoff).
func (srv *server) timedOut(c *client) {
	srv.mu.Lock()
	srv.timeouts++
	hung := srv.timeouts >= 2 && srv.c == c
	if hung {
		srv.c = nil
		srv.failedLocked(&ExitError{Server: srv.cfg.Name, Err: errors.New("stopped answering and was killed")})
	}
	srv.mu.Unlock()
	if hung {
		go c.kill()
	}
}

// Diagnostic is one problem a server found in a file.
type Diagnostic struct {
	// Path is the file's, relative to the workspace (slash-separated).
	Path string
	// Line and Column are where it starts, from 1; Column counts
	// characters.
	Line, Column int
	// Severity is "error", "warning", "info" or "hint".
	Severity string
	// Source is what found it ("compiler", "Pyright", "ts"), Code its
	// code, if the server says.
	Source, Code string
	Message      string
}

func (d Diagnostic) String() string {
	s := fmt.Sprintf("%s:%d:%d: %s: %s", d.Path, d.Line, d.Column, d.Severity, d.Message)
	if tag := strings.TrimSpace(d.Source + " " + d.Code); tag != "" {
		s += " [" + tag + "]"
	}
	return s
}

// Report is what a change taught the servers: the new diagnostics of the
// files changed, and why some were not checked.
type Report struct {
	// Diagnostics are the errors and warnings not reported before, errors
	// first.
	Diagnostics []Diagnostic
	// Notes say what was not checked and why (a server that is not
	// running, a file not checked yet).
	Notes []string
}

// Empty reports whether the report has nothing to say.
func (r Report) Empty() bool { return len(r.Diagnostics) == 0 && len(r.Notes) == 0 }

// String is the report as the model reads it after a call's output: a
// <diagnostics> block, at most MaxShown diagnostics, or "" if empty.
func (r Report) String() string {
	if r.Empty() {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n<diagnostics>\n")
	if len(r.Diagnostics) > 0 {
		b.WriteString("The language servers found new problems in the files changed:\n")
	}
	for i, d := range r.Diagnostics {
		if i == MaxShown {
			fmt.Fprintf(&b, "… and %d more\n", len(r.Diagnostics)-MaxShown)
			break
		}
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	for _, n := range r.Notes {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	b.WriteString("</diagnostics>")
	return b.String()
}

// Changed tells the servers that the files at paths (relative to the
// workspace, or absolute within it) changed — written, created or
// deleted — and returns their new diagnostics: those the servers
// published within Wait (a server's first file: its StartupTimeout), and
// those of earlier changes that came since. A server that does not run
// is started; one that cannot be is a note, never an error: the call
// that changed the files stands.
func (s *Set) Changed(ctx context.Context, paths []string) Report {
	var rep Report
	groups := map[*server][]string{}
	var order []*server
	for _, p := range paths {
		rel, err := s.o.FS.Resolve(p)
		if err != nil || rel == "." {
			continue
		}
		srv := s.serverOf(rel)
		if srv == nil {
			continue
		}
		if _, ok := groups[srv]; !ok {
			order = append(order, srv)
		}
		if !slices.Contains(groups[srv], rel) {
			groups[srv] = append(groups[srv], rel)
		}
	}
	// Servers watching files changed before report what came since.
	for _, srv := range s.servers {
		srv.mu.Lock()
		n := len(srv.watch)
		srv.mu.Unlock()
		if _, ok := groups[srv]; !ok && n > 0 {
			order = append(order, srv)
			groups[srv] = nil
		}
	}
	if len(order) == 0 {
		return rep
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, srv := range order {
		wg.Go(func() {
			r := srv.changed(ctx, groups[srv])
			mu.Lock()
			rep.Diagnostics = append(rep.Diagnostics, r.Diagnostics...)
			rep.Notes = append(rep.Notes, r.Notes...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.SortStableFunc(rep.Diagnostics, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	slices.Sort(rep.Notes)
	return rep
}

func severityRank(s string) int { return slices.Index(severities[:], s) }

// changed is Changed for one server's files.
func (srv *server) changed(ctx context.Context, rels []string) Report {
	var rep Report
	s := srv.set
	// A server that does not run says nothing of earlier changes; it is
	// started for files that exist.
	srv.mu.Lock()
	running := srv.c != nil && srv.c.alive()
	srv.mu.Unlock()
	if !running && (len(rels) == 0 || !s.anyExists(rels)) {
		return rep
	}
	c, err := srv.get(ctx)
	if err != nil {
		if len(rels) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Not checked (%s): %v", strings.Join(rels, ", "), err))
		}
		return rep
	}
	type change struct {
		rel string
		m   mark
	}
	var changes []change
	var gone []fileEvent
	for _, rel := range rels {
		data, err := s.o.FS.ReadFile(rel)
		isGone := errors.Is(err, fs.ErrNotExist)
		if err != nil && !isGone {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Not checked: %s: %v", rel, err))
			continue
		}
		abs := filepath.Join(s.root, filepath.FromSlash(rel))
		m, told, err := c.sync(ctx, abs, srv.cfg.Languages[strings.ToLower(path.Ext(rel))], data, isGone)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Not checked (%s): %v", rel, c.gone(err)))
			continue
		}
		if isGone {
			s.forget(m.uri)
			srv.mu.Lock()
			delete(srv.watch, m.uri)
			srv.mu.Unlock()
			gone = append(gone, fileEvent{URI: m.uri, Type: 3})
			continue
		}
		if told {
			changes = append(changes, change{rel, m})
		}
	}
	if len(gone) > 0 {
		_ = c.conn.Notify(ctx, "workspace/didChangeWatchedFiles", didChangeWatchedFilesParams{Changes: gone})
	}
	srv.mu.Lock()
	wait := s.o.Wait
	if !srv.checked {
		wait = srv.cfg.StartupTimeout
	}
	srv.mu.Unlock()
	marks := make([]mark, len(changes))
	for i, ch := range changes {
		marks[i] = ch.m
	}
	var got map[mark]published
	if len(marks) > 0 {
		got = c.wait(ctx, marks, time.Now().Add(wait))
	}
	report := func(rel, uri string, p published) {
		text, _ := c.text(uri)
		rep.Diagnostics = append(rep.Diagnostics, s.fresh(rel, uri, text, p.diags)...)
	}
	srv.lost(c)
	srv.mu.Lock()
	watched := maps.Clone(srv.watch)
	if len(got) > 0 {
		srv.checked = true
	}
	for _, ch := range changes {
		p, ok := got[ch.m]
		if ok {
			srv.watch[ch.m.uri] = watch{rel: ch.rel, seq: p.seq}
		} else {
			srv.watch[ch.m.uri] = watch{rel: ch.rel, seq: ch.m.seq}
		}
	}
	srv.mu.Unlock()
	if len(got) > 0 {
		srv.worked()
	}
	for _, ch := range changes {
		if p, ok := got[ch.m]; ok {
			report(ch.rel, ch.m.uri, p)
		} else if !c.alive() {
			rep.Notes = append(rep.Notes, fmt.Sprintf("Not checked (%s): %v", ch.rel, c.exitError()))
		} else {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s has not finished checking it; what it finds comes with a later change", ch.rel, srv.cfg.Name))
		}
		delete(watched, ch.m.uri)
	}
	// What the server published since of the files changed before: late
	// diagnostics, and the rest of those published in parts.
	for uri, w := range watched {
		p, ok := c.latest(uri)
		if !ok || p.seq <= w.seq {
			continue
		}
		srv.mu.Lock()
		if cur, ok := srv.watch[uri]; ok && cur.seq < p.seq {
			srv.watch[uri] = watch{rel: w.rel, seq: p.seq}
		}
		srv.mu.Unlock()
		report(w.rel, uri, p)
	}
	return rep
}

// anyExists reports whether one of the files exists (a deleted file of a
// server that never ran needs no server).
func (s *Set) anyExists(rels []string) bool {
	for _, rel := range rels {
		if _, err := s.o.FS.Stat(rel); err == nil {
			return true
		}
	}
	return false
}

// forget drops what was reported of uri (its file is gone).
func (s *Set) forget(uri string) {
	s.mu.Lock()
	delete(s.shown, uri)
	s.mu.Unlock()
}

// shown is what was reported of a file's problems: those of its text
// now (cur: every publish of it, which a server may make in parts) and
// of the text before (base).
type shown struct {
	text      uint64 // the text's hash
	base, cur map[string]bool
}

var textSeed = maphash.MakeSeed()

// fresh returns the errors and warnings of ds, published of uri's text,
// not reported before: neither of the text before nor of this one. A
// problem fixed and made again is reported again. A problem is known by
// its severity, source, code, message and the text of its line, so that
// lines moving above it do not make it new.
func (s *Set) fresh(rel, uri, text string, ds []diagnostic) []Diagnostic {
	lines := strings.Split(text, "\n")
	keys := make(map[string]bool, len(ds))
	var out []Diagnostic
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shown[uri]
	if h := maphash.String(textSeed, text); sh == nil || sh.text != h {
		sh = &shown{text: h, base: sh.curOrNil(), cur: map[string]bool{}}
		s.shown[uri] = sh
	}
	for _, d := range ds {
		if d.Severity > 2 {
			continue // info and hints
		}
		sev := max(d.Severity, 1) // none said: an error
		var lineText string
		if d.Range.Start.Line >= 0 && d.Range.Start.Line < len(lines) {
			lineText = strings.TrimSpace(lines[d.Range.Start.Line])
		}
		code := codeString(d.Code)
		key := fmt.Sprint(sev, "\x00", d.Source, "\x00", code, "\x00", d.Message, "\x00", lineText)
		if keys[key] {
			continue
		}
		keys[key] = true
		if sh.base[key] || sh.cur[key] {
			continue
		}
		col := d.Range.Start.Character + 1
		if d.Range.Start.Line < len(lines) {
			col = runeColumn(lines[d.Range.Start.Line], d.Range.Start.Character)
		}
		out = append(out, Diagnostic{Path: rel, Line: d.Range.Start.Line + 1, Column: col, Severity: severities[sev], Source: d.Source, Code: code,
			Message: clip(strings.TrimSpace(d.Message), 400)})
	}
	maps.Copy(sh.cur, keys)
	return out
}

func (sh *shown) curOrNil() map[string]bool {
	if sh == nil {
		return nil
	}
	return sh.cur
}

// codeString is a diagnostic's code (a number or a string) as text.
func codeString(raw []byte) string {
	s := strings.Trim(string(raw), `"`)
	if s == "null" {
		return ""
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
