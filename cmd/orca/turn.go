package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
)

// agentName is the name of the agent the CLI runs (the Component of its
// model calls).
const agentName = "orca"

// defaultSystemPrompt is the system prompt of `orca run` without --system.
const defaultSystemPrompt = `You are orca, a coding agent working in the user's workspace folder.
Use the tools to look before you change anything, make the smallest change that
does the job, check it (run the tests when there are any), and finish with a short
answer that says what you did.`

// turnConfig is what one CLI turn needs; run and demo fill it in from
// their flags.
type turnConfig struct {
	client        llm.Client
	workspace     string
	system        string
	maxIterations int
	sessionID     string
	prompt        string
	json          bool
}

// runTurn builds a runtime with the default tools over the workspace, runs
// one turn on it and renders the turn's event stream on stdout as it comes.
// It returns nil if the turn answered, an *exitError otherwise.
func runTurn(ctx context.Context, stdout, stderr io.Writer, c turnConfig) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := agent.New(agent.Definition{
		Name:          agentName,
		SystemPrompt:  c.system,
		MaxIterations: c.maxIterations,
	}, agent.Collaborators{
		Client:    c.client,
		Workspace: c.workspace,
		Logger:    logger,
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
	s := agent.NewExecutor().Stream(ctx, rt, agent.Request{
		SessionID: c.sessionID,
		Input:     c.prompt,
	})
	for ev := range s.Events() {
		r.render(ev)
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

// newSessionID returns a fresh session id.
func newSessionID() string {
	var b [8]byte
	rand.Read(b[:])
	return "session_" + hex.EncodeToString(b[:])
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
