// Package mcp makes the tools of MCP servers orca tools, on the official
// Go SDK (github.com/modelcontextprotocol/go-sdk): a Provider connects to
// each Server (a stdio command, run by the runtime's sandbox runner like
// Bash, or a streamable HTTP or SSE endpoint), lists its tools and offers
// each as mcp__<server>__<tool>, with its input schema (validated like
// every tool's) and its annotations as traits (readOnlyHint: read-only;
// idempotentHint: idempotent). Policy rules, hook matchers, approvals,
// budgets, middleware and events see them as they see any tool.
//
// Resources and prompts: once a server says it serves resources, the
// runtime has two read-only tools, ListMcpResourcesTool and
// ReadMcpResourceTool (named as Claude Code names them), that list and
// read the resources of every server; each server's prompts are the
// user's commands (tool.Expander, handed over through
// tool.Env.OnExpander): "/mcp__<server>__<prompt> arguments" as a turn's
// input becomes the prompt's messages.
//
// What else the client does (notify.go): its roots are the runtime's
// workspace (tool.Env.FS), fixed for the runtime's life; each call asks
// for progress, which reaches whoever watches the call (tool.Report: the
// runtime's tool_progress events), at most one report each 250ms; the
// servers' log messages, from Options.LogLevel up, go to Options.OnLog,
// at most 20 at once and 2 a second per server. It does not offer
// sampling: a server's sampling/createMessage is refused, saying why
// (ErrSamplingRefused).
//
// # The reliability contract
//
//   - A server that fails to start, or does not answer its handshake within
//     Options.StartTimeout, is reported (Status, the provider's log,
//     Options.OnChange) and offers no tools; the others start regardless.
//     It is tried again in the background, with pauses growing to a
//     minute, each try waiting twice as long for the handshake as the one
//     before (up to 16 × StartTimeout): a server slow to start joins when
//     it is ready, its tools added to the runtime's registry.
//   - A server whose connection drops (the process exits, the HTTP session
//     is lost) is reconnected on the next call of one of its tools — one
//     new connection for all the calls that find it dropped.
//   - Every new connection reads the tool list again, and the registry
//     follows it; so does notifications/tools/list_changed: new tools are
//     added to the runtime's registry, vanished ones removed. (Over HTTP a
//     list_changed sent while the client's stream is down is lost: the
//     list read on reconnecting is how such a change arrives.)
//   - A call has a timeout (Server.Timeout, else Options.CallTimeout). A
//     call that overruns it is cancelled — the server is sent
//     notifications/cancelled — reported to the model as one that may or
//     may not have taken effect, and not sent again; the connection stays,
//     and the other calls in flight on it go on, unless the server does
//     not answer a ping either (within the timeout, between 1 and 10
//     seconds): then it is dropped, and the next call connects again. A
//     server that never answers cannot hold a turn longer than the
//     timeout.
//   - A call cut off by the connection dropping while it ran is reported
//     the same way, and sent again once, on a fresh connection, only if
//     the tool is annotated idempotent (or read-only).
//   - A call the server cannot have run is sent again once, on a fresh
//     connection, whatever the tool: the SDK found the session closed
//     before sending it, or its own HTTP request could not connect, or was
//     answered 404 Not Found for a session the server no longer has (the
//     MCP spec has a server refuse every request of a session it ended;
//     the server restarted, or expired or dropped the session). A session
//     lost while a call ran — the 404 went to another request — is a
//     connection dropped during the call, as above. Over SSE the server
//     accepts a call's request (202) before it runs the call, so a
//     session lost after that is always a call cut off.
//   - A server's JSON-RPC error answer (an unknown tool, invalid
//     arguments) is reported as a refusal, and the connection kept; a
//     tool's own error (isError) is the observation, marked as an error.
//   - Closing the runtime (the provider's closer, handed over through
//     tool.Env.OnClose) closes every session and stops every process the
//     provider started, with what those started.
package mcp

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/tool"
)

// Server is one MCP server to connect to.
type Server struct {
	// Name names the server; its tools are mcp__<Name>__<tool>.
	Name string
	// Type is "stdio" (the default), "http" (streamable HTTP) or "sse".
	Type string
	// Command, Args and Env start a stdio server: Env's variables come
	// after the runner's scrubbed environment.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach an http or sse server.
	URL     string
	Headers map[string]string
	// OAuth is how an http server that asks for authorization is signed
	// in to (nil: the defaults; see OAuth). Not used when Headers has an
	// Authorization header.
	OAuth *OAuth
	// Login, if set, signs a person in when the server asks for
	// authorization (orca mcp login's); without it, a server that has no
	// sign-in kept (or one that can be refreshed) is StateNeedsLogin.
	Login *Login
	// Timeout bounds one tool call (Options.CallTimeout if zero).
	Timeout time.Duration
	// Unsandboxed runs a stdio server outside the OS sandbox, as the
	// user, with the scrubbed environment and Env: a server the user
	// declared themselves (their settings), which Claude Code runs so too;
	// a project's runs in the sandbox, as Bash does.
	Unsandboxed bool
}

