//lint:file-ignore SA1019 roots, sampling and logging are deprecated in the 2026-07-28 protocol (SEP-2577); servers use them meanwhile, and this file is where orca answers them

package mcp

// What orca's client offers servers besides calling them — roots — and
// hears from them besides answers — progress and log messages — and the
// one request it refuses: sampling.
//
// The MCP specification of 2026-07-28 deprecates roots, sampling and
// logging (SEP-2577); servers written for the versions before it use
// them, and will for the deprecation window, so orca answers them while
// the SDK does.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/tool"
)

// LogLevels are MCP's log levels, from the lowest: what Options.LogLevel
// and Log.Level take.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// DefaultLogLevel is Options.LogLevel when it is "".
const DefaultLogLevel = "info"

// A Log is a message a server logged (notifications/message), for
// Options.OnLog.
type Log struct {
	// RuntimeID is the runtime whose server it is (tool.Env.RuntimeID).
	RuntimeID string
	// Server is the server's name.
	Server string
	// Level is the message's: one of LogLevels (or what the server sent,
	// if it is none of them).
	Level string
	// Logger names what in the server logged it, if the server said.
	Logger string
	// Message is the message's data: its text, or else its JSON, cut at
	// maxLogMessage bytes.
	Message string
	// Dropped counts the server's messages dropped since the last one
	// told: each server is heard at most logBurst messages at once and
	// logRate a second after that.
	Dropped int
}

// Attrs are l as a log line's attributes ("severity", not "level": a
// text handler takes "level" for its own).
func (l Log) Attrs() []any {
	attrs := []any{"server", l.Server, "severity", l.Level, "message", l.Message}
	if l.Logger != "" {
		attrs = append(attrs, "logger", l.Logger)
	}
	if l.Dropped > 0 {
		attrs = append(attrs, "dropped", l.Dropped)
	}
	return attrs
}

// The bounds of what a server's log messages may cost: a server that logs
// in a loop cannot flood the events, the rows or the user's terminal.
const (
	logBurst      = 20
	logRate       = 2 // messages a second, once the burst is spent
	maxLogMessage = 2 << 10
	// progressEvery is the shortest time between two progress reports of
	// a call that are told (its last, progress reaching total, always is).
	progressEvery = 250 * time.Millisecond
)

// newClient makes the client of one connection: opts (the list_changed
// handlers) with roots, progress and logging, and sampling refused.
func (c *conn) newClient(opts *sdk.ClientOptions) *sdk.Client {
	roots := c.set.roots()
	if opts.Capabilities == nil {
		// Not the SDK's default, which declares roots whether there are
		// any or not.
		opts.Capabilities = &sdk.ClientCapabilities{}
	}
	if len(roots) > 0 {
		// Fixed for the runtime's life (its workspace does not change), so
		// never a list_changed to send.
		opts.Capabilities.RootsV2 = &sdk.RootCapabilities{}
	}
	opts.ProgressNotificationHandler = c.progressed
	opts.LoggingMessageHandler = c.logged
	client := sdk.NewClient(&sdk.Implementation{Name: "orca", Version: "1"}, opts)
	if len(roots) > 0 {
		client.AddRoots(roots...)
	}
	client.AddReceivingMiddleware(refuseSampling)
	return client
}

// roots are the folders the runtime's tools work in, as file:// URIs: its
// workspace (none outside a runtime).
func (s *set) roots() []*sdk.Root {
	if s.env.FS == nil {
		return nil
	}
	dir := s.env.FS.Root()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}
	return []*sdk.Root{{URI: u.String(), Name: filepath.Base(dir)}}
}

// ErrSamplingRefused is the message of the JSON-RPC error a server's
// sampling/createMessage gets.
const ErrSamplingRefused = "orca does not let MCP servers ask its model (sampling/createMessage is not offered): " +
	"what a server asks would be spent from the user's budget, without the user's approval, and put text of the server's " +
	"before the model outside any tool result"

// refuseSampling answers a server's sampling request with an error that
// says why (orca does not declare sampling: a server that follows the
// specification does not ask). Its code is the one for a request that
// needs a capability not declared (-32021): the SDK would write "method
// not found" over a -32601's message.
func refuseSampling(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "sampling/createMessage" {
			return nil, &jsonrpc.Error{Code: sdk.CodeMissingRequiredClientCapabilities, Message: ErrSamplingRefused}
		}
		return next(ctx, method, req)
	}
}

// callProgress is a call waiting for its answer, as its progress
// notifications find it.
type callProgress struct {
	ctx  context.Context // the call's: tool.Report tells its watcher
	mu   sync.Mutex
	last time.Time // when a report was last told
}

