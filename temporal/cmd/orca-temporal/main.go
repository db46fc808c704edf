// Command orca-temporal runs orca sessions on Temporal: workers that run
// turns, and a client that asks for them (see package temporal). orca
// worker and orca run --engine temporal run it.
//
//	orca-temporal worker -w DIR [--provider NAME …]     run a worker until interrupted
//	orca-temporal run --session ID PROMPT               run a turn and wait for it
//	orca-temporal approve|deny --session ID PARK        decide a parked call, wait for the turn
//	orca-temporal interrupt --session ID                interrupt the running turn
//
// Every command reaches Temporal at --address (TEMPORAL_ADDRESS, else
// 127.0.0.1:7233), in --namespace (TEMPORAL_NAMESPACE, else default), on
// --task-queue (orca).
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/temporal"
	"github.com/orca-agent/orca/tool"
)

// Exit codes, as orca's: the turn answered; it did not (or something
// broke); the command could not start; the turn waits for a decision.
const (
	exitOK     = 0
	exitTurn   = 1
	exitUsage  = 2
	exitParked = 3
)

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "orca-temporal:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// conn are the flags that reach Temporal.
type conn struct {
	address, namespace, queue string
}

func (c *conn) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.address, "address", cmp.Or(os.Getenv("TEMPORAL_ADDRESS"), "127.0.0.1:7233"), "Temporal's frontend `HOST:PORT`")
	cmd.Flags().StringVar(&c.namespace, "namespace", cmp.Or(os.Getenv("TEMPORAL_NAMESPACE"), "default"), "Temporal `NAMESPACE`")
	cmd.Flags().StringVar(&c.queue, "task-queue", temporal.DefaultTaskQueue, "the workers' task `QUEUE`")
}

func (c *conn) dial(ctx context.Context, logger *slog.Logger) (client.Client, error) {
	cl, err := client.DialContext(ctx, client.Options{HostPort: c.address, Namespace: c.namespace, Logger: log.NewStructuredLogger(logger)})
	if err != nil {
		return nil, &exitError{code: exitTurn, err: fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w", c.address, c.namespace, err)}
	}
	return cl, nil
}

func quiet(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "orca-temporal",
		Short:         "Run orca sessions on Temporal: workers, and turns that survive them",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newWorker(), newRun(), newDecide(true), newDecide(false), newInterrupt(), newSchedule())
	return root
}

