package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/protect"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/workspace"
)

// RewindDir is where a workspace's checkpoints are kept, below its root.
const RewindDir = ".orca/rewind"

// RewindStore opens the store of a workspace's checkpoints (package
// rewind), under RewindDir — refused if a link leads that out of the
// workspace — with a .gitignore of its own: what it keeps is neither the
// repository's nor the file tools'. opts are the store's options.
func RewindStore(root string, opts rewind.Options) (*rewind.Store, error) {
	dir, err := statePath(root, RewindDir)
	if err != nil {
		return nil, fmt.Errorf("cannot keep checkpoints: %w", err)
	}
	st, err := rewind.Open(root, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot keep checkpoints: %w", err)
	}
	if f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.WriteString("# orca's checkpoints (orca rewind): this copy of the workspace's only.\n*\n")
		f.Close()
	}
	return st, nil
}

// openCheckpoints opens the store of the workspace's checkpoints
// (Config.Checkpoints): the files the agent sees — git's ignored ones and
// those a deny rule keeps it from reading left out — as Glob and Grep see
// them, but protected state.
func (a *App) openCheckpoints(pol *policy.Policy) error {
	fsys, err := workspace.OpenLocal(a.root)
	if err != nil {
		return err
	}
	a.closers = append(a.closers, fsys.Close)
	var hidden func(string) bool
	if pol != nil && pol.DeniesReads() {
		hidden = func(rel string) bool { return pol.ReadDenied(fsys, rel) }
	}
	a.rewind, err = RewindStore(a.root, rewind.Options{
		// Protected state (.orca, .claude, git's configuration and hooks)
		// is no turn's to change: the sandbox makes .claude and .orca, and
		// what is there is the user's.
		Skip: func(rel string, _ bool) bool { return protect.Match(rel) },
		Walk: func(ctx context.Context, fn func(string, fs.DirEntry) error) error {
			return builtin.WalkVisible(ctx, fsys, hidden, fn)
		},
	})
	return err
}

// Checkpoints returns the store of what each turn changed in the
// workspace (package rewind), nil unless Config.Checkpoints.
func (a *App) Checkpoints() *rewind.Store { return a.rewind }

// checkpointer is the interceptor that keeps a checkpoint of each turn: a
// snapshot before it and after it, and what changed between, by the file
// tools or by commands. A snapshot that fails is a warning; the turn runs
// whatever happens to its checkpoint.
func (a *App) checkpointer() agent.Interceptor {
	return agent.InterceptorFunc(func(ctx context.Context, rt *agent.Runtime, req agent.Request, next agent.Next) (*agent.Result, error) {
		before, err := a.rewind.Take(ctx)
		if err != nil {
			a.logger.Warn("rewind: no checkpoint of this turn", "session", req.SessionID, "err", err)
			return next.Proceed(ctx, rt, req)
		}
		res, err := next.Proceed(ctx, rt, req)
		if res == nil {
			return res, err
		}
		after, terr := a.rewind.Take(context.WithoutCancel(ctx))
		if terr != nil {
			a.logger.Warn("rewind: no checkpoint of this turn", "session", req.SessionID, "turn", res.TurnID, "err", terr)
			return res, err
		}
		if changes := rewind.Diff(before, after); len(changes) > 0 {
			cp := rewind.Checkpoint{Session: res.SessionID, ID: res.TurnID, Taken: before.Taken, Changes: changes}
			if serr := a.rewind.Save(cp); serr != nil {
				a.logger.Warn("rewind: no checkpoint of this turn", "session", res.SessionID, "turn", res.TurnID, "err", serr)
			}
		}
		return res, err
	})
}

// ErrNoCheckpoint: the session has no checkpoint of the turn named.
// RewindTo's error is it, and names the session and the turn.
var ErrNoCheckpoint = errors.New("no turn with changes to rewind")

type noCheckpoint struct{ session, turn string }

func (e noCheckpoint) Error() string {
	return fmt.Sprintf("session %s has no turn %q with changes to rewind", e.session, e.turn)
}

func (noCheckpoint) Is(target error) bool { return target == ErrNoCheckpoint }

// CheckpointOf returns the session's checkpoints and the index of turn's
// among them: turn is a checkpoint's turn id or its number (1 the
// oldest). A turn with none is ErrNoCheckpoint, naming both.
func CheckpointOf(st *rewind.Store, session, turn string) ([]rewind.Checkpoint, int, error) {
	cps, err := st.Checkpoints(session)
	if err != nil {
		return nil, -1, err
	}
	for i, cp := range cps {
		if cp.ID == turn || strconv.Itoa(i+1) == turn {
			return cps, i, nil
		}
	}
	return nil, -1, noCheckpoint{session, turn}
}

// RewindTo puts the workspace back as it was before turn of session: turn
// is a checkpoint's turn id or its number among the session's (1 the
// oldest). It restores that checkpoint and every later one (rewind.Store
// .Restore, force as there) and, unless a path changed since stopped it,
// forgets them; it returns what Restore did and the checkpoints rewound.
func RewindTo(st *rewind.Store, session, turn string, force bool) (rewind.Restored, []rewind.Checkpoint, error) {
	cps, from, err := CheckpointOf(st, session, turn)
	if err != nil {
		return rewind.Restored{}, nil, err
	}
	undo := cps[from:]
	r, err := st.Restore(undo, force)
	if err != nil || len(r.Conflicts) > 0 && !force {
		return r, undo, err
	}
	ids := make([]string, len(undo))
	for i, cp := range undo {
		ids[i] = cp.ID
	}
	return r, undo, st.Remove(session, ids...)
}
