// Package rewind keeps what a workspace was before an agent changed it,
// and puts it back: by the file tools or by any command — a snapshot of
// the workspace's files is compared with the next, so a `sed -i`, an `rm`
// or a `mv` is seen as well as an Edit.
//
// A Store keeps the content of the workspace's files by digest (each
// content once, under its folder's objects/), and the last snapshot's
// index, so that a snapshot hashes and keeps only the files whose size,
// mode or modification time changed since. A Checkpoint is the changes
// between two snapshots (a turn's); Restore puts back what checkpoints
// changed — and only that: a path none of them changed is never touched,
// a path that changed again since (the user's edit) is a Conflict, left
// as it is unless the caller forces it, and nothing is cleaned: a file is
// removed only if a checkpoint created it and it is still what was
// created.
//
// Files larger than Options.MaxFile are followed by their size and
// modification time only: their changes are known, but not what they
// were (Change.Kept reports it), and Restore refuses to guess.
package rewind

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxFile is the largest file whose content a Store keeps.
const DefaultMaxFile = 16 << 20

// DefaultMaxRead is how much content a snapshot reads and keeps at most
// (a first snapshot of a large folder, a home folder, reads everything):
// past it, the files are followed by size and time only.
const DefaultMaxRead = 1 << 30

// Options configure a Store.
type Options struct {
	// Skip reports whether a workspace path (slash-separated, relative;
	// dir: a folder, skipped with all it holds) is not followed. .git and
	// .orca are never followed, nor the Store's own folder.
	Skip func(rel string, dir bool) bool
	// MaxFile is the largest file whose content is kept (DefaultMaxFile if
	// zero).
	MaxFile int64
	// MaxRead is how much content one snapshot reads and keeps at most
	// (DefaultMaxRead if zero); past it, files are followed by size and
	// time only, and a change to one of them cannot be put back.
	MaxRead int64
	// Walk, if set, walks the workspace instead of filepath.WalkDir (the
	// files the agent sees: git's ignored ones left out), calling fn with
	// each entry's slash-separated path relative to the root, from any
	// goroutine; Skip applies to what it gives too.
	Walk func(ctx context.Context, fn func(rel string, d fs.DirEntry) error) error
}

// Entry is one path of a snapshot.
type Entry struct {
	Mode    fs.FileMode `json:"mode"`
	Size    int64       `json:"size,omitempty"`
	ModTime time.Time   `json:"mtime"`
	// Digest is the sha256 of a file's content ("" for a folder or a
	// link, and for a file larger than MaxFile: not kept).
	Digest string `json:"digest,omitempty"`
	// Link is a symbolic link's target.
	Link string `json:"link,omitempty"`
}

// same reports whether e and o are the same content (a file not kept:
// the same size and time).
func (e *Entry) same(o *Entry) bool {
	switch {
	case e == nil || o == nil:
		return e == o
	case e.Mode.Type() != o.Mode.Type():
		return false
	case e.Mode.IsDir():
		return true
	case e.Mode&fs.ModeSymlink != 0:
		return e.Link == o.Link
	case e.Digest != "" && o.Digest != "":
		return e.Digest == o.Digest && e.Mode.Perm() == o.Mode.Perm()
	}
	return e.Size == o.Size && e.ModTime.Equal(o.ModTime) && e.Mode.Perm() == o.Mode.Perm()
}

// Snapshot is the workspace's paths at a moment.
type Snapshot struct {
	Taken time.Time         `json:"taken"`
	Paths map[string]*Entry `json:"paths"`
}

// Change is what happened to one path: Before and After are nil where it
// did not exist.
type Change struct {
	Path   string `json:"path"`
	Before *Entry `json:"before,omitempty"`
	After  *Entry `json:"after,omitempty"`
}

// Kept reports whether what the path was before is kept, so that it can
// be put back.
func (c Change) Kept() bool {
	b := c.Before
	return b == nil || !b.Mode.IsRegular() || b.Digest != ""
}

// Checkpoint is what changed in the workspace between two snapshots: a
// turn of a session.
type Checkpoint struct {
	Session string    `json:"session"`
	ID      string    `json:"id"`
	Taken   time.Time `json:"taken"`
	Changes []Change  `json:"changes"`
	// Note says what the checkpoint leaves out, if anything: a turn that
	// ran beside another keeps only the paths its own calls named.
	Note string `json:"note,omitempty"`
}