func newWorker() *cobra.Command {
	var c conn
	var ws, provider, model, baseURL, scriptFile, mode, name, dsn string
	var trust, noSandbox bool
	var leaseWait, stopTimeout time.Duration
	var maxIterations int
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Run a worker: the turns of the task queue's sessions, in workspace DIR",
		Long: `Run a worker until interrupted (SIGINT, SIGTERM: it takes no new turn;
the turns it runs may end within --stop-timeout, then they stop at their
next safe point and another worker goes on with them). Every worker
of a task queue must serve the same agent in the same workspace, over the
same session store: a PostgreSQL database (--store, ORCA_STORE_DSN, the
user's settings "store") for workers on several machines, the workspace's
SQLite file for workers of one machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := quiet(cmd.ErrOrStderr())
			cfg := app.Config{Workspace: ws, Name: name, Trust: trust, NoSandbox: noSandbox, SystemPrompt: app.DefaultSystemPrompt,
				Model:         app.ModelConfig{Provider: provider, Model: model, BaseURL: baseURL, Script: scriptFile},
				StoreDSN:      dsn,
				Labels:        app.Labels{Provider: "--provider NAME", Script: "--script FILE", BaseURL: "--base-url URL"},
				MaxIterations: maxIterations, Logger: logger, Telemetry: true}
			if mode != "" {
				m, err := policy.ParseMode(mode)
				if err != nil {
					return fmt.Errorf("--permission-mode: %w", err)
				}
				cfg.Mode = m
			}
			// No one sits at a worker: a call the policy asks about is
			// parked for a decision (orca-temporal approve, orca approve).
			cfg.Approver = policy.Parking{}
			a, err := app.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			cl, err := c.dial(cmd.Context(), logger)
			if err != nil {
				return err
			}
			defer cl.Close()
			// The shared task queue, and this worker's own: the later steps
			// of a turn come there, to the session it keeps open.
			acts := &temporal.Activities{App: a, LeaseWait: leaseWait, Queue: c.queue + "/worker/" + rand.Text(),
				// The fires of the task queue's Temporal Schedules ask for
				// their turns through it.
				Turns: &temporal.Client{Temporal: cl, TaskQueue: c.queue, Store: a.Store()}}
			defer acts.Close()
			w := worker.New(cl, c.queue, worker.Options{WorkerStopTimeout: stopTimeout})
			temporal.Register(w, acts)
			own := worker.New(cl, acts.Queue, worker.Options{WorkerStopTimeout: stopTimeout})
			temporal.RegisterOwn(own, acts)
			if err := w.Start(); err != nil {
				return &exitError{code: exitTurn, err: fmt.Errorf("starting the worker: %w", err)}
			}
			if err := own.Start(); err != nil {
				w.Stop()
				return &exitError{code: exitTurn, err: fmt.Errorf("starting the worker of %s: %w", acts.Queue, err)}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "orca-temporal: worker of %s on task queue %s at %s (pid %d)\n", a.Root(), c.queue, c.address, os.Getpid())
			<-cmd.Context().Done()
			var stopping sync.WaitGroup
			stopping.Go(w.Stop)
			stopping.Go(own.Stop)
			stopping.Wait()
			return nil
		},
	}
	c.flags(cmd)
	f := cmd.Flags()
	f.StringVarP(&ws, "workspace", "w", ".", "workspace `DIR`")
	f.StringVar(&provider, "provider", "", "model provider `NAME` (anthropic, openai, script)")
	f.StringVar(&model, "model", "", "model `NAME`")
	f.StringVar(&baseURL, "base-url", "", "the provider's API `URL`")
	f.StringVar(&scriptFile, "script", "", "answer from the scripted model's `FILE` (each worker replays it from its start: for trying things, not for crashes)")
	f.StringVar(&dsn, "store", "", "the PostgreSQL `DSN` of the session store (ORCA_STORE_DSN, the user's settings \"store\"; else the workspace's SQLite file)")
	f.StringVar(&mode, "permission-mode", "", "permission `MODE` (default, acceptEdits, plan, bypassPermissions)")
	f.StringVar(&name, "agent", "", "the agent's `NAME` (orca's by default: the sessions orca run started)")
	f.BoolVar(&trust, "trust", false, "trust the workspace for this worker")
	f.BoolVar(&noSandbox, "no-sandbox", false, "run commands without the OS sandbox")
	f.IntVar(&maxIterations, "max-iterations", 0, "cap a turn's model calls at `N` (50)")
	f.DurationVar(&stopTimeout, "stop-timeout", 30*time.Second, "on SIGINT or SIGTERM, how long the turns running may go on before they move to another worker")
	f.DurationVar(&leaseWait, "lease-wait", time.Minute, "how long a turn waits for a session another process holds")
	return cmd
}

// turnFlags are what run, approve and deny share.
type turnFlags struct {
	conn
	session   string
	asJSON    bool
	heartbeat time.Duration
}

func (t *turnFlags) flags(cmd *cobra.Command) {
	t.conn.flags(cmd)
	cmd.Flags().StringVar(&t.session, "session", "", "the session `ID`")
	cmd.Flags().BoolVar(&t.asJSON, "json", false, "print the turn's result as JSON")
	cmd.Flags().DurationVar(&t.heartbeat, "heartbeat", 0, "how long a worker may go silent before its turn moves to another; an interrupt reaches it within 0.8× that (10s)")
}

func (t *turnFlags) client(ctx context.Context, stderr io.Writer) (*temporal.Client, func(), error) {
	cl, err := t.dial(ctx, quiet(stderr))
	if err != nil {
		return nil, nil, err
	}
	c := &temporal.Client{Temporal: cl, TaskQueue: t.queue, Options: temporal.Options{Heartbeat: t.heartbeat}}
	if n, err := c.Workers(ctx); err == nil && n == 0 {
		fmt.Fprintf(stderr, "orca-temporal: no worker has polled task queue %s at %s lately: the turn waits until one starts (orca worker -w DIR --task-queue %s)\n", t.queue, t.address, t.queue)
	}
	return c, cl.Close, nil
}

// report prints res and says how it ended.
func (t *turnFlags) report(cmd *cobra.Command, res temporal.TurnResult) error {
	out := cmd.OutOrStdout()
	if t.asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintf(out, "%s\n", b)
	} else if res.Answer != "" {
		fmt.Fprintln(out, res.Answer)
	}
	switch {
	case res.StopReason == "answered":
		return nil
	case res.Parked != nil:
		p := res.Parked
		return &exitError{code: exitParked, err: fmt.Errorf("turn %s waits for a decision on %s (%s: %s): orca-temporal approve --session %s %s (or deny)", res.TurnID, p.ID, p.ToolName, p.Reason, res.SessionID, p.ID)}
	default:
		return &exitError{code: exitTurn, err: fmt.Errorf("turn %s ended %s: %s", res.TurnID, res.StopReason, cmp.Or(res.Error, res.Reason))}
	}
}

func newRun() *cobra.Command {
	var t turnFlags
	var turnID, schemaFile string
	cmd := &cobra.Command{
		Use:   "run --session ID [flags] PROMPT",
		Short: "Run a turn of session ID on the workers and wait for it (\"-\": the prompt from stdin)",
		Long: `Run a turn of session ID on the task queue's workers and wait for it.
Asking again with the same --turn-id gets the same turn, never a second
one: a client that lost its connection asks again. The same --turn-id with
another prompt is refused (exit 2).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if t.session == "" {
				return errors.New("--session: name the session (a new id starts one)")
			}
			prompt := strings.Join(args, " ")
			if prompt == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("reading the prompt from stdin: %w", err)
				}
				prompt = string(b)
			}
			req := temporal.TurnRequest{TurnID: cmp.Or(turnID, session.NewTurnID()), Input: prompt}
			if schemaFile != "" {
				raw, err := readSchema(schemaFile)
				if err != nil {
					return fmt.Errorf("--output-schema %s: %w", schemaFile, err)
				}
				req.OutputSchema = raw
			}
			if err := req.Check(); err != nil {
				return err
			}
			c, done, err := t.client(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			res, err := c.Turn(cmd.Context(), t.session, req)
			switch {
			case errors.Is(err, temporal.ErrAskedOtherwise):
				return &exitError{code: exitUsage, err: err}
			case err != nil:
				return &exitError{code: exitTurn, err: err}
			}
			return t.report(cmd, res)
		},
	}
	t.flags(cmd)
	cmd.Flags().StringVar(&turnID, "turn-id", "", "the turn's `ID` (made up if empty)")
	cmd.Flags().StringVar(&schemaFile, "output-schema", "", "ask for the answer as a JSON value of the JSON Schema (of an object) in `FILE`")
	return cmd
}

