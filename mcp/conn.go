package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/internal/tailbuf"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/tool"
)

// conn is the connection to one server, made again when it drops.
type conn struct {
	set *set
	srv Server

	mu      sync.Mutex
	session *sdk.ClientSession
	proc    *process // a stdio server's
	state   State
	lastErr string
	info    string
	tools   map[string]*proxy // by orca's name
	// caps are what the server said it serves; prompts its prompts, as
	// last listed.
	caps    *sdk.ServerCapabilities
	prompts []*sdk.Prompt
	// authz signs in to an http server that asks for authorization
	// (made at the first connection; see authorizer).
	authz *authorizer
	// offered: the runtime has the tools of the first list; later lists
	// go to its registry.
	offered bool
	// started: it has been up (a later connection is a reconnection).
	started bool
	closed  bool
	stopped chan struct{} // closed by close: ends retries
	// life ends when the connection is closed (end is its cancel).
	life context.Context
	end  context.CancelFunc
	// endSession ends the current session's context.
	endSession context.CancelFunc
	// reload serializes tool list reloads.
	reload sync.Mutex
	// dial is held by the one connect under way: calls that find the
	// connection dropped at once make one new connection, not one each.
	dial chan struct{}
	// notify is held while a change is made and told (emit): each
	// server's changes reach Options.OnChange in order. told is the last
	// kind told (guarded by notify).
	notify sync.Mutex
	told   ChangeKind
	// logs bounds the server's log messages.
	logs logLimit
	// checking is the session whose liveness is being checked (checkAlive).
	checking *sdk.ClientSession
	// asking is the calls running, whose turns the server's questions go
	// to (elicit.go).
	asking asking
}

func newConn(s *set, srv Server) *conn {
	if srv.Type == "" {
		srv.Type = "stdio"
	}
	life, end := context.WithCancel(context.Background())
	return &conn{set: s, srv: srv, state: StateDown, tools: map[string]*proxy{}, stopped: make(chan struct{}), life: life, end: end, dial: make(chan struct{}, 1)}
}

func (c *conn) timeout() time.Duration {
	if c.srv.Timeout > 0 {
		return c.srv.Timeout
	}
	return c.set.p.opts.CallTimeout
}

// connect starts the server (a stdio one's process), makes the session
// and reads the tool list. The caller holds dial.
func (c *conn) connect(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("closed")
	}
	c.mu.Unlock()
	// The session lives as long as the connection, not as ctx (the SDK
	// keeps a subscription for list_changed on the context it connects
	// with); ctx bounds the handshake only.
	sctx, endSession := context.WithCancel(c.life)
	detach := context.AfterFunc(ctx, endSession)
	session, proc, err := c.open(sctx)
	if !detach() && err == nil {
		session.Close()
		err = fmt.Errorf("the handshake did not end in time: %w", context.Cause(ctx))
	}
	if err != nil {
		endSession()
		c.fail(err, proc)
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		session.Close()
		endSession()
		proc.stop()
		return errors.New("closed")
	}
	c.session, c.proc, c.state, c.lastErr, c.endSession = session, proc, StateUp, "", endSession
	c.caps = nil
	if r := session.InitializeResult(); r != nil {
		if r.ServerInfo != nil {
			c.info = strings.TrimSpace(r.ServerInfo.Name + " " + r.ServerInfo.Version)
		}
		c.caps = r.Capabilities
	}
	c.mu.Unlock()
	c.set.bg.Add(1)
	go func() {
		defer c.set.bg.Done()
		c.watch(session, proc)
	}()
	added, removed, err := c.loadTools(ctx, session)
	if err != nil {
		err = fmt.Errorf("listing its tools: %w", err)
		c.drop(session, "")
		c.fail(err, proc)
		return err
	}
	c.loadPrompts(ctx, session)
	c.setLogLevel(ctx, session)
	c.set.offerResources(c)
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	current, again := c.session == session && !c.closed, c.started
	c.started = c.started || current
	c.mu.Unlock()
	switch {
	case !current:
	case !again:
		c.emit(Started, nil, nil)
	default:
		c.emit(Reconnected, nil, nil)
		if len(added)+len(removed) > 0 {
			c.emit(ToolsChanged, added, removed)
		}
	}
	return nil
}