// Store keeps snapshots and checkpoints of one workspace. Its methods may
// be called from any goroutine; two processes share a Store's folder
// safely only one at a time.
type Store struct {
	root, dir string
	opts      Options
	mu        sync.Mutex
	last      *Snapshot
	// pending is the snapshot the next walk takes, for every caller of
	// Take that comes before it starts (guarded by pmu).
	pmu     sync.Mutex
	pending *taking
}

// taking is one walk's snapshot, for the callers of Take that share it.
type taking struct {
	done   chan struct{}
	snap   *Snapshot
	err    error
	joined int // callers that share it (guarded by Store.pmu)
}

// Open returns the Store of the workspace root that keeps what it knows in
// dir (made if missing, 0700).
func Open(root, dir string, opts Options) (*Store, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if opts.MaxFile <= 0 {
		opts.MaxFile = DefaultMaxFile
	}
	if opts.MaxRead <= 0 {
		opts.MaxRead = DefaultMaxRead
	}
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o700); err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	s := &Store{root: root, dir: dir, opts: opts}
	if b, err := os.ReadFile(filepath.Join(dir, "index.json")); err == nil {
		var last Snapshot
		if json.Unmarshal(b, &last) == nil && last.Paths != nil {
			s.last = &last
		}
	}
	return s, nil
}

// Take snapshots the workspace: every path it follows, the content of each
// file whose size, mode or time changed since the last snapshot read again
// and kept. Callers at once share a walk, as a database's writers share a
// commit: each gets a snapshot begun after it called, and many sessions'
// turns (orca serve) take far fewer walks than snapshots. The Snapshot is
// shared: callers only read it.
func (s *Store) Take(ctx context.Context) (*Snapshot, error) {
	for {
		s.pmu.Lock()
		t := s.pending
		if t == nil {
			t = &taking{done: make(chan struct{})}
			s.pending = t
		}
		t.joined++
		s.pmu.Unlock()
		s.mu.Lock()
		select {
		case <-t.done: // another caller's walk, begun after this call
			s.mu.Unlock()
			if t.err != nil && ctx.Err() == nil && (errors.Is(t.err, context.Canceled) || errors.Is(t.err, context.DeadlineExceeded)) {
				continue // the walk's caller went: walk again for this one
			}
			return t.snap, t.err
		default:
		}
		s.pmu.Lock()
		if s.pending == t {
			s.pending = nil // who comes now waits for the next walk
		}
		s.pmu.Unlock()
		t.snap, t.err = s.take(ctx)
		close(t.done)
		s.mu.Unlock()
		return t.snap, t.err
	}
}