// NotStarted is the message of the warning Options.Logger gets for a
// server that did not start (attributes "server" and "err"); a program
// that reports the servers' Status itself may drop it.
const NotStarted = "MCP server not started"

// Options configure a Provider.
type Options struct {
	// StartTimeout bounds a server's start and handshake
	// (DefaultStartTimeout if zero).
	StartTimeout time.Duration
	// CallTimeout bounds a tool call of a server without a Timeout of its
	// own (DefaultCallTimeout if zero).
	CallTimeout time.Duration
	// Logger reports servers that fail (slog.Default() if nil).
	Logger *slog.Logger
	// HTTPClient reaches http and sse servers (http.DefaultClient's
	// transport if nil).
	HTTPClient *http.Client
	// Tokens keeps the sign-ins to http servers that ask for
	// authorization (OAuth); nil: none are kept, and such a server is
	// StateNeedsLogin unless its Login signs a person in.
	Tokens TokenStore
	// Elicitor asks the person the questions a server asks outside any
	// tool call of a turn (a call's own go to the Elicitor its context
	// carries: elicit.From); nil declines them (elicit.Headless).
	Elicitor elicit.Elicitor
	// OnChange, if set, is told each change of a server: it started,
	// failed, dropped, reconnected, or its tools changed. It is called in
	// order for each server, for one change of a server at a time, and
	// must return quickly (publish the change; do not call back into the
	// provider).
	OnChange func(Change)
	// LogLevel is the lowest level of the messages orca asks the servers
	// to log to it (one of LogLevels; DefaultLogLevel if "").
	LogLevel string
	// OnLog, if set, is told each message a server logs
	// (notifications/message), within the bounds that keep a server from
	// flooding (see Log.Dropped); it must return quickly. Without it, the
	// messages go to Logger, at their level.
	OnLog func(Log)
}

// A Change is what happened to a server, for Options.OnChange.
type Change struct {
	Kind ChangeKind
	// RuntimeID is the runtime whose server it is (tool.Env.RuntimeID).
	RuntimeID string
	// Status is the server's status after the change.
	Status Status
	// Added and Removed are the tools (orca's names) that came and went
	// (ToolsChanged).
	Added, Removed []string
}

// ChangeKind says what changed.
type ChangeKind string

// Changes.
const (
	// Started: the server is up for the first time, its tools offered.
	Started ChangeKind = "started"
	// Failed: it did not start, or could not be connected again
	// (Status.Error says why); told once, not again at each try after.
	Failed ChangeKind = "failed"
	// Dropped: its connection dropped (Status.Error says how); the next
	// call connects again.
	Dropped ChangeKind = "dropped"
	// Reconnected: it is up again after its connection dropped or failed.
	Reconnected ChangeKind = "reconnected"
	// ToolsChanged: its tool list changed (Added, Removed), announced by
	// list_changed or found on reconnecting.
	ToolsChanged ChangeKind = "tools_changed"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultCallTimeout  = 5 * time.Minute
)

// Provider is the tool.Provider of a set of MCP servers.
type Provider struct {
	servers []Server
	opts    Options

	mu   sync.Mutex
	sets []*set
}

// NewProvider returns the provider of servers' tools.
func NewProvider(servers []Server, opts Options) *Provider {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if !slices.Contains(LogLevels, opts.LogLevel) {
		opts.LogLevel = DefaultLogLevel
	}
	return &Provider{servers: slices.Clone(servers), opts: opts}
}

// Name implements tool.Provider.
func (p *Provider) Name() string { return "mcp" }