// readSchema reads a turn's output schema: a JSON Schema small enough to
// travel with the turn, checked before it does.
func readSchema(path string) (json.RawMessage, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) > temporal.MaxInput {
		return nil, fmt.Errorf("%d bytes: a durable turn's schema takes at most %d", len(raw), temporal.MaxInput)
	}
	if _, err := tool.CompileSchema("answer", raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func newDecide(approve bool) *cobra.Command {
	var t turnFlags
	var note string
	name := map[bool]string{true: "approve", false: "deny"}[approve]
	cmd := &cobra.Command{
		Use:   name + " --session ID [flags] PARK",
		Short: fmt.Sprintf("%s the call PARK a turn of session ID parked, and wait for the turn", map[bool]string{true: "Approve", false: "Deny"}[approve]),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if t.session == "" {
				return errors.New("--session: name the session whose turn parked the call")
			}
			by := "the user"
			if u, err := user.Current(); err == nil {
				by = u.Username
			}
			c, done, err := t.client(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			res, err := c.Decide(cmd.Context(), t.session, temporal.Decision{ParkID: args[0], Approve: approve, By: by, Note: note})
			if err != nil {
				return &exitError{code: exitTurn, err: err}
			}
			return t.report(cmd, res)
		},
	}
	t.flags(cmd)
	cmd.Flags().StringVar(&note, "note", "", "a note for the model (with deny: why)")
	return cmd
}

func newInterrupt() *cobra.Command {
	var c conn
	var sessionID, turnID string
	cmd := &cobra.Command{
		Use:   "interrupt --session ID [--turn-id TURN]",
		Short: "Interrupt the running turn of session ID",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sessionID == "" {
				return errors.New("--session: name the session")
			}
			cl, err := c.dial(cmd.Context(), quiet(cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			defer cl.Close()
			tc := &temporal.Client{Temporal: cl, TaskQueue: c.queue}
			if err := tc.Interrupt(cmd.Context(), sessionID, turnID); err != nil {
				return &exitError{code: exitTurn, err: err}
			}
			return nil
		},
	}
	c.flags(cmd)
	cmd.Flags().StringVar(&sessionID, "session", "", "the session `ID`")
	cmd.Flags().StringVar(&turnID, "turn-id", "", "the turn `ID` (\"\": whichever runs)")
	return cmd
}
