package temporal

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
)

// Application error types the activities raise and the workflow knows.
const (
	// ErrTypeRefused: the turn cannot run, and asking again will not help
	// (a session of another runtime, a call that waits for a decision, an
	// input the runtime refuses).
	ErrTypeRefused = "OrcaRefused"
)

// ParkInput asks ParkActivity for a session's parked call: with Decide, it
// decides the call first.
type ParkInput struct {
	SessionID string    `json:"session_id"`
	ParkID    string    `json:"park_id"`
	Decide    *Decision `json:"decide,omitempty"`
}

// ParkState is a parked call's status in the store (store.ParkStatus).
type ParkState struct {
	Status    string `json:"status"`
	DecidedBy string `json:"decided_by,omitempty"`
}

// wf is a session workflow's state. Turns (and the continuation of a
// parked one) run one at a time, in the order they came: each takes a
// ticket (next) and runs when serving reaches it.
type wf struct {
	id            string
	opts          Options
	parked        *Parked
	next, serving int
	queued        int
	running       string
	cancel        workflow.CancelFunc
	// interrupted: the running turn was interrupted (its next step ends
	// it).
	interrupted bool
	// handedOff: a step sent to the workflow's task queue for the worker
	// that keeps the session (StepInput.Keeper) reached another worker;
	// the later steps of this run go to the keeper's own queue.
	handedOff bool
	turns     int
}

// SessionWorkflow is a session's workflow (see the package doc).
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	if in.SessionID == "" {
		return sdktemporal.NewNonRetryableApplicationError("the session workflow needs a session id", ErrTypeRefused, nil)
	}
	w := &wf{id: in.SessionID, opts: in.Options.withDefaults(), parked: in.Parked}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, TurnUpdate, w.turn, workflow.UpdateHandlerOptions{Validator: w.validTurn}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, DecideUpdate, w.decide, workflow.UpdateHandlerOptions{Validator: w.validDecision}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, StateQuery, func() (State, error) {
		return State{SessionID: w.id, Running: w.running, Queued: w.queued, Parked: w.parked, Turns: w.turns}, nil
	}); err != nil {
		return err
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, InterruptSignal)
		for {
			var turnID string
			if !ch.Receive(ctx, &turnID) {
				return
			}
			if w.cancel != nil && (turnID == "" || turnID == w.running) {
				w.interrupted = true
				w.cancel()
			}
		}
	})
	logger := workflow.GetLogger(ctx)
	for {
		if w.dueForNewRun(ctx) {
			return workflow.NewContinueAsNewError(ctx, WorkflowName, SessionInput{SessionID: w.id, Options: in.Options, Parked: w.parked})
		}
		if w.parked != nil {
			// A decision may come as an update, or be taken in the store
			// (orca approve, orca serve): look there now and then.
			decided, err := workflow.AwaitWithTimeout(ctx, w.opts.PollParked, func() bool { return w.parked == nil })
			if err != nil {
				return err
			}
			if decided || w.next != w.serving {
				continue
			}
			p := w.parked
			var st ParkState
			if err := workflow.ExecuteActivity(w.parkOptions(ctx), ParkActivity, ParkInput{SessionID: w.id, ParkID: p.ID}).Get(ctx, &st); err != nil {
				logger.Warn("could not read the parked call", "park", p.ID, "error", err)
				continue
			}
			if st.Status == "pending" || w.parked != p || w.next != w.serving {
				continue
			}
			w.take() // nothing waits for a ticket (next == serving): this one is served at once
			w.parked = nil
			res, err := w.run(ctx, TurnRequest{TurnID: p.TurnID, Input: p.Input, OutputSchema: p.OutputSchema, Attachments: p.Attachments})
			w.done()
			if err != nil {
				logger.Warn("the turn of a call decided in the store failed", "turn", p.TurnID, "error", err)
			} else {
				logger.Info("went on with a turn decided in the store", "turn", p.TurnID, "stop_reason", res.StopReason)
			}
			continue
		}
		busy, err := workflow.AwaitWithTimeout(ctx, w.opts.Idle, func() bool { return w.next != w.serving || w.parked != nil })
		if err != nil {
			return err
		}
		if busy {
			if err := workflow.Await(ctx, func() bool { return w.next == w.serving }); err != nil {
				return err
			}
			continue
		}
		if w.parked == nil && w.next == w.serving && workflow.AllHandlersFinished(ctx) {
			return nil // idle: the next turn starts the workflow again
		}
	}
}

// dueForNewRun reports whether the workflow should continue as new now:
// nothing runs or waits to, and its history is long enough.
func (w *wf) dueForNewRun(ctx workflow.Context) bool {
	if w.next != w.serving || !workflow.AllHandlersFinished(ctx) {
		return false
	}
	info := workflow.GetInfo(ctx)
	return w.turns >= w.opts.TurnsPerRun || info.GetCurrentHistoryLength() >= w.opts.MaxHistory || info.GetContinueAsNewSuggested()
}