// emit tells Options.OnChange of a change of the server; the caller
// holds notify.
func (c *conn) emit(kind ChangeKind, added, removed []string) {
	c.told = kind
	if f := c.set.p.opts.OnChange; f != nil {
		f(Change{Kind: kind, RuntimeID: c.set.env.RuntimeID, Status: c.status(), Added: added, Removed: removed})
	}
}

// lockDial takes dial, unless ctx ends or the connection is closed first.
func (c *conn) lockDial(ctx context.Context) error {
	select {
	case c.dial <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-c.stopped:
		return errors.New("the runtime closed it")
	}
}

func (c *conn) unlockDial() { <-c.dial }

// retry connects again, with growing pauses up to a minute, until the
// server is up or the connection is closed: a server slow to start
// joins when it is ready (its tools added to the registry). Each try
// waits for the handshake twice as long as the one before, up to
// maxStartWaits × StartTimeout: a server that needs longer than
// StartTimeout to start gets that long, while nothing waits for it.
func (c *conn) retry() {
	wait := c.set.p.opts.StartTimeout
	for pause := time.Second; ; pause = min(2*pause, time.Minute) {
		wait = min(2*wait, maxStartWaits*c.set.p.opts.StartTimeout)
		select {
		case <-c.stopped:
			return
		case <-time.After(pause):
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := c.lockDial(ctx)
		if err == nil {
			if !c.up() { // else a call connected it meanwhile
				err = c.connect(ctx)
			}
			c.unlockDial()
		}
		cancel()
		if err == nil {
			return
		}
	}
}

// maxStartWaits bounds the handshake of retry, in StartTimeouts.
const maxStartWaits = 16

// up reports whether the connection has a session.
func (c *conn) up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session != nil
}

// fail records err (with the end of the process's stderr).
func (c *conn) fail(err error, proc *process) {
	msg := errText(err)
	if proc != nil {
		// Stopped first: once it has exited, all it wrote to stderr has
		// been read (cmd.Wait waits for that).
		proc.stop()
		tail := proc.stderrTail()
		if tail != "" {
			msg += "; its stderr ends: " + tail
		}
		if proc.sandboxed {
			msg += sandboxHint(c.srv.Command, msg)
		}
	}
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	closed := c.closed
	c.state, c.lastErr = StateFailed, msg
	if errors.Is(err, ErrNeedsLogin) {
		c.state = StateNeedsLogin
	}
	c.mu.Unlock()
	// Once, not at every try after: a try that came up but failed before
	// it was told started (its tools could not be listed) is one more.
	if c.told != Failed && !closed {
		c.emit(Failed, nil, nil)
	}
}

// watch marks the connection down when its session ends.
func (c *conn) watch(session *sdk.ClientSession, proc *process) {
	err := session.Wait()
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	if c.session != session || c.closed {
		c.mu.Unlock()
		return
	}
	c.endSession()
	c.session, c.proc, c.state = nil, nil, StateDown
	c.lastErr = "the connection dropped"
	if err != nil {
		c.lastErr += ": " + errText(err)
	}
	if proc != nil {
		if tail := proc.stderrTail(); tail != "" {
			c.lastErr += "; its stderr ends: " + tail
		}
		c.set.bg.Go(proc.stop)
	}
	c.mu.Unlock()
	c.emit(Dropped, nil, nil)
}

