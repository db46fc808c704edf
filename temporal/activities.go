package temporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// Activities are the session workflow's activities, over one opened App:
// a worker serves one agent in one workspace, with a store every worker
// of its task queue shares.
//
// A turn runs as steps (session.Step): each model call, and each tool call
// (or group of read-only calls at once), is an activity of its own
// (ModelActivity, ToolActivity), but for a group of read-only calls, which
// runs in the activity of the step before it, on the session open there
// (ReadsActivity, a local one, when that step returned first). Between
// the steps of a turn the worker keeps the session open, so that hooks,
// the lease and what SESSION_START hooks left (CLAUDE_ENV_FILE) hold for
// the whole turn: the workflow sends the next step to the shared queue
// for this worker (StepInput.Keeper: with eager activity execution the
// server hands it back to the worker of the workflow task, this one most
// often), or to this worker's own task queue (Queue, RegisterOwn) once a
// step for it reached another; to any worker of the shared queue if this
// one does not take it in time.
type Activities struct {
	App *app.App
	// LeaseWait is how long a turn waits for the session's writer lease
	// that another process holds (a worker that died on another host
	// holds it until it expires); 0 means a minute.
	LeaseWait time.Duration
	// Worker names this worker in results (its host and pid if empty).
	Worker string
	// Queue is this worker's own task queue: it names the worker that
	// keeps a session open between the steps of a turn (StepInput.Keeper),
	// and the later steps go there once one sent for it reached another
	// worker (RegisterOwn registers them there); "" keeps nothing open,
	// every step on the shared queue opening the session.
	Queue string
	// Turns, when set, asks the session workflows for turns: the fires of
	// Temporal Schedules (FireActivity) do, through it. A worker sets it
	// to a Client of its own task queue.
	Turns *Client
	// KeepOpen is how long a session stays open after a step, waiting for
	// the turn's next (30s; the workflow gives it Options.StepStart to
	// come, less than this).
	KeepOpen time.Duration

	mu   sync.Mutex
	kept map[string]*kept // by session id
}

// kept is a session a worker holds open between two steps of a turn.
type kept struct {
	ls    *session.LiveSession
	turn  string
	prog  *progress
	timer *time.Timer
}

func (a *Activities) worker() string {
	if a.Worker != "" {
		return a.Worker
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}

// refused is an error asking again will not cure.
func refused(err error) error {
	return sdktemporal.NewNonRetryableApplicationError(err.Error(), ErrTypeRefused, err)
}

// take returns the session kept open for turn, if this worker keeps one
// (and closes one kept for another turn).
func (a *Activities) take(ctx context.Context, sessionID, turn string) *kept {
	a.mu.Lock()
	k := a.kept[sessionID]
	delete(a.kept, sessionID)
	a.mu.Unlock()
	if k == nil || !k.timer.Stop() {
		return nil // none, or closing at its time
	}
	if k.turn != turn || k.ls.Closed() {
		k.ls.Close(context.WithoutCancel(ctx))
		return nil
	}
	return k
}

// keep holds k open for the turn's next step, for KeepOpen.
func (a *Activities) keep(sessionID string, k *kept) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.kept == nil {
		a.kept = map[string]*kept{}
	}
	k.timer = time.AfterFunc(cmp.Or(a.KeepOpen, 30*time.Second), func() {
		a.mu.Lock()
		if a.kept[sessionID] == k {
			delete(a.kept, sessionID)
		}
		a.mu.Unlock()
		k.ls.Close(context.Background())
	})
	a.kept[sessionID] = k
}

// Close closes the sessions the worker keeps open between steps (call it
// once the worker has stopped).
func (a *Activities) Close() {
	a.mu.Lock()
	kept := a.kept
	a.kept = nil
	a.mu.Unlock()
	for _, k := range kept {
		if k.timer.Stop() {
			k.ls.Close(context.Background())
		}
	}
}

// Step runs the next step of turn in.Request of session in.SessionID
// (session.Step with in.Progress; the first step when that is zero, and
// any attempt goes on from what earlier ones recorded: session.Retry). It
// heartbeats while the step runs; when the workflow cancels it (an
// interrupt), the turn is interrupted at its next safe point and its
// result returned. A worker that stops (worker.Options.WorkerStopTimeout)
// lets the step go on for that long; then the turn stops at its next safe
// point and the attempt fails, so that another worker goes on with it.
func (a *Activities) Step(ctx context.Context, in StepInput) (StepResult, error) {
	return a.step(ctx, in, false)
}

// Reads runs a step of read-only calls (ReadsActivity, a local activity)
// on the session this worker keeps open for the turn, as Step does; if it
// keeps none, it runs nothing and says so (StepResult.Elsewhere).
func (a *Activities) Reads(ctx context.Context, in StepInput) (StepResult, error) {
	return a.step(ctx, in, true)
}

