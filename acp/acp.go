// Package acp is orca as an Agent Client Protocol agent (orca acp): an
// editor — Zed, a JetBrains IDE, Neovim, Emacs — starts it, speaks ACP
// (JSON-RPC over its standard input and output) to it, and drives orca's
// sessions, on the protocol's Go SDK (github.com/coder/acp-go-sdk).
//
// It is a front end over app, as orca chat and orca serve are:
// session/new and session/load open sessions of orca's store (a loaded
// one replays its history as updates), session/prompt runs a turn whose
// events become session/update notifications (message chunks, tool calls
// with their kind, locations and content — a diff for an edit, the output
// of a command —, TodoWrite's list as a plan), a call the policy asks
// about becomes session/request_permission, session/cancel interrupts the
// turn, and session/set_mode chooses what is done with such calls. orca
// reads and writes the workspace itself, in its sandbox and under its
// rules and protection: it does not use the client's fs/* and terminal/*
// methods (see docs/editors.md).
package acp

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
)

// Options configure the agent.
type Options struct {
	// Open opens the App of a workspace — the folder a session's cwd
	// names — with the MCP servers the client names for it added to the
	// settings' (they start as the user's own servers do), and approver
	// as its Config.Approver. The agent closes the Apps it opened when
	// the client leaves.
	Open func(ctx context.Context, cwd string, servers []config.MCPServer, approver policy.Approver) (*app.App, error)
	// Mode is the mode a session starts in (the settings' defaultMode if
	// ""). The Apps Open opens should run in policy.ModeDefault: the
	// session's mode decides, in the approver, what the default mode
	// asks about (session/set_mode changes it).
	Mode policy.Mode
	// Name and Version are the agent's, as initialize says them.
	Name, Version string
	// Logger gets what the connection cannot tell the client
	// (slog.Default() if nil).
	Logger *slog.Logger
}

// Serve speaks ACP on in and out until the client leaves (in ends) or ctx
// is done; it then interrupts the turns still running and closes the
// sessions and Apps it opened (what fails in that is logged). Its error
// is for a connection it could not serve.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	if o.Open == nil {
		return errors.New("acp: no Open")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	w := &lockedWriter{w: out}
	a := &agent{o: o, apps: map[string]*app.App{}, sessions: map[string]*live{}}
	// The SDK's connection reads at once; the client's first line reaches
	// it only once the connection is a's (ready), so that every handler
	// sees a.conn, and the logger, set.
	ready := make(chan struct{})
	conn := sdk.NewAgentSideConnection(a, w, checkLines(in, w, o.Logger, ready))
	conn.SetLogger(o.Logger)
	a.conn = conn
	close(ready)
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	// What went wrong closing (a server of the session slow to stop) is
	// told, as orca run and orca serve tell it; the client has left, and
	// the turns' records were stored as they were made.
	if err := a.close(); err != nil {
		o.Logger.Warn("orca acp: closing the sessions", "err", err)
	}
	return nil
}

// agent is the ACP agent over orca's Apps.
type agent struct {
	o    Options
	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	apps     map[string]*app.App // by workspace and MCP servers
	sessions map[string]*live
	closed   bool
}

// live is a session the client opened.
type live struct {
	a  *agent
	ls *session.LiveSession
	ap *app.App

	mu    sync.Mutex
	mode  policy.Mode
	calls map[string]bool // tool calls the client was told of
	ended map[string]bool // and those it was told ended
	// streamed: text of the current model call reached the client as
	// chunks (its completion need not send it again).
	streamed bool
}

// close ends every session and App (interrupting the turns still
// running), once.
func (a *agent) close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	sessions := a.sessions
	apps := a.apps
	a.mu.Unlock()
	ctx := context.Background()
	var errs []error
	for _, s := range sessions {
		s.ls.Interrupt(s.ls.CurrentTurn())
	}
	for _, s := range sessions {
		if err := s.ls.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ap := range apps {
		if err := ap.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// The modes a session may be in: orca's permission modes, by Claude
// Code's ids (which editors know from its ACP adapter).
var modes = []struct {
	id   sdk.SessionModeId
	mode policy.Mode
	name string
	desc string
}{
	{"default", policy.ModeDefault, "Ask", "Ask before edits and commands no rule allows"},
	{"acceptEdits", policy.ModeAcceptEdits, "Accept edits", "Make file edits without asking; ask before commands"},
	{"plan", policy.ModePlan, "Plan", "Read and plan: no edits, no commands"},
	{"dontAsk", policy.ModeDontAsk, "Don't ask", "Refuse what no rule allows, without asking"},
	{"bypassPermissions", policy.ModeBypass, "Bypass", "Run everything no rule denies or asks about, without asking"},
}

func modeState(m policy.Mode) *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: "default"}
	for _, x := range modes {
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: x.id, Name: x.name, Description: sdk.Ptr(x.desc)})
		if x.mode == m {
			st.CurrentModeId = x.id
		}
	}
	return st
}

