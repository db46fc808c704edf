package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/policy"
)

// agentName is the name of the agent the CLI runs (the Component of its
// model calls).
const agentName = "orca"

// defaultSystemPrompt is the system prompt of `orca run` and `orca chat`
// without --system.
const defaultSystemPrompt = `You are orca, a coding agent working in the user's workspace folder.
Use the tools to look before you change anything, make the smallest change that
does the job, check it (run the tests when there are any), and finish with a short
answer that says what you did.`

// turnConfig is what the demo's turn needs. (run and chat run turns of a
// stored session instead: see plan.open.)
type turnConfig struct {
	client        llm.Client
	workspace     string
	system        string
	maxIterations int
	sessionID     string
	prompt        string
	json          bool
	// policy decides which tool calls run (nil: all of them).
	policy *policy.Policy
	// services are the hook and middleware registries, bus and queues the
	// runtime uses; nil: none. The caller closes them.
	services *agent.Services
	// interactive: the person at the terminal (stdin) answers the calls
	// the policy asks about; otherwise policy.Headless refuses them, with
	// an observation that says which flag would allow them.
	interactive bool
	stdin       io.Reader
	// configDir is the user's configuration folder the tools read (user
	// skills); "" means none.
	configDir string
}

// runTurn builds a runtime with the default tools over the workspace, runs
// one turn on it and renders the turn's event stream on stdout as it comes.
// It returns nil if the turn answered, an *exitError otherwise.
func runTurn(ctx context.Context, stdout, stderr io.Writer, c turnConfig) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gate := newApprovalGate()
	var approver policy.Approver = policy.Headless{}
	if c.interactive {
		// The question goes where the turn is shown; with --json, stdout
		// carries only events, so it goes to stderr.
		out := stdout
		if c.json {
			out = stderr
		}
		approver = newPromptApprover(c.stdin, out, gate.wait)
	}
	rt, err := agent.New(agent.Definition{
		Name:          agentName,
		SystemPrompt:  c.system,
		MaxIterations: c.maxIterations,
	}, agent.Collaborators{
		Client:    c.client,
		Workspace: c.workspace,
		Logger:    logger,
		Services:  c.services,
		Policy:    c.policy,
		Approver:  approver,
		ConfigDir: cmp.Or(c.configDir, "-"),
	})
	if err != nil {
		return &exitError{code: exitTurn, err: err}
	}
	defer rt.Close()

	var r renderer
	if c.json {
		r = newJSONRenderer(stdout)
	} else {
		r = newTextRenderer(ctx, stdout, textOptionsFor(stdout))
	}
	// The turn runs on the stream's goroutine; this one renders its events
	// as they come, until the last.
	s := agent.Start(ctx, agent.NewExecutor(), rt, agent.Request{
		SessionID: c.sessionID,
		Input:     c.prompt,
	})
	show := gated(r.render, gate)
	for ev := range s.Events() {
		show(ev)
	}
	r.close()
	res, err := s.Result()
	if res == nil {
		return &exitError{code: exitTurn, err: err}
	}
	if werr := r.err(); werr != nil {
		return &exitError{code: exitTurn, err: fmt.Errorf("writing the events: %w", werr)}
	}
	if res.StopReason == agent.StopAnswered {
		return nil
	}
	msg := fmt.Sprintf("the turn ended with %s after %s", res.StopReason, plural(res.Iterations, "iteration"))
	if res.Err != nil {
		msg += ": " + res.Err.Error()
	}
	// In text mode the summary on stdout already says how the turn ended.
	return &exitError{code: exitTurn, err: errors.New(msg), quiet: !c.json}
}

// renderer shows a turn's events. Its methods are called from one
// goroutine, the one that ranges over the turn's stream.
type renderer interface {
	// render shows one event of the stream.
	render(ev event.Event)
	// close ends the rendering, after the last event (or when the stream
	// ended early): nothing is drawn after it.
	close()
	// err returns the first write error, if any; call it after close.
	err() error
}
