package temporal

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/store"
)

// Scheduled runs on the Temporal engine are Temporal Schedules: the
// server keeps the timetable and starts a fire workflow (FireWorkflowName)
// once per due time — its own guarantee, across restarts and however many
// workers —, with the overlap policy, the catch-up window, the pause and
// the end the schedule says. A fire asks the session workflow for one
// turn (Client.Turn, through FireActivity), in a session of its own or
// the schedule's; the turn's id and the new session's come from the fire
// workflow's id, so that a fire retried runs the same turn, never a
// second one. A fired prompt never approves: a call that needs a person
// parks, and the fire ends with its turn.

// The names of the fire's workflow and activity.
const (
	FireWorkflowName = "orca.ScheduleFire"
	FireActivity     = "orca.Fire"
)

// The memo keys a schedule keeps what orca said of it under.
const (
	memoSpec     = "orca.spec"
	memoZone     = "orca.time_zone"
	memoPrompt   = "orca.prompt"
	memoSession  = "orca.session"
	memoCreated  = "orca.created"
	memoCatchUp  = "orca.catch_up"
	memoOverlap  = "orca.overlap"
	memoExpires  = "orca.expires"
	schedulePart = "/schedule/"
)

// FireInput is what a schedule's fire asks: its prompt, in a session of
// its own (SessionID empty) or in SessionID's.
type FireInput struct {
	ScheduleID string `json:"schedule_id"`
	Prompt     string `json:"prompt"`
	SessionID  string `json:"session_id,omitempty"`
	// Options are the timings of a session workflow the fire starts.
	Options Options `json:"options"`
}

// FireTurn is the turn a fire asks for.
type FireTurn struct {
	FireInput
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
}

// FireResult is how a fire's turn ended.
type FireResult struct {
	SessionID  string `json:"session_id"`
	TurnID     string `json:"turn_id"`
	StopReason string `json:"stop_reason"`
	// Note says how a turn that did not answer ended (a call parked for
	// a person).
	Note string `json:"note,omitempty"`
}

// fireIDs are the session and turn a fire workflow of id runs.
func fireIDs(id, session string) (sessionID, turnID string) {
	sum := sha256.Sum256([]byte(id))
	if session == "" {
		session = "session_" + hex.EncodeToString(sum[8:16])
	}
	return session, "turn_" + hex.EncodeToString(sum[:8])
}

// FireWorkflow runs one fire of a schedule: one turn, through FireActivity.
func FireWorkflow(ctx workflow.Context, in FireInput) (FireResult, error) {
	sessionID, turnID := fireIDs(workflow.GetInfo(ctx).WorkflowExecution.ID, in.SessionID)
	o := in.Options.withDefaults()
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: o.TurnTimeout,
		HeartbeatTimeout:    o.Heartbeat * 3,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{ErrTypeRefused},
		},
	})
	var r FireResult
	err := workflow.ExecuteActivity(ctx, FireActivity, FireTurn{FireInput: in, SessionID: sessionID, TurnID: turnID}).Get(ctx, &r)
	return r, err
}

// Fire asks for a fire's turn and waits for it (FireActivity): asking
// again, as a retry does, gets the same turn. It heartbeats while it
// waits, so that a worker that dies hands the wait to another.
func (a *Activities) Fire(ctx context.Context, in FireTurn) (FireResult, error) {
	if a.Turns == nil {
		return FireResult{}, refused(errors.New("this worker fires no schedules: its Activities have no Turns client"))
	}
	o := in.Options.withDefaults()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(o.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, in.TurnID)
			}
		}
	}()
	c := *a.Turns
	c.Options = in.Options
	res, err := c.Turn(ctx, in.SessionID, TurnRequest{TurnID: in.TurnID, Input: in.Prompt})
	if err != nil {
		return FireResult{SessionID: in.SessionID, TurnID: in.TurnID}, err
	}
	out := FireResult{SessionID: in.SessionID, TurnID: in.TurnID, StopReason: res.StopReason}
	switch {
	case res.Parked != nil:
		out.Note = fmt.Sprintf("ended awaiting approval: its %s call parked for a person (%s)", res.Parked.ToolName, res.Parked.Reason)
	case res.StopReason != "answered":
		out.Note = "ended " + res.StopReason + ": " + cmp.Or(res.Error, res.Reason)
	}
	return out, nil
}

