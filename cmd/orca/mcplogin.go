package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/tui"
)

func mcpLoginCommand(o options) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "login [flags] NAME",
		Short: "Sign in to a remote MCP server that asks for authorization (OAuth), and keep the sign-in",
		Long: `Sign in to the MCP server NAME (an http server of the settings or
.mcp.json) as the MCP authorization spec has it: orca finds the server's
authorization server, registers itself there (or uses the server's
"oauth": {"clientId": …}), and opens its sign-in page in your browser
($BROWSER, else the desktop's); the page sends you back to orca on
loopback. Where the browser is on another machine (SSH), open the address
orca prints there, and paste here the address it then fails to load.

The sign-in (its tokens, refreshed as they expire) is kept in your
configuration folder (orca/mcp-auth, readable by you alone, hidden from
the commands the agent runs), never in the workspace; runs use it from
then on. 'orca mcp logout NAME' forgets it.`,
		Example: `  orca mcp login linear
  BROWSER=firefox orca mcp login -w ./project sentry`,
		Args: oneArg("the name of an MCP server", "'orca mcp list' lists them"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCPLogin(cmd, &f, o, args[0])
		},
	}
	addAgentFlags(cmd, &f)
	return cmd
}

func runMCPLogin(cmd *cobra.Command, f *agentFlags, o options, name string) error {
	cfg, err := f.check(cmd, o)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	cfg.MCPLogin = &app.MCPLogin{Server: name, Login: signInPage(cmd, name)}
	a, err := openForMCP(cmd.Context(), cfg, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	st, err := serverNamed(a, name)
	if err != nil {
		return err
	}
	switch {
	case st.State == mcp.StateUp && !(mcp.FileTokens{Dir: app.MCPAuthDir(o.userConfigDir())}).Kept(name):
		fmt.Fprintf(cmd.OutOrStdout(), "%s asks for no sign-in: it is up, with %s.\n", name, tui.Plural(len(st.Tools), "tool"))
		return nil
	case st.State == mcp.StateUp:
		fmt.Fprintf(cmd.OutOrStdout(), "Signed in to %s: %s.\n", name, tui.Plural(len(st.Tools), "tool"))
		return nil
	case st.State == mcp.StateNeedsLogin:
		return &exitError{code: exitTurn, err: fmt.Errorf("MCP server %s: not signed in: %s", name, st.Error)}
	}
	return &exitError{code: exitTurn, err: fmt.Errorf("MCP server %s: %s: %s", name, st.State, st.Error)}
}

// signInPage is how orca mcp login shows the person the sign-in page: the
// address on stderr, the browser opened; at a terminal, a pasted address
// is read too.
func signInPage(cmd *cobra.Command, name string) mcp.Login {
	stderr := cmd.ErrOrStderr()
	login := mcp.Login{Open: func(ctx context.Context, u string) error {
		fmt.Fprintf(stderr, "To sign in to %s, open:\n\n  %s\n\n", name, u)
		if err := app.OpenBrowser(ctx, u); err != nil && !errors.Is(err, app.ErrNoBrowser) {
			fmt.Fprintf(stderr, "(the browser did not open: %v)\n", err)
		}
		fmt.Fprintln(stderr, "Waiting for the sign-in… (where the browser is on another machine, paste here the address it was sent to)")
		return nil
	}}
	if in := cmd.InOrStdin(); tui.IsTerminal(in) {
		login.Input = in
	}
	return login
}

// openForMCP opens the workspace's App for a command about its MCP
// servers, without a model when none is chosen (they need none); a
// server that does not start is the command's to report, not a warning
// too.
func openForMCP(ctx context.Context, cfg app.Config, stderr io.Writer) (*app.App, error) {
	cfg.Logger = tui.Warnings(stderr, warningPrefix, mcp.NotStarted)
	a, err := openApp(ctx, cfg, stderr)
	if errors.Is(err, app.ErrNoProvider) {
		cfg.Client = noModel
		a, err = openApp(ctx, cfg, stderr)
	}
	return a, err
}

// serverNamed is the status of a's MCP server name, or a usage error
// naming those it has.
func serverNamed(a *app.App, name string) (mcp.Status, error) {
	var names []string
	for _, s := range a.MCPServers() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return mcp.Status{}, usageErrorf("no MCP server %q: %s starts none ('orca mcp add' adds one)", name, a.Root())
	}
	slices.Sort(names)
	return mcp.Status{}, usageErrorf("no MCP server %q in %s (it has %s)", name, a.Root(), strings.Join(names, ", "))
}

