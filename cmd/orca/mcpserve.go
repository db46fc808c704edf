package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/internal/httpguard"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/mcp/mcpserve"
	"github.com/orca-agent/orca/tui"
)

// mcpServeFlags are the flags of orca mcp serve.
type mcpServeFlags struct {
	agent agentFlags
	// agentTool: also serve the agent as one tool.
	agentTool bool
	tools     []string
	// transport is stdio or http; the others are http's.
	transport   string
	listen      string
	allowRemote bool
	hosts       []string
	origins     []string
}

// mcpTokenEnv gives orca mcp serve --transport http its bearer token;
// without it, the token is kept in the configuration folder as
// orca/mcp-serve-token. It is not orca serve's: a client given one
// reaches the tools, not the whole API.
const mcpTokenEnv = "ORCA_MCP_SERVE_TOKEN"

func mcpServeCommand(o options) *cobra.Command {
	var f mcpServeFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve a workspace's tools, and optionally the agent, to MCP clients over stdio or streamable HTTP",
		Long: `Serve the tools of orca's agent in a workspace (Read, Write, Edit, Glob,
Grep, Bash, TodoWrite, WebFetch, WebSearch, Task, Skill, AgentOutput,
TaskStop) to an MCP client, over the standard input and output: the
client starts 'orca mcp serve' and speaks MCP to it. Each tool is listed with its description, its input
schema and annotations from its traits (readOnlyHint for read-only tools,
destructiveHint for the others, idempotentHint).

Every call the client makes goes through what the agent's own calls go
through: schema validation, the settings' PreToolUse and PostToolUse hooks,
the permission policy (the settings' rules, --allow, --deny, --ask, the
permission mode, and the built-in protection of .orca, .claude, .git and
the user's configuration), the OS sandbox for Bash, and an event per step,
kept as observation rows of the session in .orca/orca.db ('orca timeline
--session ID'). No one is asked: a call the policy would ask about is
refused, and the result says which rule would allow it — pass
--permission-mode accept-edits, or --allow rules, for the calls the client
should make. A refused or failed call is an error result (isError) that
says why; nothing it would have changed is changed.

The calls are made in one session: a new one, or the one --session or
--continue names. With --agent, the agent itself is one more tool,
orca_agent {"prompt": "…"}: each call runs a turn of that session with the
model that --provider, --model or --script choose (as for 'orca run'),
and returns its answer; the client cancelling the call interrupts the
turn. Without --agent no model is needed, unless Task is called.

Standard output carries MCP messages only; orca's diagnostics go to
standard error. orca exits when its standard input closes (the client
left), or on SIGINT or SIGTERM, after stopping what it started.

With --transport http, orca serves MCP's streamable HTTP transport at
http://ADDR/mcp instead, to any number of clients, each in an MCP session
of its own (Mcp-Session-Id) and all calling in the one orca session; a
stream that breaks is resumed (Last-Event-ID). It listens on --listen,
127.0.0.1:4748 by default, and on a loopback address only unless
--allow-remote says otherwise. As orca serve does, it answers requests
sent to loopback names (and --allow-host's) only, refuses pages of other
origins (but --allow-origin's) with 403, and needs a bearer token on every
request (401 without): $` + mcpTokenEnv + `, else the token kept in
orca's configuration folder (orca/mcp-serve-token), made on the first
start. It prints the address and the token on standard error as a
client's configuration to paste, and runs until SIGINT or SIGTERM, which
cancel the calls still running.

To use orca's tools from Claude Code, add it to the project's .mcp.json:

  {"mcpServers": {"orca": {"command": "orca",
    "args": ["mcp", "serve", "-w", "/path/to/project", "--permission-mode", "accept-edits"]}}}

or run 'claude mcp add orca -- orca mcp serve -w /path/to/project'. Its
tools then appear to Claude Code as mcp__orca__Read, mcp__orca__Bash, ….`,
		Example: `  orca mcp serve -w ./project
  orca mcp serve -w ./project --permission-mode accept-edits --allow "Bash(go test:*)"
  orca mcp serve -w ./project --tool Read --tool Grep --tool Glob
  orca mcp serve -w ./project --agent --provider anthropic
  orca mcp serve -w ./project --transport http --listen 127.0.0.1:4748`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCPServe(cmd, &f, o)
		},
	}
	addAgentFlags(cmd, &f.agent)
	cmd.Flags().BoolVar(&f.agentTool, "agent", false, "also serve the agent as one tool, "+mcpserve.AgentTool+
		" {prompt}: a turn of the session on the chosen model, answered with the agent's answer")
	fl := cmd.Flags()
	fl.StringArrayVar(&f.tools, "tool", nil, "serve only the tool `NAME` (repeatable; default: all of the agent's tools)")
	fl.StringVar(&f.transport, "transport", "stdio", "`TRANSPORT` to serve MCP over: stdio (one client, which starts orca) or http (streamable HTTP, at http://ADDR/mcp)")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:4748", "with --transport http: `HOST:PORT` to listen on, a loopback address unless --allow-remote (port 0: any free one, printed)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "with --transport http: let --listen name an address other machines reach (they still need the token, which crosses the network unencrypted)")
	fl.StringArrayVar(&f.hosts, "allow-host", nil, "with --transport http: answer requests for `HOST` too (a name the server is reached by, besides loopback ones); repeatable")
	fl.StringArrayVar(&f.origins, "allow-origin", nil, "with --transport http: let pages of `ORIGIN` (scheme://host[:port]) call the server; repeatable")
	return cmd
}