// Tools implements tool.Provider: it starts every server, at once, and
// returns the tools of those that came up — in a runtime (env.Registry
// set), it adds them to the registry itself, as it adds those that come
// later, and returns none. It fails on a server list that cannot be used
// (two servers of one name) and on a tool the registry has already; a
// server that does not come up is in Status. The servers' prompts go to
// env.OnExpander, as commands.
func (p *Provider) Tools(env tool.Env) ([]tool.Tool, error) {
	seen := map[string]bool{}
	for _, s := range p.servers {
		if seen[s.Name] {
			return nil, fmt.Errorf("mcp: two servers are named %q", s.Name)
		}
		seen[s.Name] = true
	}
	st := &set{p: p, env: env}
	for _, s := range p.servers {
		st.conns = append(st.conns, newConn(st, s))
	}
	var wg sync.WaitGroup
	for _, c := range st.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.StartTimeout)
			defer cancel()
			c.dial <- struct{}{} // no one else has it yet
			err := c.connect(ctx)
			c.unlockDial()
			if err != nil {
				// What Status says: the error and the end of the server's
				// stderr, which often says why (a command not found).
				msg := cmp.Or(c.status().Error, err.Error())
				p.opts.Logger.Warn(NotStarted, "server", c.srv.Name, "err", msg)
			}
		}()
	}
	wg.Wait()
	p.mu.Lock()
	p.sets = append(p.sets, st)
	p.mu.Unlock()
	if env.OnClose != nil {
		env.OnClose(st)
	}
	out, err := st.firstList()
	if err != nil {
		return nil, err
	}
	if env.OnExpander != nil {
		env.OnExpander(prompts{st})
	}
	for _, c := range st.conns {
		if c.status().State == StateFailed {
			st.retries.Add(1)
			go func() {
				defer st.retries.Done()
				c.retry()
			}()
		}
	}
	return out, nil
}

// Close closes every server of every runtime the provider served (each
// runtime's also closes on its own when the runtime closes).
func (p *Provider) Close() error {
	p.mu.Lock()
	sets := p.sets
	p.sets = nil
	p.mu.Unlock()
	var errs []error
	for _, s := range sets {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// State is how a server is.
type State string

// States.
const (
	// StateUp: connected, its tools offered.
	StateUp State = "up"
	// StateFailed: it did not start, or its connection dropped and could
	// not be made again; Status.Error says why.
	StateFailed State = "failed"
	// StateNeedsLogin: it asks for authorization that orca has not got
	// (ErrNeedsLogin): a person signs in with orca mcp login; the next
	// call tries again.
	StateNeedsLogin State = "needs-login"
	// StateDown: its connection dropped; the next call reconnects.
	StateDown State = "down"
	// StateClosed: the runtime closed it.
	StateClosed State = "closed"
)

// Status is what a server is doing.
type Status struct {
	Name  string
	Type  string
	State State
	// Tools are the names of its tools the runtime offers.
	Tools []string
	// Prompts are the commands its prompts are ("/mcp__<server>__<prompt>"
	// in a turn's input, without the slash).
	Prompts []string
	// Resources: it serves resources (ListMcpResourcesTool,
	// ReadMcpResourceTool).
	Resources bool
	// Error is why it is not up (with the end of a stdio server's stderr).
	Error string
	// Server is what the server says it is (its name and version).
	Server string
}

// Status returns the servers' status, for the last runtime the provider
// served, in the order they were given.
func (p *Provider) Status() []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sets) == 0 {
		out := make([]Status, len(p.servers))
		for i, s := range p.servers {
			out[i] = Status{Name: s.Name, Type: cmp.Or(s.Type, "stdio"), State: StateDown, Error: "not started"}
		}
		return out
	}
	st := p.sets[len(p.sets)-1]
	out := make([]Status, len(st.conns))
	for i, c := range st.conns {
		out[i] = c.status()
	}
	return out
}

// set is the servers of one runtime.
type set struct {
	p     *Provider
	env   tool.Env
	conns []*conn
	// listed: the runtime has its first tool list; resources: the
	// resource tools are offered.
	mu                sync.Mutex
	listed, resources bool
	// retries are the servers that did not start, trying again; bg the
	// tool list reloads under way.
	retries, bg sync.WaitGroup
	// progress are the calls in flight, by their progress token (tokens
	// counts them).
	progress sync.Map
	tokens   atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// Close closes the set's sessions and stops its processes.
func (s *set) Close() error {
	s.closeOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(s.conns))
		for i, c := range s.conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.close()
			}()
		}
		wg.Wait()
		s.retries.Wait()
		s.bg.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the name orca gives the tool of server: mcp__<server>__<tool>,
// with characters a tool name cannot have replaced by _, and, past 64
// characters, cut and ended by a hash of the whole.
func ToolName(server, toolName string) string {
	name := "mcp__" + unsafeName.ReplaceAllString(server, "_") + "__" + unsafeName.ReplaceAllString(toolName, "_")
	if len(name) <= 64 {
		return name
	}
	sum := sha1.Sum([]byte(server + "\x00" + toolName))
	return name[:55] + "_" + hex.EncodeToString(sum[:4])
}

// errText shortens an error of the SDK for a message.
func errText(err error) string {
	s := err.Error()
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return strings.TrimSpace(s)
}

var _ tool.Provider = (*Provider)(nil)