func mcpLogoutCommand(o options) *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget the sign-in to an MCP server (orca mcp login's)",
		Args:  oneArg("the name of an MCP server", "one you signed in to with orca mcp login"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := app.MCPAuthDir(o.userConfigDir())
			if dir == "" {
				return usageErrorf("no configuration folder: no sign-in is kept")
			}
			n, err := mcp.FileTokens{Dir: dir}.Forget(args[0])
			if err != nil {
				return &exitError{code: exitTurn, err: err}
			}
			if n == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "No sign-in to %s was kept.\n", args[0])
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Forgot the sign-in to %s.\n", args[0])
			return nil
		},
	}
}

// mcpCallFlags are the flags of orca mcp call.
type mcpCallFlags struct {
	agent agentFlags
	login bool
	json  bool
}

func mcpCallCommand(o options) *cobra.Command {
	var f mcpCallFlags
	cmd := &cobra.Command{
		Use:   "call [flags] NAME TOOL [INPUT]",
		Short: "Call one tool of an MCP server, as the agent would (policy, hooks and all), and print its result",
		Long: `Call the tool TOOL of the MCP server NAME with INPUT (a JSON object; {}
if left out) in a new session of the workspace, through the pipeline the
agent's calls go through: the permission rules (a call they would ask
about is refused: allow it with --allow mcp__NAME__TOOL), the hooks, the
middleware; the call is kept as the session's. The result's text goes to
standard output (--json: the result as JSON); exit status 1 if the tool
failed. With --login, a server that asks for authorization signs you in
first (as orca mcp login).`,
		Example: `  orca mcp call --allow mcp__docs docs search '{"query": "streams"}'
  orca mcp call --login --allow mcp__linear linear list_issues`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || len(args) > 3 {
				return usageErrorf("%s takes NAME TOOL [INPUT], not %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCPCall(cmd, &f, o, args)
		},
	}
	addAgentFlags(cmd, &f.agent)
	cmd.Flags().BoolVar(&f.login, "login", false, "sign in first if the server asks for authorization")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON")
	return cmd
}

func runMCPCall(cmd *cobra.Command, f *mcpCallFlags, o options, args []string) error {
	input := json.RawMessage(`{}`)
	if len(args) == 3 {
		if !json.Valid([]byte(args[2])) || !strings.HasPrefix(strings.TrimSpace(args[2]), "{") {
			return usageErrorf("INPUT %q is not a JSON object", args[2])
		}
		input = json.RawMessage(args[2])
	}
	cfg, err := f.agent.check(cmd, o)
	if err != nil {
		return err
	}
	ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.login {
		cfg.MCPLogin = &app.MCPLogin{Server: args[0], Login: signInPage(cmd, args[0])}
	}
	a, err := openForMCP(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	st, err := serverNamed(a, args[0])
	if err != nil {
		a.Close()
		return err
	}
	if st.State != mcp.StateUp {
		a.Close()
		return &exitError{code: exitTurn, err: fmt.Errorf("MCP server %s is %s: %s", args[0], st.State, st.Error)}
	}
	l, err := f.agent.openSession(ctx, a, stderr, nil)
	if err != nil {
		return err
	}
	defer l.close(ctx)
	res, err := l.CallTool(ctx, mcp.ToolName(args[0], args[1]), input)
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	if f.json {
		if err := writeJSON(stdout, struct {
			Content string `json:"content"`
			IsError bool   `json:"is_error"`
		}{res.Content, res.IsError}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, strings.TrimRight(res.Content, "\n"))
	}
	if res.IsError {
		return &exitError{code: exitTurn, quiet: f.json, err: fmt.Errorf("%s failed", mcp.ToolName(args[0], args[1]))}
	}
	return nil
}
