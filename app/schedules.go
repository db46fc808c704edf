package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
)

// ScheduleStore is a store that keeps schedules: orca's own all do.
type ScheduleStore interface {
	store.Store
	store.Schedules
}

// Schedules opens the store that keeps the workspace's schedules — the one
// its sessions are in: the user's PostgreSQL store if the settings or
// $ORCA_STORE_DSN name one, else the workspace's .orca/orca.db — and
// returns it with the runtime id of the CLI's agent over the workspace
// (DefaultName), which orca serve fires them as. create makes the store
// and the workspace's id when there are none; without it a workspace with
// no store has no schedules: the store is nil. The caller closes the
// store.
func Schedules(ctx context.Context, ws, configDir string, getenv func(string) string, create bool) (st ScheduleStore, runtimeID, root string, err error) {
	if _, err := CheckWorkspace(ws); err != nil {
		return nil, "", "", err
	}
	if root, err = config.Canonical(ws); err != nil {
		return nil, "", "", configErrorf("workspace %s: %v", ws, err)
	}
	wsID, err := ReadWorkspaceID(root)
	if err == nil && wsID == "" && create {
		wsID, err = workspaceID(root)
	}
	if err != nil {
		return nil, "", root, err
	}
	runtimeID = agent.RuntimeID(DefaultName, cmpOr(wsID, root))
	s, err := OpenUserStore(ctx, configDir, getenv)
	if err != nil {
		return nil, runtimeID, root, err
	}
	if s == nil {
		if _, err := os.Stat(sqlite.DefaultPath(root)); errors.Is(err, os.ErrNotExist) && !create {
			return nil, runtimeID, root, nil
		}
		if s, err = OpenStore(root); err != nil {
			return nil, runtimeID, root, err
		}
	}
	sc, ok := s.(ScheduleStore)
	if !ok {
		s.Close()
		return nil, runtimeID, root, fmt.Errorf("the session store (%T) keeps no schedules", s)
	}
	return sc, runtimeID, root, nil
}

// FireSchedule runs schedule sc's fire due at at in a session of the App —
// one of its own, or sc.SessionID's — and says where it ran and what it
// spent: the Firer of 'orca schedule run'. A fire in a session of its own
// runs under the schedule's budget for one fire (schedule.FireBudget); one
// in an existing session under that session's budget. Approvals are the
// App's Approver's: orca's CLI and server park them (policy.Parking), so
// that a fired prompt never approves anything — a call that needs a
// person parks, and the fire ends with its turn.
func (a *App) FireSchedule(ctx context.Context, sc store.Schedule, at time.Time) (schedule.Outcome, error) {
	ls, err := a.Session(ctx, SessionOptions{ID: sc.SessionID})
	if err != nil {
		return schedule.Outcome{SessionID: sc.SessionID}, err
	}
	out := schedule.Outcome{SessionID: ls.ID()}
	defer ls.Close(context.WithoutCancel(ctx))
	if sc.SessionID == "" {
		if limit := schedule.FireBudget(sc); limit > 0 {
			if _, err := ls.ChangeBudget(ctx, budget.Change{CostUSD: &limit}); err != nil {
				return out, err
			}
		}
	} else if p := ls.Parked(); p != nil {
		return out, fmt.Errorf("session %s waits for a decision on its parked %s call %s: a fired prompt does not decide it (orca approve)", ls.ID(), p.ToolName, p.ID)
	}
	res, err := ls.Run(ctx, sc.Prompt)
	if res != nil {
		out.Spent = res.Spent.CostUSD
		out.Note = FireNote(res)
	}
	return out, err
}

// FireNote is what a fire's record says of a turn that did not end by
// answering: a call parked for a person, a budget reached, a refusal, an
// interruption ("" for one that answered).
func FireNote(res *agent.Result) string {
	switch res.StopReason {
	case agent.StopAnswered:
		return ""
	case agent.StopAwaitingApproval:
		if p := res.Parked; p != nil {
			return fmt.Sprintf("ended awaiting approval: its %s call parked for a person (%s)", p.ToolName, p.Reason)
		}
	}
	note := "ended " + string(res.StopReason)
	if res.Reason != "" {
		note += ": " + res.Reason
	}
	return note
}
