package temporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
)

// Register registers the session workflow and a's activities on w, a
// worker of the shared task queue, under the names of this package
// (WorkflowName, ModelActivity, ToolActivity, ParkActivity), and the fire
// of a Temporal Schedule (FireWorkflowName, FireActivity: it needs
// a.Turns).
func Register(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	RegisterOwn(w, a)
	w.RegisterActivityWithOptions(a.Reads, activity.RegisterOptions{Name: ReadsActivity})
	w.RegisterActivityWithOptions(a.Park, activity.RegisterOptions{Name: ParkActivity})
	w.RegisterWorkflowWithOptions(FireWorkflow, workflow.RegisterOptions{Name: FireWorkflowName})
	w.RegisterActivityWithOptions(a.Fire, activity.RegisterOptions{Name: FireActivity})
}

// RegisterOwn registers a's step activities on w, a worker of a.Queue,
// the worker's own task queue: the later steps of the turns it runs come
// there, to the sessions it keeps open.
func RegisterOwn(w worker.Registry, a *Activities) {
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: ModelActivity})
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: ToolActivity})
}

// Client asks session workflows for turns, decisions and interrupts.
type Client struct {
	Temporal client.Client
	// TaskQueue is the workers' (DefaultTaskQueue if empty).
	TaskQueue string
	// Options are the timings of the workflows this client starts.
	Options Options
	// Store is the session store the task queue's workers share (or its
	// Attachments role: app.App.Store, postgres.Open, sqlite.Open), where
	// Turn puts the images and documents a turn shows the model: their
	// bytes never travel through Temporal. Only turns with media need it.
	Store store.Attachments
}

// Turn runs req in session sessionID's workflow — starting the workflow
// if it is not running — and waits for the turn to end. Asking again with
// the same TurnID gets the same turn, never a second one.
//
// media are images and documents the turn shows the model with its input
// (media.Prepare makes them from files): Turn puts them in c.Store under
// the session first, then asks for the turn with their references alone
// (req.Attachments, after those req names already); the turn's worker
// reads them back by digest.
func (c *Client) Turn(ctx context.Context, sessionID string, req TurnRequest, media ...*llm.Media) (TurnResult, error) {
	if sessionID == "" {
		return TurnResult{}, fmt.Errorf("the turn names no session")
	}
	media, err := c.refer(&req, media)
	if err != nil {
		return TurnResult{}, err
	}
	if err := req.Check(); err != nil {
		return TurnResult{}, err
	}
	if len(media) > 0 {
		if err := c.Store.PutAttachments(ctx, sessionID, media); err != nil {
			return TurnResult{}, fmt.Errorf("session %s, turn %s: keeping its attachments: %w", sessionID, req.TurnID, err)
		}
	}
	start := c.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       WorkflowID(c.TaskQueue, sessionID),
		TaskQueue:                cmp.Or(c.TaskQueue, DefaultTaskQueue),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, WorkflowName, SessionInput{SessionID: sessionID, Options: c.Options})
	h, err := c.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateID:     req.TurnID,
			UpdateName:   TurnUpdate,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return TurnResult{}, fmt.Errorf("session %s, turn %s: %w", sessionID, req.TurnID, err)
	}
	var res TurnResult
	if err := h.Get(ctx, &res); err != nil {
		return TurnResult{}, fmt.Errorf("session %s, turn %s: %w", sessionID, req.TurnID, err)
	}
	if res.Asked != "" && res.Asked != req.digest() {
		return TurnResult{}, fmt.Errorf("session %s, turn %s: %w: ask again with the same input, or give a new turn id for a new turn", sessionID, req.TurnID, ErrAskedOtherwise)
	}
	return res, nil
}

// refer adds media to req's attachments by reference, and returns them
// with their digests set (copies: the caller's are left as they are).
func (c *Client) refer(req *TurnRequest, media []*llm.Media) ([]*llm.Media, error) {
	if len(media) == 0 {
		return nil, nil
	}
	if c.Store == nil {
		return nil, fmt.Errorf("turn %s shows %d attachments, and the client has no store to put them in (temporal.Client.Store: the workers' session store)", req.TurnID, len(media))
	}
	out := make([]*llm.Media, len(media))
	for i, m := range media {
		if m == nil || len(m.Data) == 0 {
			return nil, fmt.Errorf("turn %s: attachment %d has no bytes", req.TurnID, len(req.Attachments)+i+1)
		}
		cp := *m
		if cp.Digest == "" {
			cp.Digest = llm.DigestOf(cp.Data)
		}
		out[i] = &cp
	}
	req.Attachments = append(slices.Clip(req.Attachments), llm.Attachments(out)...)
	return out, nil
}

// Decide decides the call session sessionID's turn parked and waits for
// the turn, gone on, to end again.
func (c *Client) Decide(ctx context.Context, sessionID string, d Decision) (TurnResult, error) {
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: WorkflowID(c.TaskQueue, sessionID),
		// The same decision asked again is the same update (its result
		// again); the other one is refused, the call decided.
		UpdateID:     fmt.Sprintf("decide-%s-%t", d.ParkID, d.Approve),
		UpdateName:   DecideUpdate,
		Args:         []any{d},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return TurnResult{}, fmt.Errorf("session %s, parked call %s: %w", sessionID, d.ParkID, c.notFound(sessionID, err))
	}
	var res TurnResult
	if err := h.Get(ctx, &res); err != nil {
		return TurnResult{}, fmt.Errorf("session %s, parked call %s: %w", sessionID, d.ParkID, err)
	}
	return res, nil
}

// Interrupt interrupts session sessionID's running turn turnID ("": the
// running one, whichever it is).
func (c *Client) Interrupt(ctx context.Context, sessionID, turnID string) error {
	if err := c.Temporal.SignalWorkflow(ctx, WorkflowID(c.TaskQueue, sessionID), "", InterruptSignal, turnID); err != nil {
		return fmt.Errorf("session %s: %w", sessionID, c.notFound(sessionID, err))
	}
	return nil
}

// State asks session sessionID's workflow what it is doing.
func (c *Client) State(ctx context.Context, sessionID string) (State, error) {
	v, err := c.Temporal.QueryWorkflow(ctx, WorkflowID(c.TaskQueue, sessionID), "", StateQuery)
	if err != nil {
		return State{}, fmt.Errorf("session %s: %w", sessionID, c.notFound(sessionID, err))
	}
	var st State
	if err := v.Get(&st); err != nil {
		return State{}, fmt.Errorf("session %s: %w", sessionID, err)
	}
	return st, nil
}

// Workers counts the workers that polled the task queue for turns lately
// (Temporal keeps a few minutes of them): 0 means a turn asked for now
// waits until one starts.
func (c *Client) Workers(ctx context.Context) (int, error) {
	d, err := c.Temporal.DescribeTaskQueue(ctx, cmp.Or(c.TaskQueue, DefaultTaskQueue), enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return 0, fmt.Errorf("task queue %s: %w", cmp.Or(c.TaskQueue, DefaultTaskQueue), err)
	}
	return len(d.GetPollers()), nil
}

// notFound says what a missing workflow means.
func (c *Client) notFound(sessionID string, err error) error {
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return err
	}
	return fmt.Errorf("no workflow runs it on task queue %s (%s): no turn of it ran there, or it ended after a day without turns: %w",
		cmp.Or(c.TaskQueue, DefaultTaskQueue), WorkflowID(c.TaskQueue, sessionID), err)
}