// take reports whether a report at now is told: at most one each
// progressEvery, and the last one (done) always.
func (p *callProgress) take(now time.Time, done bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !done && !p.last.IsZero() && now.Sub(p.last) < progressEvery {
		return false
	}
	p.last = now
	return true
}

// watchProgress gives params a progress token of its own and returns the
// function that forgets it, once the call has its answer.
func (c *conn) watchProgress(ctx context.Context, params *sdk.CallToolParams) func() {
	token := "orca-" + strconv.FormatUint(c.set.tokens.Add(1), 10)
	c.set.progress.Store(token, &callProgress{ctx: ctx})
	params.SetProgressToken(token)
	return func() { c.set.progress.Delete(token) }
}

// progressed tells the call a progress notification names how far it has
// come; one of no call in flight (late, or made up) is dropped.
func (c *conn) progressed(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	if p == nil {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := c.set.progress.Load(token)
	if !ok {
		return
	}
	call := v.(*callProgress)
	if !call.take(time.Now(), p.Total > 0 && p.Progress >= p.Total) {
		return
	}
	tool.Report(call.ctx, tool.Progress{Progress: p.Progress, Total: p.Total, Message: clipText(p.Message, maxLogMessage)})
}

// logLimit bounds the log messages of one server (logBurst, logRate).
type logLimit struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

// take reports whether a message that came at now is told, and how many
// were dropped since the last one told.
func (l *logLimit) take(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = logBurst
	} else {
		l.tokens = min(logBurst, l.tokens+now.Sub(l.last).Seconds()*logRate)
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped := l.dropped
	l.dropped = 0
	return true, dropped
}

// logged tells Options.OnLog (or else Options.Logger) of a message the
// server logged, within the server's bounds.
func (c *conn) logged(_ context.Context, req *sdk.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	ok, dropped := c.logs.take(time.Now())
	if !ok {
		return
	}
	msg, _ := p.Data.(string)
	if _, isText := p.Data.(string); !isText {
		b, err := json.Marshal(p.Data)
		if err != nil {
			b = fmt.Appendf(nil, "%v", p.Data)
		}
		msg = string(b)
	}
	l := Log{RuntimeID: c.set.env.RuntimeID, Server: c.srv.Name, Level: clipText(string(p.Level), 20), Logger: clipText(p.Logger, 200),
		Message: clipText(msg, maxLogMessage), Dropped: dropped}
	if f := c.set.p.opts.OnLog; f != nil {
		f(l)
		return
	}
	c.set.p.opts.Logger.Log(context.Background(), slogLevel(l.Level), "MCP server log", l.Attrs()...)
}

// slogLevel is the slog level of an MCP log level.
func slogLevel(level string) slog.Level {
	switch i := slices.Index(LogLevels, level); {
	case i <= 0: // debug, or none of MCP's
		return slog.LevelDebug
	case i <= 2: // info, notice
		return slog.LevelInfo
	case i == 3:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// setLogLevel asks a server that logs for the messages from
// Options.LogLevel up: with logging/setLevel in the protocols before
// 2026-07-28; in the sessionless one, each call's _meta says it
// (logMeta).
func (c *conn) setLogLevel(ctx context.Context, session *sdk.ClientSession) {
	r := session.InitializeResult()
	if r == nil || r.Capabilities == nil || r.Capabilities.Logging == nil || sessionless(session) {
		return
	}
	err := session.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: sdk.LoggingLevel(c.set.p.opts.LogLevel)})
	if err != nil && c.life.Err() == nil {
		c.set.p.opts.Logger.Debug("MCP server's log level not set", "server", c.srv.Name, "err", err)
	}
}

// logMeta adds the log level to a call's _meta in the sessionless
// protocol, where there is no logging/setLevel.
func (c *conn) logMeta(session *sdk.ClientSession, params *sdk.CallToolParams) {
	if !sessionless(session) {
		return
	}
	if params.Meta == nil {
		params.Meta = sdk.Meta{}
	}
	params.Meta[sdk.MetaKeyLogLevel] = c.set.p.opts.LogLevel
}

// sessionless reports whether session speaks the protocol of 2026-07-28
// or later.
func sessionless(session *sdk.ClientSession) bool {
	r := session.InitializeResult()
	return r != nil && r.ProtocolVersion >= "2026-07-28"
}

// clipText cuts s to at most n bytes, on a rune's boundary, marked by an
// ellipsis; invalid UTF-8 is dropped.
func clipText(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
