package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/orca-agent/orca/workspace"
)

// WalkVisible calls fn for every entry of the workspace fsys that git
// would not ignore and hidden does not hide, as Glob and Grep see them
// (walkVisible, from the root): what else sees the workspace as the agent
// does uses it (rewind's snapshots). fn is called from several goroutines.
func WalkVisible(ctx context.Context, fsys workspace.FileSystem, hidden func(string) bool, fn workspace.WalkFunc) error {
	return walkVisible(ctx, fsys, ".", hidden, fn)
}

// walkVisible calls fn for every entry below the folder dir (a clean path
// relative to the workspace root) that git would not ignore: ".git" is
// always skipped, and so is whatever .git/info/exclude and the .gitignore
// files of dir, its parents and its subfolders exclude. Like
// workspace.FileSystem.Walk, which it uses, it walks in parallel and calls
// fn from several goroutines; fn sees a folder before its contents and may
// return fs.SkipDir for it.
//
// Entries hidden reports (those a deny rule on reading covers) are left
// out too, a folder with all it holds.
//
// Glob and Grep share this walk, so that they agree on which files exist.
func walkVisible(ctx context.Context, fsys workspace.FileSystem, dir string, hidden func(string) bool, fn workspace.WalkFunc) error {
	// rules maps a folder to the patterns that apply to its entries, in
	// increasing priority. A folder's entry is stored (by the callback that
	// sees the folder) before the walk reads the folder, so every lookup of
	// a parent finds it.
	var rules sync.Map
	var base []gitignore.Pattern
	base = appendPatterns(base, fsys, ".git/info/exclude", nil)
	base = appendPatterns(base, fsys, ".gitignore", nil)
	if dir != "." {
		parts := strings.Split(dir, "/")
		for i := range parts {
			base = appendPatterns(base, fsys, path.Join(path.Join(parts[:i+1]...), ".gitignore"), parts[:i+1])
		}
	}
	rules.Store(dir, base)
	opener, _ := fsys.(workspace.DirOpener)

	return fsys.Walk(ctx, dir, func(p string, d fs.DirEntry) error {
		name := path.Base(p)
		if name == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil // a worktree's .git file
		}
		if hidden != nil && hidden(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		parent := path.Dir(p)
		v, _ := rules.Load(parent)
		pats, _ := v.([]gitignore.Pattern)
		isDir := d.IsDir()
		if len(pats) > 0 && ignored(pats, strings.Split(p, "/"), isDir) {
			if isDir {
				return fs.SkipDir
			}
			return nil
		}
		if isDir {
			own := pats[:len(pats):len(pats)]
			if opener != nil {
				own = appendDirPatterns(own, fsys, opener, p)
			} else {
				own = appendPatterns(own, fsys, p+"/.gitignore", strings.Split(p, "/"))
			}
			rules.Store(p, own)
		}
		return fn(p, d)
	})
}

// ignored reports whether the last matching pattern excludes the entry, as
// gitignore.Matcher does.
func ignored(pats []gitignore.Pattern, parts []string, isDir bool) bool {
	for i := len(pats) - 1; i >= 0; i-- {
		switch pats[i].Match(parts, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}

// appendPatterns appends the patterns of the ignore file name, which apply
// to the folder domain, to pats. A missing or unreadable file adds nothing.
func appendPatterns(pats []gitignore.Pattern, fsys workspace.FileSystem, name string, domain []string) []gitignore.Pattern {
	// Stat first: opening a FIFO named .gitignore would block the walk.
	if fi, err := fsys.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return pats
	}
	data, err := fsys.ReadFile(name)
	if err != nil {
		return pats
	}
	return parsePatterns(pats, data, domain)
}

// appendDirPatterns appends the patterns of the .gitignore file of the
// folder dir to pats, as appendPatterns does, but looks for the file from
// the folder held open, which costs a few system calls where Stat costs
// two per folder of the path. A .gitignore that is there but not a regular
// file (a symlink, which appendPatterns follows; a FIFO, which it skips)
// and a folder that cannot be opened take appendPatterns' way.
func appendDirPatterns(pats []gitignore.Pattern, fsys workspace.FileSystem, opener workspace.DirOpener, dir string) []gitignore.Pattern {
	name := dir + "/.gitignore"
	d, err := opener.OpenDir(dir)
	if err != nil {
		return appendPatterns(pats, fsys, name, strings.Split(dir, "/"))
	}
	f, err := d.OpenFile(".gitignore")
	d.Close()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return pats
	case err != nil:
		return appendPatterns(pats, fsys, name, strings.Split(dir, "/"))
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return pats
	}
	return parsePatterns(pats, data, strings.Split(dir, "/"))
}

// parsePatterns appends the patterns of an ignore file's contents, which
// apply to the folder domain, to pats.
func parsePatterns(pats []gitignore.Pattern, data []byte, domain []string) []gitignore.Pattern {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		pats = append(pats, gitignore.ParsePattern(line, domain))
	}
	return pats
}