// ScheduleID is the id of the Temporal Schedule of orca schedule id on
// the client's task queue.
func (c *Client) ScheduleID(id string) string {
	return "orca/" + cmp.Or(c.TaskQueue, DefaultTaskQueue) + schedulePart + id
}

// AddSchedule makes sc a Temporal Schedule of the client's task queue. A
// schedule's budget and cap are orca serve's; here they are refused.
func (c *Client) AddSchedule(ctx context.Context, sc store.Schedule) error {
	if sc.BudgetUSD > 0 || sc.CapUSD > 0 {
		return errors.New("a budget per fire or a cap is kept by orca serve's schedules (orca schedule); a Temporal Schedule's fires run under their sessions' budgets")
	}
	if _, err := schedule.Parse(sc.Spec, sc.TimeZone, sc.CreatedAt); err != nil {
		return err
	}
	spec := client.ScheduleSpec{TimeZoneName: sc.TimeZone, EndAt: sc.Expires}
	if rest, ok := strings.CutPrefix(sc.Spec, "@every "); ok {
		every, err := time.ParseDuration(rest)
		if err != nil {
			return err
		}
		// From the schedule's creation, as orca serve counts it: Temporal
		// counts from the epoch, plus an offset.
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: every, Offset: time.Duration(sc.CreatedAt.Truncate(time.Second).UnixNano() % int64(every))}}
	} else {
		spec.CronExpressions = []string{sc.Spec}
	}
	overlap := enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	if sc.Overlap == store.OverlapAllow {
		overlap = enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL
	}
	catchUp := cmp.Or(sc.CatchUp, schedule.DefaultCatchUp)
	memo := map[string]any{memoSpec: sc.Spec, memoZone: sc.TimeZone, memoPrompt: sc.Prompt, memoSession: sc.SessionID,
		memoCreated: sc.CreatedAt.UTC(), memoCatchUp: catchUp.String(), memoOverlap: cmp.Or(sc.Overlap, store.OverlapSkip)}
	if !sc.Expires.IsZero() {
		memo[memoExpires] = sc.Expires.UTC()
	}
	_, err := c.Temporal.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   c.ScheduleID(sc.ID),
		Spec: spec,
		Action: &client.ScheduleWorkflowAction{
			ID:        c.ScheduleID(sc.ID) + "/fire",
			Workflow:  FireWorkflowName,
			Args:      []any{FireInput{ScheduleID: sc.ID, Prompt: sc.Prompt, SessionID: sc.SessionID, Options: c.Options}},
			TaskQueue: cmp.Or(c.TaskQueue, DefaultTaskQueue),
		},
		Overlap:       overlap,
		CatchupWindow: catchUp,
		Paused:        sc.Paused,
		Memo:          memo,
	})
	if errors.Is(err, sdktemporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("schedule %s exists already on task queue %s", sc.ID, cmp.Or(c.TaskQueue, DefaultTaskQueue))
	}
	return err
}

// ErrNoSchedule is a schedule the task queue has not.
var ErrNoSchedule = errors.New("no such schedule")

func (c *Client) handle(ctx context.Context, id string) (client.ScheduleHandle, *client.ScheduleDescription, error) {
	h := c.Temporal.ScheduleClient().GetHandle(ctx, c.ScheduleID(id))
	d, err := h.Describe(ctx)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil, fmt.Errorf("%w: %s on task queue %s", ErrNoSchedule, id, cmp.Or(c.TaskQueue, DefaultTaskQueue))
	}
	return h, d, err
}

