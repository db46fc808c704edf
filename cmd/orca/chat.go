package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/chat"
	"github.com/orca-agent/orca/session"
)

func newChatCmd(o options) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "chat [flags]",
		Short: "Talk with an agent in the terminal: a session of many turns",
		Long: `Hold a conversation with an agent in a workspace: each line you type is a
turn of one session, kept in the workspace's store (.orca/orca.db) like those
of 'orca run' — a new session by default, the most recently active one with
--continue, or the one --session names. The turns are shown as 'orca run'
shows them, and calls the policy asks about are asked about at the terminal.

` + chat.Help + `

In a terminal (standard input and output both), the input is an editor
under the conversation: Alt+Enter or Ctrl+J for a new line, ↑/↓ for the
workspace's history, a pasted block sent whole; while a turn runs a spinner
says what it does, messages you send are listed as queued, and an approval
is a question only a key pressed once it is shown answers (y, a, n or Esc).

When standard input is not a terminal (a pipe, a file), its lines are read
as a script: one turn after another, each line waiting for the previous turn
to end, and no prompt is shown.

The flags are those of 'orca run' (without --json): the model (--provider,
--model, --base-url, or --script), --verify, the permissions; the --budget-*
flags set the session's stored budget before the first turn. A turn that is
escalated, or fails, does not end the chat.

Exit codes: 0 when the chat ends (/exit, end of input, Ctrl-C); 1 if the
session store cannot be opened; 2 usage errors, as for 'orca run'.

Bare 'orca' at a terminal is 'orca chat' (so 'orca -c' continues the last
session there). ` + claudeFlagsHelp,
		Example: `  orca chat --provider anthropic
  orca chat --provider openai --base-url http://localhost:11434/v1 --model qwen3-coder
  orca chat --script replies.json
  orca chat --script replies.json --continue
  orca chat --script replies.json --session session_0123456789abcdef --budget-cost 2.50
  printf 'Fix the test\n/cost\n' | orca chat --script replies.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChat(cmd, &f, o)
		},
	}
	addAgentFlags(cmd, &f)
	return cmd
}

func runChat(cmd *cobra.Command, f *agentFlags, o options) error {
	cfg, err := f.check(cmd, o)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	opts := chat.Options{
		In:  cmd.InOrStdin(),
		Out: cmd.OutOrStdout(),
		RaiseBudget: func(d budget.Dimension) string {
			return "Raise it with --" + budgetFlag(d) + " when you open the session again."
		},
	}
	root, err := filepath.Abs(f.workspace)
	if err == nil {
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		}
		opts.ResumeCommand = func(id string) string { return resumeCommand(id, root) }
		if dir := o.userConfigDir(); dir != "" {
			opts.HistoryFile = historyPath(dir, root)
		}
	}
	// Asked before the chat's UI takes the terminal.
	if err := askTrust(cmd, o, &cfg); err != nil {
		return err
	}
	c := chat.New(ctx, opts)
	defer c.Close()
	cfg.Approver, cfg.Elicitor = c.Approver(), c.Elicitor()
	notes := cmd.ErrOrStderr()
	if w := c.Notes(); w != nil {
		notes = w
	}
	a, err := openApp(ctx, cfg, notes)
	if err != nil {
		return err
	}
	warnSandbox(a, notes)
	l, err := f.openSession(ctx, a, notes, c.OnEvent)
	if err != nil {
		return err
	}
	// A chat ends when the user leaves its prompt (Run ends the session it
	// is in then).
	l.endReason = session.EndPromptInputExit
	defer l.close(ctx)
	restore := o.interrupts.handle(c.Signal)
	defer restore()
	if err := c.Run(ctx, l.app, l.LiveSession); err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	return nil
}

// resumeCommand is the command line that opens session id of the
// workspace root again: -w only when root is not the current folder.
func resumeCommand(id, root string) string { return sessionCommand("chat", id, root) }

// sessionCommand is the command line of orca's command (chat, run) that
// goes on in session id of the workspace root: -w only when root is not
// the current folder.
func sessionCommand(command, id, root string) string {
	s := "orca " + command + " --session " + shellQuote(id)
	if wd, err := os.Getwd(); err == nil {
		if wd, err = filepath.EvalSymlinks(wd); err == nil && wd == root {
			return s
		}
	}
	return s + " -w " + shellQuote(root)
}

// historyPath is where the inputs typed in workspace root are kept: in
// orca's configuration folder, one file per workspace.
func historyPath(configDir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(configDir, "orca", "history", hex.EncodeToString(sum[:8])+".jsonl")
}

// budgetFlag is the flag that sets a budget dimension.
func budgetFlag(d budget.Dimension) string {
	switch d {
	case budget.Cost:
		return "budget-cost"
	case budget.ToolCalls:
		return "budget-tool-calls"
	case budget.WallTime:
		return "budget-time"
	}
	return "budget-tokens"
}
