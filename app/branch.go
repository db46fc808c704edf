package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
)

// ErrNoTurn: the session's transcript has no record of the turn named.
// BranchBefore's error is it, and names the session and the turn.
var ErrNoTurn = errors.New("no such turn in the transcript")

type noTurn struct{ session, turn string }

func (e noTurn) Error() string {
	return fmt.Sprintf("session %s has no turn %q in its transcript", e.session, e.turn)
}

func (noTurn) Is(target error) bool { return target == ErrNoTurn }

// BranchBefore starts a new session that goes on from session as it was
// just before turn began, and returns it as stored. Rewinding a
// conversation never deletes a record: the original is left as it is, and
// the branch holds a copy of each record the original had before the
// turn's first one — its turn, kind, message (images and documents with
// it), model and time. A record is compacted in the branch if it was
// compacted then: by a compaction whose summary comes before the turn, so
// the branch gives the model the history it had when the turn began (a
// compaction of that turn or of a later one is not carried over).
//
// The branch has a new id and the original's runtime, workspace and agent;
// its totals, budget and approvals are its own (none yet). An unknown
// session is store.ErrNotFound; a turn the session has no record of is
// ErrNoTurn. If copying fails, the half-made branch is deleted.
func BranchBefore(ctx context.Context, st store.Store, session, turn string) (store.Session, error) {
	src, recs, err := recordsBefore(ctx, st, session, turn)
	if err != nil {
		return store.Session{}, err
	}
	return branch(ctx, st, src, recs)
}

// recordsBefore returns session and its records before turn's first one,
// compacted ones too.
func recordsBefore(ctx context.Context, st store.Store, id, turn string) (store.Session, []store.Record, error) {
	src, err := st.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, nil, fmt.Errorf("no session %s to branch (%w)", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, nil, fmt.Errorf("branch session %s: %w", id, err)
	}
	recs, err := st.Records(ctx, id, store.RecordFilter{IncludeCompacted: true})
	if err != nil {
		return store.Session{}, nil, fmt.Errorf("branch session %s: %w", id, err)
	}
	// A manual compaction's records have no turn: "" names none.
	cut := slices.IndexFunc(recs, func(r store.Record) bool { return r.TurnID == turn })
	if turn == "" || cut < 0 {
		return store.Session{}, nil, noTurn{id, turn}
	}
	return src, recs[:cut], nil
}

// branch provisions a new session of src's runtime holding recs.
func branch(ctx context.Context, st store.Store, src store.Session, recs []store.Record) (store.Session, error) {
	b, err := st.Provision(ctx, store.Session{ID: session.NewID(), RuntimeID: src.RuntimeID, Workspace: src.Workspace, Agent: src.Agent})
	if err != nil {
		return store.Session{}, fmt.Errorf("branch session %s: %w", src.ID, err)
	}
	if len(recs) == 0 {
		return b, nil
	}
	fail := func(err error) (store.Session, error) {
		st.DeleteSession(context.WithoutCancel(ctx), b.ID)
		return store.Session{}, fmt.Errorf("branch session %s into %s: %w", src.ID, b.ID, err)
	}
	// A compaction appends its summary and then marks every earlier record
	// compacted (session.LiveSession's replace): those compacted before
	// the cut are the ones before its last summary. A later compaction may
	// have marked more since; those are the model's again in the branch.
	summary := -1
	for i, r := range recs {
		if r.Kind == store.KindSummary {
			summary = i
		}
	}
	through := -1
	copies := make([]store.Record, len(recs))
	for i, r := range recs {
		// Append refuses a record marked compacted: MarkCompacted marks
		// the copies once they are stored.
		copies[i] = store.Record{TurnID: r.TurnID, Time: r.Time, Kind: r.Kind, Message: r.Message, Model: r.Model}
		if r.Compacted && i < summary {
			through = i
		}
	}
	stored, err := st.Append(ctx, b.ID, copies...)
	if err != nil {
		return fail(err)
	}
	if through >= 0 {
		if err := st.MarkCompacted(ctx, b.ID, stored[through].Seq); err != nil {
			return fail(err)
		}
	}
	if b, err = st.Session(ctx, b.ID); err != nil {
		return fail(err)
	}
	return b, nil
}

// RewindOptions say how far Rewind goes.
type RewindOptions struct {
	// Force puts back the paths that changed since the turns changed them
	// too (rewind.Store.Restore's force); without it, such a path stops
	// the rewind before anything is put back.
	Force bool
	// Conversation rewinds the conversation with the files: it goes on in
	// a branch of the session as it was before the turn (BranchBefore).
	Conversation bool
}

// Rewound is what Rewind did.
type Rewound struct {
	// Restored is what putting the files back did.
	Restored rewind.Restored
	// Undone are the checkpoints rewound, oldest first: the first is the
	// turn rewound to's.
	Undone []rewind.Checkpoint
	// Stopped: paths changed since the turns changed them
	// (Restored.Conflicts) and, without Force, nothing was put back,
	// forgotten or branched.
	Stopped bool
	// Branch is the session the conversation goes on in, with
	// RewindOptions.Conversation; zero otherwise, or when Stopped.
	Branch store.Session
}

// Rewind puts the workspace back as it was before turn of session, as
// RewindTo does (turn is a checkpoint's turn id or its number, 1 the
// oldest), and with opts.Conversation the conversation too: the session
// is branched before the same turn (BranchBefore), and the branch is
// given copies of the checkpoints of the turns it keeps, so that it can
// be rewound further; the original keeps its conversation and its
// checkpoints but those rewound. st, the session store, is needed for
// the conversation only.
//
// What the branch will hold is read before a file is touched: a session
// or a turn the store does not know is an error (store.ErrNotFound,
// ErrNoTurn) that changed nothing, as is a turn with no checkpoint
// (ErrNoCheckpoint).
func Rewind(ctx context.Context, rs *rewind.Store, st store.Store, session, turn string, opts RewindOptions) (Rewound, error) {
	cps, from, err := CheckpointOf(rs, session, turn)
	if err != nil {
		return Rewound{}, err
	}
	turn = cps[from].ID
	var src store.Session
	var recs []store.Record
	if opts.Conversation {
		if st == nil {
			return Rewound{}, fmt.Errorf("session %s: no session store to rewind the conversation in", session)
		}
		if src, recs, err = recordsBefore(ctx, st, session, turn); err != nil {
			return Rewound{}, err
		}
	}
	r, undone, err := RewindTo(rs, session, turn, opts.Force)
	out := Rewound{Restored: r, Undone: undone, Stopped: len(r.Conflicts) > 0 && !opts.Force}
	if err != nil || out.Stopped || !opts.Conversation {
		return out, err
	}
	if out.Branch, err = branch(ctx, st, src, recs); err != nil {
		return out, fmt.Errorf("the files are put back, but not the conversation: %w", err)
	}
	for _, cp := range cps[:from] {
		cp.Session = out.Branch.ID
		if err := rs.Save(cp); err != nil {
			return out, fmt.Errorf("session %s, branched from %s: keeping the checkpoint of turn %s: %w", out.Branch.ID, session, cp.ID, err)
		}
	}
	return out, nil
}