func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: a.o.Name, Title: sdk.Ptr("orca"), Version: a.o.Version},
		AuthMethods:     []sdk.AuthMethod{},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
		},
	}, nil
}

func (a *agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := a.open(ctx, p.Cwd, p.McpServers, "")
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.ls.ID()), Modes: modeState(s.mode), ConfigOptions: s.configOptions()}, nil
}

func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	id := string(p.SessionId)
	ap, err := a.app(ctx, p.Cwd, p.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if _, err := ap.Store().Session(ctx, id); err != nil {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"sessionId": id, "error": fmt.Sprintf("no session %s in the workspace %s", id, ap.Root())})
	}
	s, err := a.open(ctx, p.Cwd, p.McpServers, id)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if err := s.replay(ctx); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	return sdk.LoadSessionResponse{Modes: modeState(s.mode), ConfigOptions: s.configOptions()}, nil
}

// open opens session id (a new one if "") in the App of cwd and servers.
func (a *agent) open(ctx context.Context, cwd string, servers []sdk.McpServer, id string) (*live, error) {
	if id != "" {
		a.mu.Lock()
		s := a.sessions[id]
		a.mu.Unlock()
		if s != nil {
			return s, nil
		}
	}
	ap, err := a.app(ctx, cwd, servers)
	if err != nil {
		return nil, err
	}
	s := &live{a: a, ap: ap, calls: map[string]bool{}, ended: map[string]bool{}, mode: ap.Settings().Mode()}
	if a.o.Mode != "" {
		s.mode = a.o.Mode
	}
	s.ls, err = ap.Session(ctx, app.SessionOptions{ID: id, OnEvent: s.onEvent})
	if err != nil {
		var busy *session.BusyError
		if errors.As(err, &busy) {
			return nil, sdk.NewInvalidRequest(map[string]any{"sessionId": id, "error": err.Error()})
		}
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		s.ls.Close(context.Background())
		return nil, errors.New("acp: the connection is closing")
	}
	a.sessions[s.ls.ID()] = s
	return s, nil
}

// app returns the App of the workspace cwd names with servers, opening it
// on first use.
func (a *agent) app(ctx context.Context, cwd string, servers []sdk.McpServer) (*app.App, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, sdk.NewInvalidParams(map[string]any{"cwd": cwd, "error": "cwd must be an absolute path"})
	}
	mcp, err := mcpServers(servers)
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"mcpServers": err.Error()})
	}
	key, _ := json.Marshal(struct {
		Cwd     string
		Servers []config.MCPServer
	}{filepath.Clean(cwd), mcp})
	a.mu.Lock()
	ap := a.apps[string(key)]
	a.mu.Unlock()
	if ap != nil {
		return ap, nil
	}
	ap, err = a.o.Open(ctx, filepath.Clean(cwd), mcp, approver{a})
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"cwd": cwd, "error": err.Error()})
	}
	mw := ap.Services().Middleware
	if _, err := mw.RegisterToolExecution("orca.acp", a.running); err != nil {
		ap.Close()
		return nil, err
	}
	if _, err := mw.RegisterLLMExecution("orca.acp", a.thoughts); err != nil {
		ap.Close()
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if other := a.apps[string(key)]; other != nil {
		ap.Close()
		return other, nil
	}
	a.apps[string(key)] = ap
	return ap, nil
}

