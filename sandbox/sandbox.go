// Package sandbox runs the commands orca starts on the model's behalf so
// that a rule the policy got wrong is harmless: the operating system, not a
// guess at what a shell line touches, decides what the command can reach.
//
// A Runner starts every command with a scrubbed environment and — unless
// the sandbox was turned off explicitly (Runner.Disabled) — inside the OS
// sandbox of its Policy. On Linux that is:
//
//   - a user namespace, and a PID namespace of the command's own: its
//     whole process tree (daemons, setsid, double forks included) dies
//     with the command, when it ends, when it is killed and when orca dies;
//   - Landlock: the command reads everywhere, but writes only below the
//     Policy's Writable folders (the workspace, the temp folders);
//   - a mount namespace: the Policy's ReadOnly and Reserved paths (.orca, .claude,
//     git's configuration and hooks, those of the repositories in Repos,
//     the user's configuration folder) and its Targets (where links in
//     them lead) are bound read-only, the folders above them pinned so
//     that they cannot be moved aside, and its Hidden paths are covered,
//     so that no spelling — a variable, a glob, a link, python — reaches
//     them; a command is refused (ErrRefused) while a link on the way to
//     one of them is one it could replace, or a target it could create
//     does not exist; /dev/shm is the server's own;
//   - a network namespace with only loopback, unless Policy.Network;
//   - seccomp: no Unix sockets (the host's daemons are reachable through
//     them), unless Policy.UnixSockets.
//
// The sandbox needs Landlock and unprivileged user namespaces. Where it
// cannot be set up, Command fails closed with the reason (Available says
// it beforehand); nothing runs unsandboxed unless Disabled says so.
//
// The commands of one Policy are started by a sandbox server: orca's own
// executable run again (os.Executable) in the namespaces, with the walls
// up, which this package intercepts in an init function, before main —
// any program that links this package can sandbox its commands. A server
// costs one process start; each command then costs a fork, which keeps a
// sandboxed command within a few milliseconds of a plain one (see
// BenchmarkCommand). Servers stop when idle, and die with orca.
package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/protect"
)

// ErrUnavailable is wrapped by the error of a command the sandbox could
// not be set up for.
var ErrUnavailable = errors.New("the OS sandbox is not available")

// ErrRefused is wrapped by the error of a command the sandbox refuses to
// run because it could not keep protected state out of the command's
// reach: a link on the way to it that the command could replace, a link
// target the command could create.
var ErrRefused = errors.New("commands are not run")

// Policy is what a sandboxed command may touch.
type Policy struct {
	// Writable are the folders below which the command may create, change
	// and delete files (the workspace, the temp folders).
	Writable []string
	// ReadOnly are paths below Writable folders that stay read-only
	// (.git/config). A path that does not exist is left out.
	ReadOnly []string
	// Reserved are folders that stay read-only and that a command may
	// not create either (.orca, .claude, .git/hooks, the user's configuration
	// folder): one that is missing is made, empty, first — if its parent
	// folder exists.
	Reserved []string
	// Targets are where links in protected state lead, and the scripts
	// that trusted commands run (see package protect): read-only like
	// ReadOnly. One that does not exist where the command could create it
	// refuses the command (ErrRefused).
	Targets []protect.Target
	// Repos are folders whose git repositories — their own, their
	// submodules', their worktrees', those nested in them — keep their
	// configuration and hooks read-only (protect.Git).
	Repos []string
	// Hidden are paths the command may not read: a folder is covered by
	// an empty one, a file by an empty file.
	Hidden []string
	// Network lets the command use the network; without it, it has only
	// its own loopback.
	Network bool
	// UnixSockets lets the command create Unix sockets, through which it
	// could reach the host's daemons (Docker's, D-Bus, ssh-agent) past the
	// other walls; without it socket(AF_UNIX) fails (socketpair, and
	// pipes, still work).
	UnixSockets bool
}

// WorkspacePolicy is the policy of the commands run in the workspace
// root: the workspace and the temp folders are writable; orca's own state
// (root/.orca: settings, hooks, skills, the session store), Claude Code's
// (root/.claude: settings, hooks, skills, agents, which orca reads too),
// git's configuration and hooks (of root's repositories: Repos), and
// orca's folder of the user's configuration (configDir/orca: settings,
// trust) are not. configDir may be "".
func WorkspacePolicy(root, configDir string) Policy {
	p := Policy{
		Writable: append([]string{root}, TempDirs()...),
		Reserved: []string{filepath.Join(root, ".orca"), filepath.Join(root, ".claude")},
		Repos:    []string{root},
	}
	if configDir != "" {
		p.Reserved = append(p.Reserved, filepath.Join(configDir, "orca"))
	}
	return p
}