func (w *wf) take() int {
	t := w.next
	w.next++
	return t
}

// done lets the next ticket go.
func (w *wf) done() { w.serving++ }

// wait waits for ticket's go.
func (w *wf) wait(ctx workflow.Context, ticket int) error {
	return workflow.Await(ctx, func() bool { return w.serving == ticket })
}

func (w *wf) validTurn(_ workflow.Context, req TurnRequest) error {
	if err := req.Check(); err != nil {
		return err
	}
	if p := w.parked; p != nil {
		return fmt.Errorf("session %s waits for a decision on %s (%s, parked by turn %s): decide it first", w.id, p.ID, p.ToolName, p.TurnID)
	}
	return nil
}

func (w *wf) turn(ctx workflow.Context, req TurnRequest) (TurnResult, error) {
	ticket := w.take()
	defer w.done()
	w.queued++
	err := w.wait(ctx, ticket)
	w.queued--
	if err != nil {
		return TurnResult{}, err
	}
	if p := w.parked; p != nil {
		return TurnResult{}, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("session %s waits for a decision on %s (%s), parked by turn %s while turn %s waited: decide it first", w.id, p.ID, p.ToolName, p.TurnID, req.TurnID), ErrTypeRefused, nil)
	}
	return w.run(ctx, req)
}

func (w *wf) validDecision(_ workflow.Context, d Decision) error {
	switch p := w.parked; {
	case d.ParkID == "":
		return errors.New("the decision names no parked call")
	case p == nil:
		return fmt.Errorf("session %s has no call waiting for a decision (%s was decided, or never parked here)", w.id, d.ParkID)
	case p.ID != d.ParkID:
		return fmt.Errorf("session %s waits for a decision on %s, not %s", w.id, p.ID, d.ParkID)
	}
	return nil
}

func (w *wf) decide(ctx workflow.Context, d Decision) (TurnResult, error) {
	ticket := w.take()
	defer w.done()
	if err := w.wait(ctx, ticket); err != nil {
		return TurnResult{}, err
	}
	p := w.parked
	if p == nil || p.ID != d.ParkID {
		return TurnResult{}, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("%s of session %s was decided meanwhile", d.ParkID, w.id), ErrTypeRefused, nil)
	}
	var st ParkState
	if err := workflow.ExecuteActivity(w.parkOptions(ctx), ParkActivity, ParkInput{SessionID: w.id, ParkID: p.ID, Decide: &d}).Get(ctx, &st); err != nil {
		return TurnResult{}, err
	}
	w.parked = nil
	return w.run(ctx, TurnRequest{TurnID: p.TurnID, Input: p.Input, OutputSchema: p.OutputSchema, Attachments: p.Attachments})
}