// open makes a session: for a stdio server, the process too.
func (c *conn) open(ctx context.Context) (*sdk.ClientSession, *process, error) {
	client := c.newClient(&sdk.ClientOptions{
		// The server's questions for the person, forms and URLs (elicit.go).
		ElicitationHandler: c.elicit,
		Capabilities:       elicitCapabilities(),
		ToolListChangedHandler: func(ctx context.Context, _ *sdk.ToolListChangedRequest) {
			c.mu.Lock()
			session := c.session
			c.mu.Unlock()
			if session == nil {
				return
			}
			c.set.bg.Add(1)
			go func() {
				defer c.set.bg.Done()
				ctx, cancel := context.WithTimeout(c.life, c.set.p.opts.StartTimeout)
				defer cancel()
				added, removed, err := c.loadTools(ctx, session)
				if err != nil {
					if c.life.Err() == nil {
						c.set.p.opts.Logger.Warn("MCP server's new tool list not read", "server", c.srv.Name, "err", err)
					}
					return
				}
				if len(added)+len(removed) > 0 {
					c.notify.Lock()
					c.emit(ToolsChanged, added, removed)
					c.notify.Unlock()
				}
			}()
		},
		PromptListChangedHandler: func(ctx context.Context, _ *sdk.PromptListChangedRequest) {
			c.mu.Lock()
			session := c.session
			c.mu.Unlock()
			if session == nil {
				return
			}
			c.set.bg.Go(func() {
				ctx, cancel := context.WithTimeout(c.life, c.set.p.opts.StartTimeout)
				defer cancel()
				c.loadPrompts(ctx, session)
			})
		},
	})
	client.AddSendingMiddleware(c.asking.track)
	switch c.srv.Type {
	case "stdio":
		proc, err := c.start()
		if err != nil {
			return nil, nil, err
		}
		session, err := client.Connect(ctx, &sdk.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}, nil)
		if err != nil {
			return nil, proc, fmt.Errorf("the handshake failed: %w", err)
		}
		return session, proc, nil
	case "http", "sse":
		hc := c.set.p.opts.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		copied := *hc
		copied.Transport = transport{base: base, headers: c.srv.Headers}
		hc = &copied
		st := &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: hc, MaxRetries: 2}
		if a := c.authorizer(base); a != nil {
			st.OAuthHandler = a
		}
		var t sdk.Transport = st
		if c.srv.Type == "sse" {
			t = &sdk.SSEClientTransport{Endpoint: c.srv.URL, HTTPClient: hc}
		}
		session, err := client.Connect(ctx, t, nil)
		if err != nil {
			return nil, nil, explain(c.srv, err)
		}
		return session, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown server type %q", c.srv.Type)
}

// transport adds a server's headers to its requests, and tells a call
// what became of the request that carried it (delivery).
type transport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if d, ok := r.Context().Value(deliveryKey{}).(*delivery); ok && r.Method == http.MethodPost {
		d.record(resp, err)
	}
	return resp, err
}

// loadTools reads the server's tool list and brings the registry to it;
// it returns the tools (orca's names) that came and went. A tool whose
// definition did not change stays in the registry as it was.
func (c *conn) loadTools(ctx context.Context, session *sdk.ClientSession) (added, removed []string, err error) {
	c.reload.Lock()
	defer c.reload.Unlock()
	var listed []*sdk.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		listed = append(listed, t)
	}
	c.mu.Lock()
	old := c.tools
	c.mu.Unlock()
	next := map[string]*proxy{}
	for _, t := range listed {
		p, err := newProxy(c, t)
		if err != nil {
			c.set.p.opts.Logger.Warn("MCP tool not offered", "server", c.srv.Name, "tool", t.Name, "err", err)
			continue
		}
		if first, taken := next[p.name]; taken {
			// Two names of the server are one once made safe (find.files,
			// find_files): the first listed keeps it, the same one each
			// time the list is read.
			c.set.p.opts.Logger.Warn("MCP tool not offered", "server", c.srv.Name, "tool", t.Name,
				"err", fmt.Sprintf("its name is %s once made safe, as %s's is", p.name, first.remote))
			continue
		}
		if was, ok := old[p.name]; ok && was.same(p) {
			p = was
		}
		next[p.name] = p
	}
	for name := range next {
		if _, ok := old[name]; !ok {
			added = append(added, name)
		}
	}
	for name := range old {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	c.mu.Lock()
	c.tools = next
	offered := c.offered
	c.mu.Unlock()
	reg := c.set.env.Registry
	if reg == nil || !offered {
		return added, removed, nil
	}
	// A reload (or a reconnect): the registry follows the server's list.
	for _, name := range removed {
		reg.Remove(name)
	}
	for _, name := range slices.Sorted(maps.Keys(next)) {
		p := next[name]
		if t, ok := reg.Lookup(name); ok {
			if t == tool.Tool(p) {
				continue // unchanged
			}
			if _, had := old[name]; !had {
				continue // another server's, or a tool of orca's: kept
			}
			reg.Remove(name) // its schema or description changed
		}
		if err := reg.Add(p); err != nil {
			c.set.p.opts.Logger.Warn("MCP tool not offered", "server", c.srv.Name, "tool", name, "err", err)
		}
	}
	return added, removed, nil
}