// WorkspaceCache returns the folder of the persistent caches of the
// commands run in the workspace root — Go's build cache, npm's, pip's,
// uv's, every tool that keeps its cache in $XDG_CACHE_HOME — made if
// missing: $XDG_CACHE_HOME/orca/sandbox/<the root's digest> (default
// ~/.cache/…). Sandboxed commands may write it (it is in their Policy's
// Writable, and CacheEnv points the tools at it), so a second go test is
// fast; nothing outside the sandbox reads it, so what a command leaves
// there reaches neither the user's own builds nor another workspace's
// commands.
//
// A workspace in a temp folder (orca demo's, a test's: made for one run)
// gets no folder of its own, which would be cold at every run and left
// behind in the user's cache: the workspaces in temp folders share one,
// orca-sandbox-cache-<uid> in os.TempDir() — which their commands could
// write anyway, as they may write any temp folder. "" if there is no
// cache folder to have (or the temp one is not the user's alone).
func WorkspaceCache(root string) string {
	if root == "" {
		return ""
	}
	root = filepath.Clean(root)
	for _, tmp := range TempDirs() {
		if protect.Within(tmp, root) {
			return tempCache()
		}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(base, "orca", "sandbox", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	return dir
}

// tempCache returns the cache folder that the workspaces in temp folders
// share, made if missing; "" if it is not a folder of the user's own
// that only they may write (another user could have made it first).
func tempCache() string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("orca-sandbox-cache-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return ""
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByUser(fi) {
		return ""
	}
	return dir
}

// CacheEnv returns env (DefaultEnv() if nil) with the tools' caches in
// the folder dir (WorkspaceCache): XDG_CACHE_HOME (Go's build cache, pip,
// uv …), GOCACHE (when the environment names one of its own),
// npm_config_cache and YARN_CACHE_FOLDER.
func CacheEnv(env []string, dir string) []string {
	if env == nil {
		env = DefaultEnv()
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "XDG_CACHE_HOME", "GOCACHE", "npm_config_cache", "NPM_CONFIG_CACHE", "YARN_CACHE_FOLDER":
			return true
		}
		return false
	})
	return append(out, "XDG_CACHE_HOME="+dir, "GOCACHE="+filepath.Join(dir, "go-build"),
		"npm_config_cache="+filepath.Join(dir, "npm"), "YARN_CACHE_FOLDER="+filepath.Join(dir, "yarn"))
}

// TempDirs are the temp folders commands may write: os.TempDir(), /tmp
// and /var/tmp.
func TempDirs() []string {
	return clean([]string{os.TempDir(), "/tmp", "/var/tmp"})
}

// Merge returns p with o's paths added (and o's network, if it allows it).
func (p Policy) Merge(o Policy) Policy {
	return Policy{
		Writable:    clean(slices.Concat(p.Writable, o.Writable)),
		ReadOnly:    clean(slices.Concat(p.ReadOnly, o.ReadOnly)),
		Reserved:    clean(slices.Concat(p.Reserved, o.Reserved)),
		Targets:     targets(slices.Concat(p.Targets, o.Targets)),
		Repos:       clean(slices.Concat(p.Repos, o.Repos)),
		Hidden:      clean(slices.Concat(p.Hidden, o.Hidden)),
		Network:     p.Network || o.Network,
		UnixSockets: p.UnixSockets || o.UnixSockets,
	}
}

// Runner starts commands. The zero value runs them in the OS sandbox of
// an empty Policy (nothing writable), with DefaultEnv.
type Runner struct {
	// Policy is what the commands may touch.
	Policy Policy
	// Disabled runs the commands without the OS sandbox: the explicit
	// opt-out (settings: "sandbox": {"enabled": false}). They still get
	// their process group and environment, and a PID namespace where one
	// can be made, so that what they start ends with them.
	Disabled bool
	// Env is the commands' environment (DefaultEnv() if nil).
	Env []string
	// Plain runs the commands as orca's own processes — the user's command
	// hooks, extension handlers, the apiKeyHelper: theirs, run as them —
	// with no sandbox and no namespaces: each the leader of a process
	// group of its own, killed as one by the context, by Kill, and when
	// the leader ends (what it left running goes with it); on Linux the
	// leader is killed if orca dies. Policy and Excluded do not apply; Env is the whole
	// environment (nothing is added to it, WithEnv's variables neither).
	Plain bool
	// Excluded are command names a shell tool runs without the sandbox
	// when every simple command of a line is one of them (settings:
	// sandbox.excludedCommands, such as "docker"). The policy still
	// decides whether they run.
	Excluded []string
}

// envAllowed are the variables DefaultEnv passes on; everything else —
// API keys, tokens, orca's own settings — stays out. Names ending in *
// are prefixes.
var envAllowed = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "TERM", "COLORTERM", "NO_COLOR",
	"LANG", "LANGUAGE", "LC_*", "EDITOR", "VISUAL", "PAGER", "XDG_*",
	"GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOPROXY", "GOTOOLCHAIN", "GOOS", "GOARCH", "CGO_ENABLED",
	"CC", "CXX", "PKG_CONFIG_PATH",
	"NODE_PATH", "VIRTUAL_ENV", "PYTHONPATH", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME",
}