// run runs a turn step by step — each model call and each tool call an
// activity of its own, but for a group of read-only calls at once, which
// the step before it runs (or, when that step returned first, a local
// activity where the session is open) — and keeps what it parked. A step
// goes to the worker that ran the last one, which keeps the session open;
// if that worker does not take it within Options.StepStart, or the step
// fails there, any worker of the task queue runs it, under the retry
// policy, from what the store holds.
func (w *wf) run(ctx workflow.Context, req TurnRequest) (TurnResult, error) {
	actx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	w.running, w.cancel, w.interrupted = req.TurnID, cancel, false
	defer func() { w.running, w.cancel = "", nil }()
	w.turns++
	in := StepInput{SessionID: w.id, Request: req, Heartbeat: w.opts.Heartbeat}
	// Workflows that began before ReadsActivity, or before steps went to
	// the workflow's queue for their keeper, replay as they ran.
	inPlace := workflow.GetVersion(ctx, "reads-in-place", workflow.DefaultVersion, 1) >= 1
	eager := workflow.GetVersion(ctx, "eager-steps", workflow.DefaultVersion, 1) >= 1
	var (
		queue            string // the worker's that keeps the session open
		toolCalls, retry int
		usage            llm.Usage
	)
	for {
		name := ModelActivity
		if in.Progress.CallsPending {
			name = ToolActivity
		}
		if workflow.GetInfo(ctx).GetCurrentHistoryLength() > 4*w.opts.MaxHistory {
			// A turn cannot continue as new: past this, one activity runs
			// the rest of it, within Temporal's limit.
			in.Rest = true
		}
		sctx := actx
		if w.interrupted {
			// Interrupted between steps: this step ends the turn so, and
			// is not cancelled itself.
			in.Interrupt, sctx = true, ctx
		}
		var r StepResult
		var err error
		in.Keeper = ""
		switch {
		case name == ToolActivity && in.Progress.ReadsNext && queue != "" && !in.Interrupt && inPlace:
			// Read-only calls: in place, if this worker keeps the session.
			err = workflow.ExecuteLocalActivity(w.readsOptions(sctx), ReadsActivity, in).Get(ctx, &r)
			if err == nil && r.Elsewhere {
				r = StepResult{}
				err = workflow.ExecuteActivity(w.stepOptions(sctx, queue, true), name, in).Get(ctx, &r)
			}
		case queue != "" && eager && !w.handedOff:
			// To the workflow's own queue, for the keeper: the server hands
			// it back with this workflow task's completion (eager activity
			// execution, where the cluster allows it) to the worker that
			// ran the task — the keeper, which runs the workflow's tasks
			// too, most often — sparing it a dispatch. Another worker that
			// takes it runs nothing: then to the keeper's own queue.
			in.Keeper = queue
			err = workflow.ExecuteActivity(w.stepOptions(sctx, "", true), name, in).Get(ctx, &r)
			if err == nil && r.Elsewhere {
				w.handedOff, in.Keeper, r = true, "", StepResult{}
				err = workflow.ExecuteActivity(w.stepOptions(sctx, queue, true), name, in).Get(ctx, &r)
			}
		default:
			err = workflow.ExecuteActivity(w.stepOptions(sctx, queue, queue != ""), name, in).Get(ctx, &r)
		}
		var canceled *sdktemporal.CanceledError
		switch {
		case errors.As(err, &canceled) && !in.Interrupt:
			w.interrupted = true // the step had not reported back: the next one ends the turn
			continue
		case err != nil && queue != "" && !isRefused(err):
			// Not taken in time, or failed, where the session was open:
			// the shared queue from now on. A step that began there may
			// have started calls: they are taken for unstarted only if it
			// never began (its one attempt was not taken in time).
			var te *sdktemporal.TimeoutError
			if !errors.As(err, &te) || te.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				in.NotStarted = false
			}
			queue = ""
			retry++
			continue
		case err != nil:
			return TurnResult{}, err
		}
		toolCalls += r.ToolCalls
		usage = usage.Add(r.Usage)
		retry += int(r.Attempt) - 1
		if r.StopReason == string(agent.StopPaused) {
			in.Progress, in.NotStarted, queue = r.Progress, r.Progress.CallsPending, r.Queue
			in.Request.Input, in.Request.Attachments = "", nil // in the store now
			continue
		}
		res := r.TurnResult
		res.ToolCalls, res.Usage, res.Iterations = toolCalls, usage, r.Progress.Iterations
		res.Steps, res.Retries, res.Asked = r.Progress.Steps, retry, req.digest()
		if res.Parked != nil {
			p := *res.Parked
			p.TurnID, p.Input, p.OutputSchema, p.Attachments = req.TurnID, req.Input, req.OutputSchema, req.Attachments
			w.parked = &p
		}
		return res, nil
	}
}

// isRefused reports whether err is an activity's refusal (ErrTypeRefused).
func isRefused(err error) bool {
	var app *sdktemporal.ApplicationError
	return errors.As(err, &app) && app.Type() == ErrTypeRefused
}

// stepOptions are the activity options of a step sent to queue ("": the
// workflow's); kept: for the worker that keeps the session, it must start
// within StepStart and is not retried (run sends it on to the shared
// queue instead).
func (w *wf) stepOptions(ctx workflow.Context, queue string, kept bool) workflow.Context {
	o := workflow.ActivityOptions{
		ScheduleToCloseTimeout: w.opts.TurnTimeout,
		StartToCloseTimeout:    w.opts.TurnTimeout,
		HeartbeatTimeout:       w.opts.Heartbeat,
		// An interrupted step records its results before it ends.
		WaitForCancellation: true,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        max(w.opts.RetryMax, time.Second),
			MaximumAttempts:        w.opts.MaxAttempts,
			NonRetryableErrorTypes: []string{ErrTypeRefused},
		},
	}
	if kept {
		o.TaskQueue = queue
		o.ScheduleToStartTimeout = w.opts.StepStart
		o.RetryPolicy = &sdktemporal.RetryPolicy{MaximumAttempts: 1}
	}
	return workflow.WithActivityOptions(ctx, o)
}

// readsOptions are the local activity options of a ReadsActivity: one
// attempt (a failed one sends the step on, as a failed step on a worker's
// own queue does), as long as a turn may take.
func (w *wf) readsOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: w.opts.TurnTimeout,
		StartToCloseTimeout:    w.opts.TurnTimeout,
		RetryPolicy:            &sdktemporal.RetryPolicy{MaximumAttempts: 1},
	})
}

func (w *wf) parkOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: []string{ErrTypeRefused},
		},
	})
}