// take walks the workspace for Take; s.mu is held.
func (s *Store) take(ctx context.Context) (*Snapshot, error) {
	snap := &Snapshot{Taken: time.Now().UTC(), Paths: map[string]*Entry{}}
	var prev map[string]*Entry
	if s.last != nil {
		prev = s.last.Paths
	}
	var mu sync.Mutex // visit may be called at once (Options.Walk)
	var read atomic.Int64
	visit := func(rel string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(s.root, filepath.FromSlash(rel))
		if s.skip(rel, p, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		e := &Entry{Mode: info.Mode(), ModTime: info.ModTime().UTC()}
		switch {
		case info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			e.Link, _ = os.Readlink(p)
		case info.Mode().IsRegular():
			e.Size = info.Size()
			if old := prev[rel]; old != nil && old.Digest != "" && old.Size == e.Size && old.ModTime.Equal(e.ModTime) && old.Mode == e.Mode {
				e.Digest = old.Digest // unchanged: not read again
			} else if e.Size <= s.opts.MaxFile && read.Add(e.Size) <= s.opts.MaxRead {
				if e.Digest, err = s.keep(p); err != nil {
					return nil // unreadable now: followed by its size and time
				}
			}
		default:
			return nil // devices, sockets, pipes: not a workspace's files
		}
		mu.Lock()
		snap.Paths[rel] = e
		mu.Unlock()
		return nil
	}
	var err error
	if s.opts.Walk != nil {
		err = s.opts.Walk(ctx, visit)
	} else {
		err = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil && p == s.root:
				return err
			case err != nil:
				return nil // gone meanwhile, or unreadable: not followed
			case p == s.root:
				return nil
			}
			return visit(filepath.ToSlash(p[len(s.root)+1:]), d)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("rewind: snapshot of %s: %w", s.root, err)
	}
	if s.last != nil && samePaths(s.last.Paths, snap.Paths) {
		// Nothing changed since the last snapshot: its index says it all
		// (a turn that only read writes none).
		s.last = snap
		return snap, nil
	}
	b, err := json.Marshal(snap)
	if err == nil {
		err = writeAtomic(filepath.Join(s.dir, "index.json"), b, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("rewind: keeping the snapshot: %w", err)
	}
	s.last = snap
	return snap, nil
}

// samePaths reports whether a and b hold the same paths with the same
// entries.
func samePaths(a, b map[string]*Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for p, e := range a {
		o := b[p]
		if o == nil || *o != *e && !(o.Mode == e.Mode && o.Size == e.Size && o.ModTime.Equal(e.ModTime) && o.Digest == e.Digest && o.Link == e.Link) {
			return false
		}
	}
	return true
}

// skip reports whether rel (at p) is not followed.
func (s *Store) skip(rel, p string, dir bool) bool {
	top, _, _ := strings.Cut(rel, "/")
	if top == ".git" || top == ".orca" || p == s.dir {
		return true
	}
	return s.opts.Skip != nil && s.opts.Skip(rel, dir)
}

// keep stores the file at p by its content's digest and returns it.
func (s *Store) keep(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.opts.MaxFile+1))
	if err != nil {
		return "", err
	}
	if int64(len(data)) > s.opts.MaxFile {
		return "", errors.New("grew past MaxFile")
	}
	sum := sha256.Sum256(data)
	d := hex.EncodeToString(sum[:])
	obj := s.object(d)
	if _, err := os.Stat(obj); err == nil {
		return d, nil
	}
	if err := os.MkdirAll(filepath.Dir(obj), 0o700); err != nil {
		return "", err
	}
	return d, writeAtomic(obj, data, 0o600)
}

// Content returns the content kept under digest d (an Entry's Digest).
func (s *Store) Content(d string) ([]byte, error) {
	if len(d) != sha256.Size*2 || strings.Trim(d, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("rewind: %q is no content's digest", d)
	}
	b, err := os.ReadFile(s.object(d))
	if err != nil {
		return nil, fmt.Errorf("rewind: the content %s is not kept: %w", d[:12], err)
	}
	return b, nil
}

// object is where the content of digest d is kept.
func (s *Store) object(d string) string { return filepath.Join(s.dir, "objects", d[:2], d[2:]) }

// Diff returns what changed from a to b, by path.
func Diff(a, b *Snapshot) []Change {
	var out []Change
	for p, before := range a.Paths {
		if after := b.Paths[p]; !before.same(after) {
			out = append(out, Change{Path: p, Before: before, After: after})
		}
	}
	for p, after := range b.Paths {
		if a.Paths[p] == nil {
			out = append(out, Change{Path: p, After: after})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Save keeps cp, the changes of one turn of a session.
func (s *Store) Save(cp Checkpoint) error {
	if !validName(cp.Session) || !validName(cp.ID) {
		return fmt.Errorf("rewind: checkpoint %q of session %q: want names without slashes", cp.ID, cp.Session)
	}
	if cp.Taken.IsZero() {
		cp.Taken = time.Now().UTC()
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "checkpoints", cp.Session)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	return writeAtomic(filepath.Join(dir, cp.ID+".json"), b, 0o600)
}

// Checkpoints returns the session's checkpoints, oldest first.
func (s *Store) Checkpoints(session string) ([]Checkpoint, error) {
	if !validName(session) {
		return nil, fmt.Errorf("rewind: session %q: want a name without slashes", session)
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "checkpoints", session))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rewind: %w", err)
	}
	var out []Checkpoint
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, "checkpoints", session, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("rewind: %w", err)
		}
		var cp Checkpoint
		if err := json.Unmarshal(b, &cp); err != nil {
			return nil, fmt.Errorf("rewind: checkpoint %s of session %s: %w", e.Name(), session, err)
		}
		out = append(out, cp)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Taken.Before(out[j].Taken) })
	return out, nil
}