// noModel is the model when nothing chose one and none is needed but by
// a tool that forks (Task): it tells that tool why it cannot run.
var noModel = llm.ClientFunc(func(context.Context, *llm.Request, func(llm.Delta)) (*llm.Response, error) {
	return nil, errors.New("orca mcp serve was started without a model (no --provider, $ORCA_PROVIDER or \"provider\" in the settings): subagents cannot run")
})

func runMCPServe(cmd *cobra.Command, f *mcpServeFlags, o options) error {
	var (
		ln           net.Listener
		token, where string
	)
	switch f.transport {
	case "stdio":
		for _, name := range []string{"listen", "allow-remote", "allow-host", "allow-origin"} {
			if cmd.Flags().Changed(name) {
				return usageErrorf("--%s is for --transport http", name)
			}
		}
	case "http":
		for _, origin := range f.origins {
			if err := httpguard.CheckOrigin(origin); err != nil {
				return usageErrorf("--allow-origin: %v", err)
			}
		}
		var err error
		if token, where, err = mcpToken(o); err != nil {
			return err
		}
		if ln, err = mcpListen(f); err != nil {
			return err
		}
		defer ln.Close()
	default:
		return usageErrorf("--transport %s: want stdio or http", f.transport)
	}
	cfg, err := f.agent.check(cmd, o)
	if err != nil {
		return err
	}
	// orca serving its tools starts no MCP servers of its own: a
	// workspace's .mcp.json naming orca mcp serve would start it again,
	// and again.
	cfg.NoMCP = true
	ctx := cmd.Context()
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	a, err := openApp(ctx, cfg, stderr)
	if errors.Is(err, app.ErrNoProvider) && !f.agentTool {
		cfg.Client = noModel
		a, err = openApp(ctx, cfg, stderr)
	}
	if err != nil {
		return err
	}
	warnSandbox(a, stderr)
	// The session's events are kept as observation rows; none is shown.
	l, err := f.agent.openSession(ctx, a, stderr, nil)
	if err != nil {
		return err
	}
	defer l.close(ctx)
	var tools []string
	if cmd.Flags().Changed("tool") {
		tools = f.tools
	}
	srv, err := mcpserve.New(l.LiveSession, mcpserve.Options{Name: "orca", Version: moduleVersion(), Tools: tools, Agent: f.agentTool,
		Logger: tui.Warnings(stderr, warningPrefix)})
	if err != nil {
		return usageErrorf("%v", strings.TrimPrefix(err.Error(), "mcpserve: "))
	}
	served := len(tools)
	if tools == nil {
		served = len(l.Runtime().Tools().Names())
	}
	if f.agentTool {
		served++
	}
	if ln != nil {
		return serveMCPHTTP(ctx, srv, ln, f, token, where, stderr, fmt.Sprintf("%s of %s", tui.Plural(served, "tool"), a.Root()), l.ID())
	}
	fmt.Fprintf(stderr, "orca: serving %s of %s over MCP on stdin and stdout, in session %s\n", tui.Plural(served, "tool"), a.Root(), l.ID())

	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	switch {
	case ctx.Err() != nil:
		return nil // SIGINT, SIGTERM: asked to stop
	case err != nil:
		return &exitError{code: exitTurn, err: fmt.Errorf("serving MCP: %w", err)}
	}
	fmt.Fprintln(stderr, "orca: the MCP client closed the connection")
	return nil
}