func (a *Activities) step(ctx context.Context, in StepInput, inPlace bool) (StepResult, error) {
	if in.Keeper != "" && in.Keeper != a.Queue {
		// For the worker that keeps the session, it came here: the
		// workflow sends it to that worker's own queue.
		return StepResult{Elsewhere: true}, nil
	}
	info := activity.GetInfo(ctx)
	req := in.Request
	worker := a.worker()
	var media []*llm.Media
	switch {
	case in.Progress.Steps == 0:
		if err := req.Check(); err != nil {
			return StepResult{}, refused(err)
		}
		var err error
		if media, err = a.attachments(ctx, in.SessionID, req); err != nil {
			return StepResult{}, err
		}
	case req.TurnID == "":
		return StepResult{}, refused(errors.New("a later step of a turn names no turn"))
	}
	// runOpts are a step's, from p; media go with the turn's first.
	runOpts := func(p agent.Progress, media []*llm.Media) []session.RunOption {
		p.Rest = in.Rest
		opts := []session.RunOption{session.WithTurnID(req.TurnID), session.Retry(), session.Step(p)}
		if len(media) > 0 {
			opts = append(opts, session.WithMedia(media...))
		}
		if len(req.OutputSchema) > 0 {
			opts = append(opts, session.WithOutput(&agent.Output{Schema: req.OutputSchema}))
		}
		if in.Interrupt {
			opts = append(opts, session.Interrupted())
		}
		return opts
	}
	k := a.take(ctx, in.SessionID, req.TurnID)
	if inPlace && k == nil {
		// Not open here (another worker has it, or none): the workflow
		// sends the step where it is, as an activity.
		return StepResult{Elsewhere: true}, nil
	}
	if k != nil && info.Attempt > 1 {
		// A later attempt does not trust the session as the failed one
		// left it: it opens it again, from the store.
		k.ls.Close(context.WithoutCancel(ctx))
		k = nil
	}
	if k == nil {
		k = &kept{turn: req.TurnID, prog: new(progress)}
		ls, err := a.App.Session(ctx, app.SessionOptions{ID: in.SessionID, Wait: cmp.Or(a.LeaseWait, time.Minute), OnEvent: k.prog.see,
			// Only a first attempt knows that nothing ran since the last
			// step paused.
			CallsNotStarted: in.NotStarted && info.Attempt == 1})
		var ce *app.ConfigError
		switch {
		case errors.As(err, &ce):
			return StepResult{}, refused(err)
		case err != nil:
			return StepResult{}, err
		}
		k.ls = ls
	}
	ls := k.ls
	keep := false
	defer func() {
		if !keep {
			ls.Close(context.WithoutCancel(ctx))
		}
	}()

	// The turn's own context is not the activity's: a cancelled activity
	// interrupts the turn, which then records what it did and ends.
	turnCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan struct{})
	beat := cmp.Or(in.Heartbeat, 10*time.Second) / 3
	go func() {
		t := time.NewTicker(beat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				// Cancelled by the workflow (an interrupt), or the activity
				// timed out (the server thinks this worker is gone): either
				// way the turn stops at its next safe point.
				for !ls.Interrupt(req.TurnID) {
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, k.prog.now(req.TurnID, worker))
			}
		}
	}()
	res, err := ls.Run(turnCtx, req.Input, runOpts(in.Progress, media)...)
	toolCalls, usage := 0, llm.Usage{}
	for res != nil {
		toolCalls, usage = toolCalls+res.ToolCalls, usage.Add(res.Usage)
		if err != nil || res.StopReason != agent.StopPaused || !res.Progress.ReadsNext || ctx.Err() != nil || stoppingNow(ctx) {
			break
		}
		// A group of read-only calls comes next (Progress.ReadsNext): quick,
		// and safe to run again, it runs now, in this activity, on the
		// session open here — a dispatch and a workflow task fewer.
		res, err = ls.Run(turnCtx, "", runOpts(res.Progress, nil)...)
	}
	close(done)
	stopping := false
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		stopping = true
		if ctx.Err() != nil {
			// The worker stopped (a redeploy) and its grace period ran
			// out: the turn was interrupted for that, not by anyone who
			// asked. Another attempt — on another worker — goes on from
			// what it recorded.
			return StepResult{}, fmt.Errorf("worker %s stopped during turn %s of session %s: another worker goes on with it", worker, req.TurnID, in.SessionID)
		}
	default:
	}
	switch {
	case errors.Is(err, session.ErrAwaitingApproval), errors.Is(err, session.ErrClosed):
		return StepResult{}, refused(err)
	case res == nil && err != nil:
		return StepResult{}, err // the store, the lease: another attempt may do better
	}
	out := StepResult{TurnResult: TurnResult{SessionID: in.SessionID, TurnID: req.TurnID, StopReason: string(res.StopReason), Reason: res.Reason,
		Output: res.Output, Iterations: res.Iterations, ToolCalls: toolCalls, Usage: usage, Attempt: info.Attempt, Worker: worker},
		Progress: res.Progress}
	out.Answer, out.AnswerTruncated = truncate(res.Answer, MaxAnswer)
	if err != nil {
		out.Error = err.Error()
	}
	if p := ls.Parked(); p != nil && res.StopReason == agent.StopAwaitingApproval {
		out.Parked = &Parked{ID: p.ID, ToolUseID: p.ToolUseID, ToolName: p.ToolName, Reason: p.Reason}
	}
	if res.StopReason == agent.StopPaused && err == nil && a.Queue != "" && !stopping && ctx.Err() == nil {
		// The turn's next step comes here, to the session held open.
		keep = true
		out.Queue = a.Queue
		a.keep(in.SessionID, k)
	}
	return out, nil
}