// EnvAllowed returns the names (and prefixes, ending in *) DefaultEnv
// passes on.
func EnvAllowed() []string { return slices.Clone(envAllowed) }

// DefaultEnv returns orca's environment scrubbed to EnvAllowed and the
// names in more (which may end in * too).
func DefaultEnv(more ...string) []string {
	allowed := append(EnvAllowed(), more...)
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if envMatch(allowed, name) {
			out = append(out, kv)
		}
	}
	return out
}

func envMatch(allowed []string, name string) bool {
	for _, a := range allowed {
		if p, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(name, p) || a == name {
			return true
		}
	}
	return false
}

// Command returns the command that runs argv (argv[0] an absolute path)
// in dir, under r. The caller sets its standard streams and starts it.
// ctx kills it, with every process it started, when done.
func (r *Runner) Command(ctx context.Context, dir string, argv ...string) (*Cmd, error) {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return nil, fmt.Errorf("sandbox: the command %q is not an absolute path", argv)
	}
	if r.Plain {
		return &Cmd{ctx: ctx, req: request{Argv: argv, Dir: dir, Env: r.Env}, code: -1, plain: true}, nil
	}
	env := r.Env
	if env == nil {
		env = DefaultEnv()
	}
	if extra := EnvFrom(ctx); len(extra) > 0 {
		env = slices.Concat(env, extra)
	}
	c := &Cmd{ctx: ctx, req: request{Argv: argv, Dir: dir, Env: env}, code: -1}
	if r.Disabled {
		if treeErr() == nil {
			// Without the sandbox's walls, still in a PID namespace: what
			// the command starts dies with it.
			c.spec = spec{Open: true, Network: true}
		} else {
			c.plain = true
		}
		return c, nil
	}
	c.spec = r.spec()
	if err := ready(c.spec); err != nil {
		return nil, err
	}
	return c, nil
}

// Available reports whether r's commands can run as r says, starting the
// sandbox server of r's Policy if none is running yet: an error wrapping
// ErrUnavailable says why they cannot (no Landlock, no user namespaces,
// a wall that could not be put up). The server it starts is the one the
// commands then run on: asking costs nothing more than the first command
// would. Commands without the sandbox (Plain, Disabled) always can: nil.
func (r *Runner) Available() error {
	if r.Plain || r.Disabled {
		return nil
	}
	return ready(r.spec())
}

// spec is what the sandbox server of r's commands sets up.
func (r *Runner) spec() spec {
	p := r.Policy.Merge(Policy{})
	return spec{Writable: p.Writable, ReadOnly: p.ReadOnly, Reserved: p.Reserved, Targets: p.Targets, Repos: p.Repos, Hidden: p.Hidden, Network: p.Network, UnixSockets: p.UnixSockets}
}

func clean(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// targets returns ts with each path once (the first one's By).
func targets(ts []protect.Target) []protect.Target {
	var out []protect.Target
	for _, t := range ts {
		if t.Path != "" && !slices.ContainsFunc(out, func(o protect.Target) bool { return o.Path == t.Path }) {
			out = append(out, protect.Target{Path: filepath.Clean(t.Path), By: t.By})
		}
	}
	return out
}

// spec is what a sandbox server sets up, once, for the commands it runs:
// servers are shared by the commands of one spec.
type spec struct {
	Writable []string         `json:"writable,omitempty"`
	ReadOnly []string         `json:"read_only,omitempty"`
	Reserved []string         `json:"reserved,omitempty"`
	Targets  []protect.Target `json:"targets,omitempty"`
	Repos    []string         `json:"repos,omitempty"`
	Hidden   []string         `json:"hidden,omitempty"`
	Network  bool             `json:"network,omitempty"`
	// UnixSockets: no seccomp filter on socket(AF_UNIX).
	UnixSockets bool `json:"unix_sockets,omitempty"`
	// Open: no walls, only the PID namespaces (the sandbox is disabled).
	Open bool `json:"open,omitempty"`
}

// request is one command for a server.
type request struct {
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

type envKey struct{}

// WithEnv returns a context whose commands (Runner.Command) get the
// NAME=value variables env after the runner's own: a session's variables,
// such as those its SESSION_START hooks wrote (Claude Code's
// CLAUDE_ENV_FILE).
func WithEnv(ctx context.Context, env []string) context.Context {
	if len(env) == 0 {
		return ctx
	}
	return context.WithValue(ctx, envKey{}, slices.Concat(EnvFrom(ctx), env))
}

// EnvFrom returns the variables WithEnv put on ctx.
func EnvFrom(ctx context.Context) []string {
	env, _ := ctx.Value(envKey{}).([]string)
	return env
}