// loadPrompts reads the server's prompt list, if it serves prompts: the
// user's commands (see prompts.go). A list that cannot be read is
// logged, and the prompts known before kept.
func (c *conn) loadPrompts(ctx context.Context, session *sdk.ClientSession) {
	c.mu.Lock()
	serves := c.caps != nil && c.caps.Prompts != nil
	c.mu.Unlock()
	if !serves {
		return
	}
	var listed []*sdk.Prompt
	for p, err := range session.Prompts(ctx, nil) {
		if err != nil {
			if c.life.Err() == nil {
				c.set.p.opts.Logger.Warn("MCP server's prompt list not read", "server", c.srv.Name, "err", err)
			}
			return
		}
		if p != nil && p.Name != "" {
			listed = append(listed, p)
		}
	}
	slices.SortFunc(listed, func(a, b *sdk.Prompt) int { return strings.Compare(a.Name, b.Name) })
	c.mu.Lock()
	if c.session == session || c.session == nil {
		c.prompts = listed
	}
	c.mu.Unlock()
}

// servesResources reports whether the server, as last connected, said it
// serves resources.
func (c *conn) servesResources() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps != nil && c.caps.Resources != nil
}

// proxies returns the server's tools, sorted by name, as the runtime's
// first; from then on, new lists go to the registry.
func (c *conn) proxies() []tool.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offered = true
	names := slices.Sorted(maps.Keys(c.tools))
	out := make([]tool.Tool, len(names))
	for i, n := range names {
		out[i] = c.tools[n]
	}
	return out
}

// live returns the session, connecting again if the connection dropped.
// Calls that find it dropped at once wait for one connect.
func (c *conn) live(ctx context.Context) (*sdk.ClientSession, error) {
	session, err := c.current()
	if session != nil || err != nil {
		return session, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.set.p.opts.StartTimeout)
	defer cancel()
	if err := c.lockDial(cctx); err != nil {
		return nil, err
	}
	defer c.unlockDial()
	if session, err := c.current(); session != nil || err != nil {
		return session, err // another call connected it
	}
	if err := c.connect(cctx); err != nil {
		return nil, err
	}
	if session, err := c.current(); session != nil || err != nil {
		return session, err
	}
	return nil, errors.New("its connection dropped again")
}

// current is the session, if there is one.
func (c *conn) current() (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the runtime closed it")
	}
	return c.session, nil
}

// drop forgets session if it is still the connection's, so that the next
// call connects again; why (with the end of a stdio server's stderr) is
// the status's error, and the change is told (Dropped) unless why is "".
func (c *conn) drop(session *sdk.ClientSession, why string) {
	c.notify.Lock()
	defer c.notify.Unlock()
	c.mu.Lock()
	if c.session != session {
		c.mu.Unlock()
		return
	}
	proc, endSession := c.proc, c.endSession
	if tail := proc.stderrTail(); tail != "" && why != "" {
		why += "; its stderr ends: " + tail
	}
	c.session, c.proc, c.state, c.lastErr = nil, nil, StateDown, why
	c.mu.Unlock()
	// Closed in the background: the call that dropped it has its answer,
	// and a server that hangs may take its time to let go (an HTTP
	// session's DELETE waits up to 5 seconds).
	c.set.bg.Go(func() {
		endSession() // first: the SDK's subscription ends while the session can say so
		closeSession(session, proc)
	})
	if why != "" {
		c.emit(Dropped, nil, nil)
	}
}

// closeSession closes session and stops proc at once: a server that does
// not exit when its input ends (timers of its own keep node running) is
// killed, which ends the session's reading.
func closeSession(session *sdk.ClientSession, proc *process) error {
	done := make(chan error, 1)
	go func() { done <- session.Close() }()
	if proc != nil {
		proc.stop()
	}
	err := <-done
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

func (c *conn) status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Name: c.srv.Name, Type: c.srv.Type, State: c.state, Error: c.lastErr, Server: c.info}
	if c.closed {
		st.State = StateClosed
	}
	st.Tools = slices.Sorted(maps.Keys(c.tools))
	st.Resources = c.caps != nil && c.caps.Resources != nil
	for _, p := range c.prompts {
		st.Prompts = append(st.Prompts, ToolName(c.srv.Name, p.Name))
	}
	return st
}

