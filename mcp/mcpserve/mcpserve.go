// Package mcpserve serves orca's tools over the Model Context Protocol, on
// the official Go SDK: an MCP client (Claude Code, an IDE, another agent)
// lists a session's tools and calls them, and every call goes through the
// control plane a model's call goes through in a turn — validation, the
// PRE_TOOL_USE and POST_TOOL_USE hooks, the permission policy with
// built-in protection, approvals, the OS sandbox for commands, middleware,
// events and observation rows (see session.LiveSession.CallTool). The
// client is no person at a terminal: what the policy would ask about is
// refused by the runtime's approver (headless in `orca mcp serve`), with
// the reason, unless a rule allows it.
//
// Optionally the whole agent is one more tool, AgentTool: its prompt runs
// a turn of the session, and the answer is the result.
//
// Run serves one client over a transport such as stdio; Serve (or
// Handler) serves any number over streamable HTTP, each request admitted
// as orca serve admits its own (Host, Origin, a bearer token).
//
//	s, err := mcpserve.New(live, mcpserve.Options{Agent: true})
//	…
//	err = s.Run(ctx, &mcp.StdioTransport{})
//	// or: err = s.Serve(ctx, listener, mcpserve.HTTPOptions{Token: token})
package mcpserve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/tool"
)

// AgentTool is the name of the tool that runs a turn of the agent
// (Options.Agent).
const AgentTool = "orca_agent"

// Options configure a Server.
type Options struct {
	// Name and Version are what the server calls itself to clients
	// ("orca" and "" if empty).
	Name, Version string
	// Tools names the runtime's tools to serve; nil serves all of them.
	// A name the runtime does not have is an error of New.
	Tools []string
	// Agent also serves AgentTool.
	Agent bool
	// Logger receives the SDK's logs (none if nil).
	Logger *slog.Logger
}

// Server is an MCP server of one live session's tools. Close the session
// after the server has stopped: it waits for the calls still running.
type Server struct {
	ls     *session.LiveSession
	srv    *mcp.Server
	logger *slog.Logger
	// turn holds AgentTool calls to one turn at a time: a session's turns
	// do not overlap, and a second call would only be queued into the
	// first one's turn.
	turn sync.Mutex

	mu sync.Mutex
	// handler: Handler has made the server's one HTTP handler.
	handler bool
}

// New returns a server of the tools of ls's runtime (opts.Tools), each
// call made in ls, and with opts.Agent, of AgentTool.
func New(ls *session.LiveSession, opts Options) (*Server, error) {
	rt := ls.Runtime()
	var tools []tool.Tool
	if opts.Tools == nil {
		// All of them, but for those a deny rule names outright: the
		// agent is not offered them either.
		for _, tl := range rt.Tools().Tools() {
			if p := rt.Policy(); p == nil || !p.DeniesTool(tl.Name(), tool.TraitsOf(tl).Aliases) {
				tools = append(tools, tl)
			}
		}
	} else {
		for _, n := range opts.Tools {
			tl, ok := rt.Tools().Lookup(n)
			if !ok {
				return nil, fmt.Errorf("mcpserve: no tool %q to serve; the tools are %s", n, strings.Join(rt.Tools().Names(), ", "))
			}
			if !slices.Contains(tools, tl) {
				tools = append(tools, tl)
			}
		}
	}
	if opts.Agent {
		if _, taken := rt.Tools().Lookup(AgentTool); taken {
			return nil, fmt.Errorf("mcpserve: the runtime has a tool named %s already, the name of the agent's own", AgentTool)
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{ls: ls, logger: logger}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: cmp.Or(opts.Name, "orca"), Version: opts.Version}, &mcp.ServerOptions{
		Logger:       logger,
		Instructions: instructions(rt.FS().Root()),
	})
	for _, tl := range tools {
		s.srv.AddTool(mcpTool(tl), s.callTool(tl.Name()))
	}
	if opts.Agent {
		s.srv.AddTool(agentTool(rt), s.runTurn)
	}
	return s, nil
}

// MCP returns the SDK's server, to serve it over any transport (Run
// serves one connection, Serve and Handler streamable HTTP).
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves one client over t until the client leaves (for stdio: until
// stdin closes) or ctx ends, whichever comes first; the calls still
// running are cancelled.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	err := s.srv.Run(ctx, t)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // asked to stop
	}
	return err
}