// Conflict is a path that changed since the checkpoints changed it: it is
// not what the last of them left.
type Conflict struct {
	Path string
	Why  string
}

// Restored is what Restore did.
type Restored struct {
	// Paths were put back as they were before the checkpoints (removed if
	// they did not exist).
	Paths []string
	// Conflicts changed since; they are left as they are unless forced.
	Conflicts []Conflict
	// Lost are paths whose earlier content was not kept (larger than
	// MaxFile): left as they are.
	Lost []string
}

// Restore puts back what cps changed (a session's checkpoints from the one
// to rewind to on, in any order): each path as it was before the first of
// them changed it. Only those paths are touched. A path that is not now
// what the last of them left is a Conflict: without force nothing at all
// is restored then, and Restored lists the conflicts; with force it is
// put back too. A path whose earlier content was not kept is Lost, and
// left as it is.
func (s *Store) Restore(cps []Checkpoint, force bool) (Restored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cps = slices.Clone(cps)
	sort.SliceStable(cps, func(i, j int) bool { return cps[i].Taken.Before(cps[j].Taken) })
	first, last := map[string]*Entry{}, map[string]*Entry{}
	var paths []string
	for _, cp := range cps {
		for _, c := range cp.Changes {
			if _, seen := first[c.Path]; !seen {
				first[c.Path] = c.Before
				paths = append(paths, c.Path)
			}
			last[c.Path] = c.After
		}
	}
	var r Restored
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return r, fmt.Errorf("rewind: %w", err)
	}
	defer root.Close()
	for _, p := range paths {
		if first[p] != nil && first[p].Mode.IsRegular() && first[p].Digest == "" {
			r.Lost = append(r.Lost, p)
			continue
		}
		now, err := s.stat(root, p)
		if err != nil {
			return r, err
		}
		if !now.same(last[p]) {
			r.Conflicts = append(r.Conflicts, Conflict{Path: p, Why: describe(last[p], now)})
		}
	}
	if len(r.Conflicts) > 0 && !force {
		return r, nil
	}
	// Folders first made, files then, in path order; what is removed,
	// deepest first, so that a folder is empty when its turn comes.
	sort.Strings(paths)
	var remove []string
	for _, p := range paths {
		before := first[p]
		if slices.Contains(r.Lost, p) {
			continue
		}
		if before == nil {
			remove = append(remove, p)
			continue
		}
		if err := s.put(root, p, before); err != nil {
			return r, fmt.Errorf("rewind: putting back %s: %w", p, err)
		}
		r.Paths = append(r.Paths, p)
	}
	slices.Reverse(remove)
	for _, p := range remove {
		err := root.Remove(filepath.FromSlash(p))
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist):
			r.Paths = append(r.Paths, p)
		case isNotEmpty(err):
			// A folder the checkpoints made that holds what they did not
			// make: left, with what it holds.
		default:
			return r, fmt.Errorf("rewind: removing %s: %w", p, err)
		}
	}
	sort.Strings(r.Paths)
	// The next snapshot reads what was put back again: a path put back
	// with the size and time it had may hold other content than the
	// index remembers.
	if s.last != nil {
		for _, p := range paths {
			delete(s.last.Paths, p)
		}
		if b, err := json.Marshal(s.last); err == nil {
			err = writeAtomic(filepath.Join(s.dir, "index.json"), b, 0o600)
			if err != nil {
				os.Remove(filepath.Join(s.dir, "index.json"))
				s.last = nil
			}
		}
	}
	return r, nil
}

// stat returns path p as it is now (nil if missing, or if a link on its
// way leads out of the workspace), its content's digest computed for a
// file small enough.
func (s *Store) stat(root *os.Root, p string) (*Entry, error) {
	name := filepath.FromSlash(p)
	info, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return &Entry{Mode: fs.ModeIrregular}, nil // out of reach (a link out): a conflict
	}
	e := &Entry{Mode: info.Mode(), ModTime: info.ModTime().UTC()}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		e.Link, _ = root.Readlink(name)
	case info.Mode().IsRegular():
		e.Size = info.Size()
		if e.Size <= s.opts.MaxFile {
			b, err := root.ReadFile(name)
			if err != nil {
				return nil, fmt.Errorf("rewind: %w", err)
			}
			sum := sha256.Sum256(b)
			e.Digest = hex.EncodeToString(sum[:])
		}
	}
	return e, nil
}