func (c *conn) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stopped)
	session, proc := c.session, c.proc
	c.session, c.proc = nil, nil
	c.mu.Unlock()
	var err error
	c.end() // first, as in drop
	if c.authz != nil {
		c.authz.close()
	}
	if session != nil {
		err = closeSession(session, proc)
	} else if proc != nil {
		proc.stop()
	}
	if err != nil {
		return fmt.Errorf("MCP server %s: %w", c.srv.Name, err)
	}
	return nil
}

// process is a stdio server's process and pipes.
type process struct {
	*sandbox.Piped
	stderr *tailbuf.Buffer
	once   sync.Once
	// sandboxed: it runs in the OS sandbox (no network, writes only in
	// the workspace and the temp folders).
	sandboxed bool
}

// start starts a stdio server under the runtime's sandbox runner (the
// sandbox's excluded commands run outside it, as with Bash).
func (c *conn) start() (*process, error) {
	runner := c.set.env.Sandbox
	if runner == nil {
		runner = &sandbox.Runner{Disabled: true}
	}
	r := *runner
	if c.srv.Unsandboxed || slices.Contains(r.Excluded, filepath.Base(c.srv.Command)) || slices.Contains(r.Excluded, c.srv.Command) {
		r.Disabled = true
	}
	// It works in the workspace, as Bash does; outside a runtime, here.
	dir, _ := os.Getwd()
	if c.set.env.FS != nil {
		dir = c.set.env.FS.Root()
	}
	p := &process{stderr: &tailbuf.Buffer{Max: stderrKept}, sandboxed: !r.Disabled}
	var err error
	p.Piped, err = r.StartPiped(dir, c.srv.Env, p.stderr, append([]string{c.srv.Command}, c.srv.Args...)...)
	if errors.Is(err, sandbox.ErrUnavailable) {
		return nil, fmt.Errorf("not started: %v (a server the OS sandbox cannot run can be listed in the settings' sandbox.excludedCommands)", err)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// stop ends the process and everything it started, and waits for it.
func (p *process) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		p.Stdin.Close()
		select {
		case <-p.Done:
		case <-time.After(500 * time.Millisecond):
		}
		p.Kill()
		<-p.Done
		p.Stdout.Close()
	})
}

// stderrTail returns the end of what the server wrote on stderr, trimmed.
func (p *process) stderrTail() string {
	if p == nil {
		return ""
	}
	s, _ := p.stderr.Tail()
	return strings.TrimSpace(strings.ToValidUTF8(s, ""))
}

// sandboxHint says how the OS sandbox may be why a server that ran in it
// failed (msg: what failed, with its stderr), and what the user can do:
// its network, the folders it may write — what npx (its packages come
// from the registry, into ~/.npm), uvx and pip need.
func sandboxHint(command, msg string) string {
	m := strings.ToLower(msg)
	var why string
	switch {
	case containsAny(m, "enotfound", "eai_again", "getaddrinfo", "name resolution", "network is unreachable", "could not resolve host", "nodename nor servname"):
		why = "it could not reach the network, which the OS sandbox does not give it"
	case containsAny(m, "erofs", "read-only file system", "eacces", "permission denied"):
		why = "it could not write a folder, and in the OS sandbox it may write only in the workspace and the temp folders"
	case containsAny(filepath.Base(command), "npx", "uvx", "bunx", "pnpx") || strings.HasPrefix(filepath.Base(command), "pip"):
		why = filepath.Base(command) + " fetches packages from the network into your home folder, which the OS sandbox does not give it"
	default:
		return "; it ran in the OS sandbox (no network; writes only in the workspace and the temp folders), which may be why"
	}
	return "; " + why + ": a project's server runs in the sandbox — open its network with the settings' sandbox.network.allowedDomains [\"*\"] and the folders it writes with sandbox.filesystem.allowWrite, or list " +
		filepath.Base(command) + " in sandbox.excludedCommands to run it outside (servers you add yourself, orca mcp add --scope local or user, run outside the sandbox)"
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// stderrKept is how much of a server's stderr is kept: its last 2 KiB.
const stderrKept = 2 << 10