func instructions(root string) string {
	return "orca's tools over the workspace " + root + ": relative paths are relative to it, and nothing outside it is reached. " +
		"Every call goes through orca's permission policy, hooks and OS sandbox; a refused call's result says why and which rule would allow it."
}

// mcpTool is how t is described to MCP clients: its name, description and
// input schema as the model sees them, and its traits as annotations — a
// read-only tool is readOnlyHint, any other is destructiveHint (orca
// assumes a tool may change anything unless it says otherwise), an
// idempotent one is idempotentHint, and openWorldHint is whether it
// reaches the network (WebFetch; a read-only tool that does not, false;
// absent for the rest, which MCP reads as true).
func mcpTool(t tool.Tool) *mcp.Tool {
	tr := tool.TraitsOf(t)
	a := &mcp.ToolAnnotations{ReadOnlyHint: tr.ReadOnly, IdempotentHint: tr.Idempotent}
	if tr.Network || tr.ReadOnly { // absent, MCP reads it true: a tool that may change anything may reach anything
		open := tr.Network
		a.OpenWorldHint = &open
	}
	if !tr.ReadOnly {
		destructive := true
		a.DestructiveHint = &destructive
	}
	return &mcp.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.Schema(), Annotations: a}
}

// callTool is the handler of the runtime's tool name.
func (s *Server) callTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.ls.CallTool(ctx, name, req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Sprintf("Not run: %v.", err)), nil
		}
		return mcpResult(res), nil
	}
}

// mcpResult is the MCP result of an orca tool result: its content as text,
// and isError for an error observation (a refused, invalid or failed
// call), so that the client's model reads it as the agent's model would.
func mcpResult(r tool.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Content}}, IsError: r.IsError}
}

func errorResult(msg string) *mcp.CallToolResult {
	return mcpResult(tool.Result{Content: msg, IsError: true})
}

// agentInput is AgentTool's input.
type agentInput struct {
	Prompt string `json:"prompt"`
}

func agentTool(rt *agent.Runtime) *mcp.Tool {
	destructive := true
	return &mcp.Tool{
		Name: AgentTool,
		Description: fmt.Sprintf("Runs the orca agent %q on a task in the workspace %s and returns its answer: the agent works with its own tools "+
			"(reading, editing and searching files, running commands in a sandbox, subagents) under orca's permission policy, "+
			"and the turns of one server continue one conversation. Give it a complete task; it answers when done.", rt.Definition().Name, rt.FS().Root()),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","minLength":1,` +
			`"description":"the task or question for the agent"}},"required":["prompt"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
	}
}

// runTurn is AgentTool's handler: one turn of the session. The client
// cancelling the call (or leaving) interrupts the turn, which ends at its
// next safe point, its running tool cancelled.
func (s *Server) runTurn(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in agentInput
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || strings.TrimSpace(in.Prompt) == "" {
		return errorResult(`Not run: ` + AgentTool + ` needs {"prompt": "…"}, a task for the agent.`), nil
	}
	s.turn.Lock()
	defer s.turn.Unlock()
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(agent.ErrInterrupted) })
	defer stop()
	res, err := s.ls.Run(runCtx, in.Prompt)
	switch {
	case res == nil:
		return errorResult(fmt.Sprintf("The agent did not run: %v.", err)), nil
	case res.StopReason == agent.StopAnswered:
		return mcpResult(tool.Text(res.Answer)), nil
	}
	msg := fmt.Sprintf("The agent's turn ended %s after %d iterations and %d tool calls", res.StopReason, res.Iterations, res.ToolCalls)
	switch {
	case res.BudgetDimension != "":
		msg += fmt.Sprintf(": the session's %s budget is exhausted", strings.ReplaceAll(string(res.BudgetDimension), "_", " "))
	case res.Err != nil:
		msg += ": " + res.Err.Error()
	case res.Reason != "":
		msg += ": " + res.Reason
	}
	msg += "."
	if res.Answer != "" {
		msg += "\n\n" + res.Answer
	}
	return errorResult(msg), nil
}