// nopWriteCloser is a writer that the transport may close and stays open:
// stdout is the process's, not the connection's.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpListen listens on --listen, refusing an address other machines may
// reach unless --allow-remote says so.
func mcpListen(f *mcpServeFlags) (net.Listener, error) {
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return nil, usageErrorf("--listen %s: want HOST:PORT, such as 127.0.0.1:4748", f.listen)
	}
	if !f.allowRemote && !loopbackHost(host) {
		return nil, usageErrorf("--listen %s is not a loopback address: other machines could reach the server (pass --allow-remote if that is meant)", f.listen)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, usageErrorf("--listen %s: %v", f.listen, err)
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); !f.allowRemote && (err != nil || !ap.Addr().IsLoopback()) {
		ln.Close()
		return nil, usageErrorf("--listen %s listens on %s, not a loopback address (pass --allow-remote if that is meant)", f.listen, ln.Addr())
	}
	return ln, nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// serveMCPHTTP serves srv over streamable HTTP on ln until ctx ends
// (SIGINT, SIGTERM), having said on stderr where, with the token, as a
// client's configuration.
func serveMCPHTTP(ctx context.Context, srv *mcpserve.Server, ln net.Listener, f *mcpServeFlags, token, where string, stderr io.Writer, what, sessionID string) error {
	hosts := f.hosts
	addr := ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if h, _, err := net.SplitHostPort(f.listen); err == nil && h != "" && !addr.IP.IsUnspecified() {
		host = h // the name it was asked for, which requests then carry
		hosts = append(hosts, h)
	} else if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(addr.Port)) + mcpserve.Path
	entry, _ := json.Marshal(struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}{"http", url, map[string]string{"Authorization": "Bearer " + token}})
	fmt.Fprintf(stderr, "orca: serving %s over MCP at %s (streamable HTTP), in session %s\n", what, url, sessionID)
	fmt.Fprintf(stderr, "orca: %s\n", where)
	fmt.Fprintf(stderr, "orca: a client's configuration (the mcpServers entry of Claude Code's .mcp.json, for one):\n  {\"mcpServers\": {\"orca\": %s}}\n", entry)
	fmt.Fprintf(stderr, "orca: or: claude mcp add --transport http orca %s --header \"Authorization: Bearer %s\"\n", url, token)
	if addr.IP.IsUnspecified() {
		fmt.Fprintf(stderr, "orca: listening on every address: requests for a name other than a loopback one need --allow-host NAME\n")
	}
	if err := srv.Serve(ctx, ln, mcpserve.HTTPOptions{Token: token, AllowedHosts: hosts, AllowedOrigins: f.origins}); err != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("serving MCP over HTTP: %w", err)}
	}
	fmt.Fprintln(stderr, "orca: stopped serving MCP")
	return nil
}

// mcpToken is orca mcp serve's bearer token and a line saying where it
// comes from (httpguard.Token).
func mcpToken(o options) (token, where string, err error) {
	if strings.TrimSpace(o.env(mcpTokenEnv)) != "" {
		token, _, err = httpguard.Token(mcpTokenEnv, "", o.env)
		if err != nil {
			return "", "", usageErrorf("%v", err)
		}
		return token, "token: $" + mcpTokenEnv, nil
	}
	dir := o.configDir
	if dir == "" {
		if dir, err = config.Dir(); err != nil {
			return "", "", usageErrorf("no configuration folder to keep the token in (%v): set $%s", err, mcpTokenEnv)
		}
	}
	path := filepath.Join(dir, "orca", "mcp-serve-token")
	token, made, err := httpguard.Token(mcpTokenEnv, path, o.env)
	switch {
	case err != nil:
		return "", "", &exitError{code: exitTurn, err: err}
	case made:
		return token, "token: new, kept in " + path + " (or set $" + mcpTokenEnv + ")", nil
	}
	return token, "token: kept in " + path + " (or set $" + mcpTokenEnv + ")", nil
}
