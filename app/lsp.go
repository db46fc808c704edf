package app

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/lsp"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/workspace"
)

// LanguageServers returns the language servers of a workspace whose
// settings are s: those orca finds installed (lsp.Detected, lookPath:
// exec.LookPath if nil), and the settings' and plugins' (lspServers) over
// them — a configured server takes the extensions it names from a
// detected one, and one set to false is not started. A project's servers
// are in s only when the workspace is trusted.
func LanguageServers(s *config.Settings, lookPath func(string) (string, error)) []lsp.Server {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var configured []lsp.Server
	off := map[string]bool{}
	claimed := map[string]bool{}
	for _, c := range s.LSPServers {
		if c.Off {
			off[c.Name] = true
			continue
		}
		configured = append(configured, lsp.Server{Name: c.Name, Command: c.Command, Args: c.Args, Env: c.Env, Languages: c.ExtensionToLanguage,
			InitializationOptions: c.InitializationOptions, Settings: c.Settings, StartupTimeout: c.StartupTimeout, MaxRestarts: c.MaxRestarts})
		for ext := range c.ExtensionToLanguage {
			claimed[ext] = true
		}
	}
	var out []lsp.Server
	for _, d := range lsp.Detected(lookPath) {
		taken := off[d.Name]
		for ext := range d.Languages {
			taken = taken || claimed[ext]
		}
		if taken {
			continue
		}
		out = append(out, d)
	}
	return append(out, configured...)
}

// lookPathIn returns a lookPath that finds commands in the folders of
// path, a $PATH.
func lookPathIn(path string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" || !filepath.IsAbs(dir) {
				continue
			}
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", exec.ErrNotFound
	}
}

// openLanguageServers makes the workspace's Set of language servers
// (Config.LanguageServers), those installed found on the PATH getenv
// gives: none starts before a file of its language is
// changed or asked about. Nil if there is none to run.
func (a *App) openLanguageServers(pol *policy.Policy, getenv func(string) string) (*lsp.Set, error) {
	servers := LanguageServers(a.settings, lookPathIn(getenv("PATH")))
	if len(servers) == 0 {
		return nil, nil
	}
	fsys, err := workspace.OpenLocal(a.root)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, fsys.Close)
	var hidden func(string) bool
	if pol != nil && pol.DeniesReads() {
		hidden = func(rel string) bool { return pol.ReadDenied(fsys, rel) }
	}
	set, err := lsp.New(servers, lsp.Options{FS: fsys, Runner: a.sandbox, Hidden: hidden, Logger: a.logger})
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	a.closers = append(a.closers, set.Close)
	a.lspHidden = hidden
	a.lspFS = fsys
	return set, nil
}

// diagnostics is the tool_execution middleware that adds to the
// observation of a call that changed files what their language servers
// newly find wrong in them (lsp.Set.Changed): the paths a call writes
// (Edit, Write), and — while a server runs — the files of its languages
// a command changed, seen by their size and time before and after it.
func (a *App) diagnostics(set *lsp.Set) middleware.ToolExecutionFunc {
	return func(ctx context.Context, call *tool.Call, next middleware.ToolNext) (tool.Result, error) {
		tl, ok := a.rt.Tools().Lookup(call.Name)
		if !ok {
			return next(ctx, call)
		}
		acc := tool.AccessOf(tl, call.Input)
		var before map[string]stamp
		if acc.Command != "" && set.Running() {
			before = a.stamps(ctx, set)
		}
		if before == nil && !slices.ContainsFunc(acc.Writes, set.Handles) {
			return next(ctx, call)
		}
		res, err := next(ctx, call)
		if err != nil || res.IsError {
			return res, err
		}
		paths := slices.DeleteFunc(slices.Clone(acc.Writes), func(p string) bool { return !set.Handles(p) })
		if before != nil {
			after := a.stamps(ctx, set)
			for rel, st := range after {
				if b, ok := before[rel]; !ok || b != st {
					paths = append(paths, rel)
				}
			}
			for rel := range before {
				if _, ok := after[rel]; !ok {
					paths = append(paths, rel) // deleted
				}
			}
		}
		res.Content += set.Changed(ctx, paths).String()
		return res, nil
	}
}

// stamp is what tells a file changed: its size and modification time.
type stamp struct {
	size int64
	mod  time.Time
}

// stamps returns the stamps of the workspace's files the Set's servers
// serve, as the agent sees the workspace (builtin.WalkVisible).
func (a *App) stamps(ctx context.Context, set *lsp.Set) map[string]stamp {
	var mu sync.Mutex
	out := map[string]stamp{}
	_ = builtin.WalkVisible(ctx, a.lspFS, a.lspHidden, func(rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() || !set.Handles(rel) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		mu.Lock()
		out[rel] = stamp{fi.Size(), fi.ModTime()}
		mu.Unlock()
		return nil
	})
	return out
}