// mcpServers are the client's MCP servers as orca's settings name them:
// a stdio command, or an http or sse server with its headers.
func mcpServers(in []sdk.McpServer) ([]config.MCPServer, error) {
	var out []config.MCPServer
	for i, m := range in {
		switch {
		case m.Stdio != nil:
			s := config.MCPServer{Name: m.Stdio.Name, Type: "stdio", Command: m.Stdio.Command, Args: m.Stdio.Args}
			for _, e := range m.Stdio.Env {
				if s.Env == nil {
					s.Env = map[string]string{}
				}
				s.Env[e.Name] = e.Value
			}
			out = append(out, s)
		case m.Http != nil:
			out = append(out, config.MCPServer{Name: m.Http.Name, Type: "http", URL: m.Http.Url, Headers: headers(m.Http.Headers)})
		case m.Sse != nil:
			out = append(out, config.MCPServer{Name: m.Sse.Name, Type: "sse", URL: m.Sse.Url, Headers: headers(m.Sse.Headers)})
		default:
			return nil, fmt.Errorf("server %d: orca starts stdio, http and sse servers", i)
		}
		if out[len(out)-1].Name == "" {
			return nil, fmt.Errorf("server %d has no name", i)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func headers(hs []sdk.HttpHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Name] = h.Value
	}
	return out
}

// session returns the open session id names, or the protocol's error.
func (a *agent) session(id sdk.SessionId) (*live, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[string(id)]
	if s == nil {
		return nil, sdk.NewInvalidParams(map[string]any{"sessionId": string(id), "error": fmt.Sprintf("no open session %s: open it with session/new or session/load", id)})
	}
	return s, nil
}

func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	for _, x := range modes {
		if x.id == p.ModeId {
			s.mu.Lock()
			s.mode = x.mode
			s.mu.Unlock()
			return sdk.SetSessionModeResponse{}, nil
		}
	}
	ids := make([]string, len(modes))
	for i, x := range modes {
		ids[i] = string(x.id)
	}
	return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"modeId": string(p.ModeId), "error": "unknown mode: " + strings.Join(ids, ", ") + " are orca's"})
}

func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil // a notification: nothing to answer
	}
	s.ls.Interrupt(s.ls.CurrentTurn())
	return nil
}

func (a *agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionClose)
}

func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}

func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

// The session's one configuration option: its model.
const modelOption = "model"

// configOptions are the session's options: the model, among the one
// configured and its provider's in orca's catalog.
func (s *live) configOptions() []sdk.SessionConfigOption {
	current := cmp.Or(s.ls.Model(), s.models()[0])
	names := s.models()
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(names))
	for _, n := range names {
		opts = append(opts, sdk.SessionConfigSelectOption{Name: n, Value: sdk.SessionConfigValueId(n)})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id, o.Select.Name = modelOption, "Model"
	o.Select.Category = sdk.Ptr(sdk.SessionConfigOptionCategoryModel)
	o.Select.Description = sdk.Ptr("The model of the session's next turns")
	return []sdk.SessionConfigOption{o}
}

// models are the models a session may switch to: the one configured
// ("default": the provider's own), the one chosen since, then those of its
// provider's API in orca's catalog.
func (s *live) models() []string {
	m := s.ap.Model()
	out := []string{cmp.Or(m.Model, "default")}
	if cur := s.ls.Model(); cur != "" && cur != out[0] {
		out = append(out, cur)
	}
	var shape string
	switch {
	case strings.HasPrefix(m.Provider, "anthropic"):
		shape = "anthropic"
	case strings.HasPrefix(m.Provider, "openai"), m.Provider == "azure":
		shape = "openai"
	case m.Provider == "gemini", m.Provider == "vertex":
		shape = "gemini"
	}
	if shape != "" {
		for _, c := range s.ap.Runtime().Definition().Catalog.Models() {
			if c.Provider == shape && c.ServedBy == "" && !slices.Contains(out, c.Name) {
				out = append(out, c.Name)
			}
		}
	}
	return out
}

func (a *agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil || v.ConfigId != modelOption {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "orca's one option is \"model\", a value among its options"})
	}
	s, err := a.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if !slices.Contains(s.models(), string(v.Value)) {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"value": string(v.Value), "error": "not a model of this session's provider: " + strings.Join(s.models(), ", ")})
	}
	if string(v.Value) == s.models()[0] {
		s.ls.SetModel("") // the configured one
	} else {
		s.ls.SetModel(string(v.Value))
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions()}, nil
}

// lockedWriter writes each message whole: the SDK's and the parse errors
// checkLines answers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// checkLines passes the client's lines that are JSON on to the SDK, once
// ready is closed, and answers one that is not with JSON-RPC's parse
// error (id null), as the protocol says; the SDK would drop it unanswered.
func checkLines(in io.Reader, w *lockedWriter, logger *slog.Logger, ready <-chan struct{}) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		<-ready
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 1<<20), 10<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(strings.TrimSpace(string(line))) == 0 {
				continue
			}
			if !json.Valid(line) {
				logger.Warn("orca acp: a line that is not JSON", "line", clip(string(line), 200))
				msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "Parse error: the line is not JSON"}})
				w.Write(append(msg, '\n'))
				continue
			}
			if _, err := pw.Write(append(slices.Clone(line), '\n')); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var _ interface {
	sdk.Agent
	sdk.AgentLoader
} = (*agent)(nil)