// Schedule describes schedule id, with its recent fires (newest first),
// each as its workflow stands.
func (c *Client) Schedule(ctx context.Context, id string) (schedule.View, error) {
	_, d, err := c.handle(ctx, id)
	if err != nil {
		return schedule.View{}, err
	}
	v := viewOf(id, d.Memo, d.Schedule.State != nil && d.Schedule.State.Paused, d.Info.NextActionTimes)
	for i := len(d.Info.RecentActions) - 1; i >= 0; i-- {
		ra := d.Info.RecentActions[i]
		fv := schedule.FireView{At: ra.ScheduleTime.UTC(), Status: store.FireRunning, Owner: "temporal", ClaimedAt: ra.ActualTime.UTC()}
		if w := ra.StartWorkflowResult; w != nil {
			fv.SessionID, _ = fireIDs(w.WorkflowID, v.SessionID)
			var r FireResult
			run := c.Temporal.GetWorkflow(ctx, w.WorkflowID, w.FirstExecutionRunID)
			if d, err := c.Temporal.DescribeWorkflow(ctx, w.WorkflowID, w.FirstExecutionRunID); err == nil {
				desc := d.RawResponse
				switch desc.GetWorkflowExecutionInfo().GetStatus() {
				case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
				case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
					fv.Status = store.FireDone
					if run.Get(ctx, &r) == nil {
						fv.Note = r.Note
					}
				default:
					fv.Status = store.FireFailed
					if err := run.Get(ctx, &r); err != nil {
						fv.Note = err.Error()
					}
				}
				if ct := desc.GetWorkflowExecutionInfo().GetCloseTime(); ct != nil && fv.Status != store.FireRunning {
					t := ct.AsTime().UTC()
					fv.EndedAt = &t
				}
			}
		}
		v.Fires = append(v.Fires, fv)
	}
	return v, nil
}

// Schedules lists the schedules of the client's task queue.
func (c *Client) Schedules(ctx context.Context) ([]schedule.View, error) {
	it, err := c.Temporal.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, err
	}
	prefix := c.ScheduleID("")
	out := []schedule.View{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		id, ok := strings.CutPrefix(e.ID, prefix)
		if !ok {
			continue
		}
		out = append(out, viewOf(id, e.Memo, e.Paused, e.NextActionTimes))
	}
	return out, nil
}

// viewOf is a schedule as orca shows it, from what its memo keeps.
func viewOf(id string, memo *commonpb.Memo, paused bool, next []time.Time) schedule.View {
	get := func(k string, v any) {
		if p := memo.GetFields()[k]; p != nil {
			converter.GetDefaultDataConverter().FromPayload(p, v)
		}
	}
	v := schedule.View{ID: id, State: "active"}
	var expires time.Time
	get(memoSpec, &v.Spec)
	get(memoZone, &v.TimeZone)
	get(memoPrompt, &v.Prompt)
	get(memoSession, &v.SessionID)
	get(memoCreated, &v.CreatedAt)
	get(memoCatchUp, &v.CatchUp)
	get(memoOverlap, &v.Overlap)
	get(memoExpires, &expires)
	if !expires.IsZero() {
		v.ExpiresAt = &expires
	}
	if len(next) > 0 {
		n := next[0].UTC()
		v.NextAt = &n
	}
	switch {
	case paused:
		v.State = "paused"
	case v.ExpiresAt != nil && !time.Now().Before(*v.ExpiresAt):
		v.State, v.NextAt = "expired", nil
	}
	return v
}

// PauseSchedule pauses schedule id (paused) or resumes it.
func (c *Client) PauseSchedule(ctx context.Context, id string, paused bool) error {
	h, _, err := c.handle(ctx, id)
	if err != nil {
		return err
	}
	if paused {
		return h.Pause(ctx, client.SchedulePauseOptions{Note: "orca-temporal schedule pause"})
	}
	return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "orca-temporal schedule resume"})
}

// FireSchedule fires schedule id now, paused or not (its overlap policy
// holds: a fire still running makes a skipping schedule skip this one).
func (c *Client) FireSchedule(ctx context.Context, id string) error {
	h, _, err := c.handle(ctx, id)
	if err != nil {
		return err
	}
	return h.Trigger(ctx, client.ScheduleTriggerOptions{})
}

// DeleteSchedule removes schedule id (its fires' workflows and sessions
// stay).
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	h, _, err := c.handle(ctx, id)
	if err != nil {
		return err
	}
	return h.Delete(ctx)
}
