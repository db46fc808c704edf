package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/serve"
)

type serveFlags struct {
	agent   agentFlags
	addr    string
	origins []string
	hosts   []string
	streams int
}

func newServeCmd(o options) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the workspace's agent over HTTP: sessions, messages, resumable event streams, approvals",
		Long: `Serve the agent of a workspace as a JSON HTTP API (GET /v1/openapi.json
describes it): create, list, read and delete sessions; post a message, which
starts a turn and answers with its id; follow a session's or a turn's events
as Server-Sent Events, resumable with Last-Event-ID (the store's observation
rows are the log); interrupt a turn; list the calls parked for approval and
approve or deny them; compact; read totals, set budgets.

It listens on 127.0.0.1:4747 by default (--addr), answers requests for
loopback host names only (--allow-host adds one), refuses pages of other
origins (--allow-origin adds one), and needs a bearer token on every request:
$` + serve.TokenEnv + `, else the token kept in orca's configuration folder
(orca/serve-token), made and printed on the first start. A call the policy
asks about parks its turn until someone decides it (POST /v1/approvals/ID,
or 'orca approve', which the server sees within a second), and then the
turn goes on. A question an MCP server asks during a call waits for a client
that follows the session's events to answer it (GET /v1/elicitations, POST
/v1/elicitations/ID; the page shows its form) for up to 5 minutes, and is
declined at once when no client follows them, unless an Elicitation hook
answers it. It fires the workspace's scheduled runs ('orca schedule'): each
fire claimed once in the store, however many servers share it.

The model, the workspace and the permissions are chosen as for 'orca run'.
Ctrl-C (or SIGTERM) stops it: running turns are cancelled, streams closed.`,
		Example: `  orca serve --script demo.json
  orca serve --provider anthropic -w ./project --permission-mode accept-edits
  curl -H "Authorization: Bearer $ORCA_SERVE_TOKEN" http://127.0.0.1:4747/v1/sessions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, &f, o) },
	}
	addAgentFlags(cmd, &f.agent)
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:4747", "`HOST:PORT` to listen on (port 0: any free one, printed)")
	fl.StringArrayVar(&f.origins, "allow-origin", nil, "let pages of `ORIGIN` (scheme://host[:port]) call the API; repeatable")
	fl.StringArrayVar(&f.hosts, "allow-host", nil, "answer requests for `HOST` too (a name the server is reached by, besides loopback ones); repeatable")
	fl.IntVar(&f.streams, "max-streams", serve.DefaultMaxStreams, "keep at most `N` event streams open at once (503 past that)")
	return cmd
}

func runServe(cmd *cobra.Command, f *serveFlags, o options) error {
	for _, name := range []string{"session", "continue", "fork-session", "budget-tokens", "budget-cost", "budget-tool-calls", "budget-time"} {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s does not apply to orca serve: sessions and budgets are the API's (POST /v1/sessions, PUT /v1/sessions/ID/budget)", name)
		}
	}
	if f.streams < 1 {
		return usageErrorf("--max-streams %d: want at least 1", f.streams)
	}
	cfg, err := f.agent.check(cmd, o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return usageErrorf("--addr %s: %v", f.addr, err)
	}
	defer ln.Close()
	stderr := cmd.ErrOrStderr()
	token, where, err := serve.Token(o.configDir, o.env)
	if errors.Is(err, serve.ErrShortToken) {
		return usageErrorf("%v", err)
	} else if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	cfg.Approver = policy.Parking{}
	// An MCP server's question waits for the page (or any client of the
	// API) to answer it.
	questions := serve.NewElicitations()
	cfg.Elicitor = questions
	ctx := cmd.Context()
	a, err := openApp(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	warnSandbox(a, stderr)
	srv, err := serve.New(a, serve.Options{Token: token, MaxStreams: f.streams, AllowedOrigins: f.origins, AllowedHosts: f.hosts, TokenHint: serve.TokenHint(o.configDir, o.env), Elicitations: questions})
	if err != nil {
		return usageErrorf("%v", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(cmd.OutOrStdout(), "orca serve: %s on http://%s (workspace %s)\nthe page: http://%s/ (sign in with the token)\nA2A: the agent card at http://%s%s (tasks at %s, with the token)\nAG-UI: runs at http://%s%s (with the token)\n%s\n",
		a.Runtime().Definition().Name, ln.Addr(), a.Root(), ln.Addr(), ln.Addr(), serve.A2ACardPath, serve.A2APath, ln.Addr(), serve.AGUIPath, where)
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Close() // turns cancelled, streams told to end
	if serr := hs.Shutdown(shut); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	return nil
}