// put makes path p what e says: a folder, a link, or a file of the kept
// content, its mode and time. Everything goes through root: a link on the
// way that leads out of the workspace is an error, never followed.
func (s *Store) put(root *os.Root, p string, e *Entry) error {
	name := filepath.FromSlash(p)
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch {
	case e.Mode.IsDir():
		if info, err := root.Lstat(name); err == nil && !info.IsDir() {
			if err := root.Remove(name); err != nil {
				return err
			}
		}
		if err := root.Mkdir(name, e.Mode.Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case e.Mode&fs.ModeSymlink != 0:
		if err := removeFile(root, name); err != nil {
			return err
		}
		return root.Symlink(e.Link, name)
	}
	data, err := os.ReadFile(s.object(e.Digest))
	if err != nil {
		return fmt.Errorf("its content (%s) is not kept: %w", e.Digest[:12], err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != e.Digest {
		return fmt.Errorf("its kept content (%s) is damaged", e.Digest[:12])
	}
	if info, err := root.Lstat(name); err == nil && info.IsDir() {
		return fmt.Errorf("a folder is there now")
	}
	if err := removeFile(root, name); err != nil { // a link is replaced, not written through
		return err
	}
	tmp := name + ".rewind-" + e.Digest[:12]
	if err := root.WriteFile(tmp, data, e.Mode.Perm()); err != nil {
		return err
	}
	err = root.Chmod(tmp, e.Mode.Perm()) // WriteFile's mode is masked by the umask
	if err == nil {
		err = root.Chtimes(tmp, e.ModTime, e.ModTime)
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// removeFile removes a file or link at name, if there is one.
func removeFile(root *os.Root, name string) error {
	info, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || info.IsDir() {
		return err
	}
	return root.Remove(name)
}

// describe says how now differs from what was left.
func describe(left, now *Entry) string {
	switch {
	case left == nil:
		return "it was removed, and is there again"
	case now == nil:
		return "it was removed since"
	case left.Mode.Type() != now.Mode.Type():
		return "it is another kind of file now"
	}
	return "it changed since"
}

func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// Forget removes the session's checkpoints, and the kept content no
// checkpoint left and no file of the last snapshot needs.
func (s *Store) Forget(session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !validName(session) {
		return fmt.Errorf("rewind: session %q: want a name without slashes", session)
	}
	if err := os.RemoveAll(filepath.Join(s.dir, "checkpoints", session)); err != nil {
		return fmt.Errorf("rewind: %w", err)
	}
	return s.prune()
}

// Remove removes checkpoints of the session (those a rewind undid), and
// the kept content nothing needs any more.
func (s *Store) Remove(session string, ids ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !validName(session) || !validName(id) {
			return fmt.Errorf("rewind: checkpoint %q of session %q: want names without slashes", id, session)
		}
		if err := os.Remove(filepath.Join(s.dir, "checkpoints", session, id+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rewind: %w", err)
		}
	}
	return s.prune()
}

// validName reports whether a session's or a checkpoint's name may name a
// file of the store: not empty, no slash, not starting with a dot.
func validName(n string) bool {
	return n != "" && !strings.ContainsAny(n, `/\`) && !strings.HasPrefix(n, ".")
}

// prune removes the kept content nothing needs.
func (s *Store) prune() error {
	need := map[string]bool{}
	if s.last != nil {
		for _, e := range s.last.Paths {
			need[e.Digest] = true
		}
	}
	sessions, _ := os.ReadDir(filepath.Join(s.dir, "checkpoints"))
	for _, d := range sessions {
		cps, err := s.Checkpoints(d.Name())
		if err != nil {
			return err // keep everything rather than lose what a damaged file needs
		}
		for _, cp := range cps {
			for _, c := range cp.Changes {
				for _, e := range []*Entry{c.Before, c.After} {
					if e != nil {
						need[e.Digest] = true
					}
				}
			}
		}
	}
	return filepath.WalkDir(filepath.Join(s.dir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if d := filepath.Base(filepath.Dir(p)) + d.Name(); !need[d] {
			os.Remove(p)
		}
		return nil
	})
}

// writeAtomic writes data to p through a temporary file beside it.
func writeAtomic(p string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+path.Base(filepath.ToSlash(p))+".rewind-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
