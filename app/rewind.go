package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/protect"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/tool"
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

// ForgetCheckpoints drops session's checkpoints from the workspace's
// store of them (RewindDir), with the content no other checkpoint keeps:
// what deleting a session leaves of it. A workspace that keeps no
// checkpoints is left as it is.
func ForgetCheckpoints(root, session string) error {
	if _, err := os.Lstat(filepath.Join(root, RewindDir)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := RewindStore(root, rewind.Options{})
	if err != nil {
		return err
	}
	return st.Forget(session)
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
	a.rewindFS = fsys
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
// tools or by commands. A turn that ran beside another of this App's (orca
// serve's sessions) cannot tell its changes from the other's: its
// checkpoint keeps only the paths its own calls named (turnWrites),
// and says so. A snapshot that fails is a warning; the turn runs whatever
// happens to its checkpoint.
func (a *App) checkpointer() agent.Interceptor {
	return agent.InterceptorFunc(func(ctx context.Context, rt *agent.Runtime, req agent.Request, next agent.Next) (*agent.Result, error) {
		w := a.turns.begin(req.SessionID)
		defer a.turns.end(req.SessionID, w)
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
		changes, note := a.turns.own(w, rewind.Diff(before, after))
		if len(changes) > 0 {
			cp := rewind.Checkpoint{Session: res.SessionID, ID: res.TurnID, Taken: before.Taken, Changes: changes, Note: note}
			if serr := a.rewind.Save(cp); serr != nil {
				a.logger.Warn("rewind: no checkpoint of this turn", "session", res.SessionID, "turn", res.TurnID, "err", serr)
			}
		}
		return res, err
	})
}

// turnWrites are the turns that keep checkpoints running now, by session
// (a session runs one turn at a time), and the paths their calls named.
type turnWrites struct {
	mu     sync.Mutex
	active map[string]*turnWatch
}

// turnWatch is one running turn's: whether another ran beside it, and
// the workspace paths its calls said they write.
type turnWatch struct {
	beside bool
	paths  map[string]bool
}

// begin records that session's turn started; a turn already running makes
// both run beside another.
func (t *turnWrites) begin(session string) *turnWatch {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active == nil {
		t.active = map[string]*turnWatch{}
	}
	w := &turnWatch{paths: map[string]bool{}}
	for _, o := range t.active {
		o.beside, w.beside = true, true
	}
	t.active[session] = w
	return w
}

// end records that session's turn w ended.
func (t *turnWrites) end(session string, w *turnWatch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active[session] == w {
		delete(t.active, session)
	}
}

// wrote records the paths (relative to the workspace, slash-separated) a
// call of session's turn names as written.
func (t *turnWrites) wrote(session string, paths []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.active[session]; w != nil {
		for _, p := range paths {
			w.paths[p] = true
		}
	}
}

// own returns of changes those that are w's turn's: all of them, unless
// another turn ran beside it; then the paths its calls named (and the
// folders made for them), with a note saying what is left out.
func (t *turnWrites) own(w *turnWatch, changes []rewind.Change) ([]rewind.Change, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !w.beside {
		return changes, ""
	}
	mine := changes[:0:0]
	for _, c := range changes {
		if w.paths[c.Path] || c.Before == nil && c.After != nil && c.After.Mode.IsDir() && w.under(c.Path) {
			mine = append(mine, c)
		}
	}
	if len(mine) == len(changes) {
		return mine, ""
	}
	return mine, "another session's turn ran at the same time: only the paths this turn's calls named are kept (a command's other changes are not this turn's to undo)"
}

// under reports whether the turn named a path below the folder dir.
func (w *turnWatch) under(dir string) bool {
	for p := range w.paths {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// recordWrites is the tool_execution middleware (for calls that may
// change files: changesFiles) that tells turnWrites the paths a call
// names as written, before it runs.
func (a *App) recordWrites(ctx context.Context, call *tool.Call, next middleware.ToolNext) (tool.Result, error) {
	if tl, ok := a.rt.Tools().Lookup(call.Name); ok {
		var rels []string
		for _, p := range tool.AccessOf(tl, call.Input).Writes {
			if rel, err := a.rewindFS.Resolve(p); err == nil {
				rels = append(rels, rel)
			}
		}
		a.turns.wrote(call.Scope.SessionID, rels)
	}
	return next(ctx, call)
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
// Rewind does the same, and rewinds the conversation too if asked.
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

// takenFormat is how a checkpoint's time is shown: UTC, to the
// millisecond.
const takenFormat = "2006-01-02T15:04:05.000Z07:00"

// CheckpointView is a checkpoint as orca shows it, in one shape wherever
// it is shown: orca rewind --json and orca serve's API (GET
// /v1/sessions/{id}/checkpoints).
type CheckpointView struct {
	// Turn is the turn's id.
	Turn    string       `json:"turn"`
	Taken   string       `json:"taken"`
	Changes []ChangeView `json:"changes"`
	// Note says what the checkpoint leaves out (rewind.Checkpoint.Note).
	Note string `json:"note,omitempty"`
}

// ChangeView is a path a turn changed.
type ChangeView struct {
	Path string `json:"path"`
	// Kind is made, removed or changed.
	Kind string `json:"kind"`
}

// CheckpointsOf returns cps as CheckpointViews, in their order.
func CheckpointsOf(cps []rewind.Checkpoint) []CheckpointView {
	out := make([]CheckpointView, 0, len(cps))
	for _, cp := range cps {
		v := CheckpointView{Turn: cp.ID, Taken: cp.Taken.UTC().Format(takenFormat), Changes: []ChangeView{}, Note: cp.Note}
		for _, c := range cp.Changes {
			v.Changes = append(v.Changes, ChangeView{Path: c.Path, Kind: changeKind(c)})
		}
		out = append(out, v)
	}
	return out
}

// changeKind is made, removed or changed.
func changeKind(c rewind.Change) string {
	switch {
	case c.Before == nil:
		return "made"
	case c.After == nil:
		return "removed"
	}
	return "changed"
}

// RewoundView is a rewind as orca shows it: orca rewind --json and orca
// serve's API (POST /v1/sessions/{id}/checkpoints/{turn}/rewind).
type RewoundView struct {
	// Rewound: the workspace is as it was before Turn. False when paths
	// that changed since stopped it (Conflicts): nothing was put back.
	Rewound bool `json:"rewound"`
	// Turn is the turn rewound to.
	Turn     string   `json:"turn"`
	Restored []string `json:"restored"`
	// Conflicts changed since the turns changed them: put back only if
	// forced.
	Conflicts []ConflictView `json:"conflicts"`
	// Lost were left as they are: what they were before is not kept.
	Lost []string `json:"lost"`
	// Branch is the session the conversation goes on in, when it was
	// rewound too (RewindOptions.Conversation).
	Branch string `json:"branch,omitempty"`
}

// ConflictView is a path that changed since the turns changed it, and
// how.
type ConflictView struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// RewoundOf returns r as RewoundView.
func RewoundOf(r Rewound) RewoundView {
	v := RewoundView{Rewound: !r.Stopped, Restored: nonNil(r.Restored.Paths), Conflicts: []ConflictView{}, Lost: nonNil(r.Restored.Lost), Branch: r.Branch.ID}
	if len(r.Undone) > 0 {
		v.Turn = r.Undone[0].ID
	}
	for _, c := range r.Restored.Conflicts {
		v.Conflicts = append(v.Conflicts, ConflictView{Path: c.Path, Why: c.Why})
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// DiffView is what one checkpoint changed, path by path, as orca shows
// it: orca serve's API (GET /v1/sessions/{id}/checkpoints/{turn}), and
// orca rewind --diff as text (WriteDiff).
type DiffView struct {
	Turn    string     `json:"turn"`
	Taken   string     `json:"taken"`
	Changes []FileDiff `json:"changes"`
}

// FileDiff is what a checkpoint changed in one path.
type FileDiff struct {
	Path string `json:"path"`
	// Kind is made, removed or changed.
	Kind string `json:"kind"`
	// Type is file, folder or link; a file on either side makes it a file.
	Type string `json:"type"`
	// Diff is a file's change as a unified diff (--- a/PATH, +++ b/PATH,
	// /dev/null on the side where there was none), when both sides are
	// text whose content is kept.
	Diff string `json:"diff,omitempty"`
	// Note says why a file has no Diff (binary, its size; not kept, and
	// why; its mode alone changed), or where a link leads.
	Note string `json:"note,omitempty"`
}

// notKept says why a file's content is not kept.
var notKept = fmt.Sprintf("larger than %s, or past the %s a snapshot reads", llm.ByteSize(rewind.DefaultMaxFile), llm.ByteSize(rewind.DefaultMaxRead))

// DiffOf returns what cp changed, path by path, the files' content read
// with content (rewind.Store.Content).
func DiffOf(cp rewind.Checkpoint, content func(digest string) ([]byte, error)) DiffView {
	text := func(e *rewind.Entry) (string, string) {
		switch {
		case e == nil || !e.Mode.IsRegular():
			return "", ""
		case e.Digest == "":
			return "", "not kept: " + notKept
		}
		b, err := content(e.Digest)
		if err != nil {
			return "", err.Error()
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return "", "binary, " + llm.ByteSize(int64(len(b)))
		}
		return string(b), ""
	}
	v := DiffView{Turn: cp.ID, Taken: cp.Taken.UTC().Format(takenFormat), Changes: []FileDiff{}}
	for _, c := range cp.Changes {
		d := FileDiff{Path: c.Path, Kind: changeKind(c), Type: "file"}
		if !regular(c.Before) && !regular(c.After) {
			d.Type, d.Note = "folder", linkNote(c.Before, c.After)
			if d.Note != "" {
				d.Type = "link"
			}
			v.Changes = append(v.Changes, d)
			continue
		}
		before, whyB := text(c.Before)
		after, whyA := text(c.After)
		if whyB != "" || whyA != "" {
			d.Note = strings.Trim(whyB+"; "+whyA, "; ")
			v.Changes = append(v.Changes, d)
			continue
		}
		p := tool.OneLine(c.Path)
		from, to := "a/"+p, "b/"+p
		if c.Before == nil {
			from = "/dev/null"
		}
		if c.After == nil {
			to = "/dev/null"
		}
		if d.Diff = udiff.Unified(from, to, before, after); d.Diff == "" {
			d.Note = "the same content"
			if c.Before != nil && c.After != nil && c.Before.Mode != c.After.Mode {
				d.Note = fmt.Sprintf("the same content; its mode changed, %v → %v", c.Before.Mode, c.After.Mode)
			}
		}
		v.Changes = append(v.Changes, d)
	}
	return v
}

func regular(e *rewind.Entry) bool { return e != nil && e.Mode.IsRegular() }

// linkNote says where a link led and leads ("" if neither side is a
// link).
func linkNote(before, after *rewind.Entry) string {
	link := func(e *rewind.Entry) string {
		if e == nil || e.Mode&fs.ModeSymlink == 0 {
			return ""
		}
		return tool.OneLine(e.Link)
	}
	from, to := link(before), link(after)
	switch {
	case from == "" && to == "":
		return ""
	case from == "":
		return "a link to " + to
	case to == "":
		return "a link to " + from
	}
	return "a link: " + from + " → " + to
}

// WriteDiff writes what cp changed as orca rewind --diff shows it: a
// file's change as a unified diff; a folder, a link, a binary file or one
// whose content was not kept by its mark (+ made, - removed, ~ changed),
// its path and what there is to say of it. A path is kept on its line
// (tool.OneLine).
func WriteDiff(w io.Writer, cp rewind.Checkpoint, content func(digest string) ([]byte, error)) {
	marks := map[string]string{"made": "+", "removed": "-", "changed": "~"}
	for _, d := range DiffOf(cp, content).Changes {
		switch {
		case d.Diff != "":
			io.WriteString(w, d.Diff)
		case d.Type == "folder":
			fmt.Fprintf(w, "%s %s/\n", marks[d.Kind], tool.OneLine(d.Path))
		default:
			fmt.Fprintf(w, "%s %s (%s)\n", marks[d.Kind], tool.OneLine(d.Path), d.Note)
		}
	}
}