// stoppingNow reports whether the worker of the activity ctx is stopping.
func stoppingNow(ctx context.Context) bool {
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return true
	default:
		return false
	}
}

// attachments reads the bytes of the images and documents turn req shows
// from the session store, by digest (its client put them there:
// Client.Turn), and gives them back as the request describes them. A
// digest the store does not keep for the session refuses the turn,
// naming it.
func (a *Activities) attachments(ctx context.Context, sessionID string, req TurnRequest) ([]*llm.Media, error) {
	if len(req.Attachments) == 0 {
		return nil, nil
	}
	st := a.App.Store()
	out := make([]*llm.Media, len(req.Attachments))
	for i, at := range req.Attachments {
		m, err := st.Attachment(ctx, sessionID, at.Digest)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, refused(fmt.Errorf("turn %s, attachment %d: %w (a durable turn's client puts its attachments in the session store first: temporal.Client.Store)", req.TurnID, i+1, err))
		case err != nil:
			return nil, err // the store: another attempt may do better
		}
		out[i] = &llm.Media{MediaType: at.MediaType, Data: m.Data, Digest: at.Digest, Size: int64(len(m.Data)), Name: at.Name, Width: at.Width, Height: at.Height}
	}
	return out, nil
}

// Progress is what a turn's heartbeats say of it (the activity's heartbeat
// details, which Temporal's UI and DescribeWorkflow show): which calls run
// now, where a durable turn is seen call by call.
type Progress struct {
	TurnID     string   `json:"turn_id"`
	Worker     string   `json:"worker"`
	Iterations int      `json:"iterations"`
	ToolCalls  int      `json:"tool_calls"`
	Running    []string `json:"running,omitempty"` // "Bash toolu_…", as they started
}

// progress follows a turn's events for its heartbeats.
type progress struct {
	mu      sync.Mutex
	p       Progress
	running []string // the calls running, as Progress.Running names them
}

func (g *progress) see(e event.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch d := e.Data.(type) {
	case *event.IterationStartedData:
		if e.Depth == 0 {
			g.p.Iterations = d.Iteration
		}
	case *event.ToolStartedData:
		if e.Depth == 0 {
			g.p.ToolCalls++
			g.running = append(g.running, d.ToolName+" "+d.ToolUseID)
		}
	case *event.ToolData: // completed or failed
		if e.Depth == 0 {
			call := d.ToolName + " " + d.ToolUseID
			g.running = slices.DeleteFunc(g.running, func(c string) bool { return c == call })
		}
	}
}

func (g *progress) now(turnID, worker string) Progress {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.p
	p.TurnID, p.Worker, p.Running = turnID, worker, slices.Clone(g.running)
	return p
}

// Park reads the parked call in.ParkID of the session, deciding it first
// with in.Decide. A call decided already (through the store: orca approve,
// orca serve) keeps that decision.
func (a *Activities) Park(ctx context.Context, in ParkInput) (ParkState, error) {
	st := a.App.Store()
	if d := in.Decide; d != nil {
		status := store.ParkDenied
		if d.Approve {
			status = store.ParkApproved
		}
		p, err := st.SetParkStatus(ctx, in.ParkID, status, cmp.Or(d.By, "a Temporal decision"), d.Note)
		switch {
		case err == nil:
			return ParkState{Status: p.Status, DecidedBy: p.DecidedBy}, nil
		case errors.Is(err, store.ErrNotFound):
			return ParkState{}, refused(fmt.Errorf("session %s has no parked call %s: %w", in.SessionID, in.ParkID, err))
		case !errors.Is(err, store.ErrInvalid):
			return ParkState{}, err
		}
		// Decided already: that decision stands.
	}
	calls, err := st.ParkedCalls(ctx, store.ParkFilter{SessionID: in.SessionID})
	if err != nil {
		return ParkState{}, err
	}
	for _, p := range calls {
		if p.ID == in.ParkID {
			return ParkState{Status: p.Status, DecidedBy: p.DecidedBy}, nil
		}
	}
	return ParkState{}, refused(fmt.Errorf("session %s has no parked call %s", in.SessionID, in.ParkID))
}
