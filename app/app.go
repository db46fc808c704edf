// Package app is orca's composition root: Open builds, from one Config,
// everything a program needs to run an agent in a workspace the way
// `orca run` and `orca chat` do — the process's services, the settings
// files and trust store, their command hooks, the workspace's trusted
// filesystem extensions, the model, the permission policy, the session
// store with an observation row per event, an optional run timeline, the
// runtime and the session router — and Close releases it all in reverse.
//
//	a, err := app.Open(ctx, app.Config{Workspace: dir, Model: app.ModelConfig{Provider: "anthropic"}})
//	if err != nil { … }
//	defer a.Close()
//	s, err := a.Session(ctx, app.SessionOptions{})
//	res, err := s.Run(ctx, "Fix the failing test")
//
// The CLI, a server or a worker each keep only what is theirs (flags,
// rendering, transport) and call Open.
package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/extension"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/hook/command"
	"github.com/orca-agent/orca/intercept"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/provider"
	"github.com/orca-agent/orca/lsp"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/memory"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/observe"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/session"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/sqlite"
	"github.com/orca-agent/orca/subagent/remote"
	"github.com/orca-agent/orca/telemetry"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/web"
	"github.com/orca-agent/orca/workspace"
)

// telemetryFlush bounds how long Close waits for the last spans and
// metrics to be exported.
const telemetryFlush = 10 * time.Second

// DefaultName is the agent's name unless Config.Name says otherwise: the
// CLI's, so that a program opening the same workspace finds the sessions
// `orca run` started (a runtime's id is its agent's name and workspace).
const DefaultName = "orca"

// DefaultSystemPrompt is the CLI's system prompt: a coding agent in the
// user's workspace.
const DefaultSystemPrompt = `You are orca, a coding agent working in the user's workspace folder.
Use the tools to look before you change anything, make the smallest change that
does the job, check it (run the tests when there are any), and finish with a short
answer that says what you did.`

// Config says what Open builds. Only Workspace and a model (Client or
// Model) are required.
type Config struct {
	// Workspace is the folder the agent works in. Required.
	Workspace string
	// ConfigDir is the user's configuration folder: its orca/settings.json
	// is read, its orca/trust.json says what is trusted, its
	// orca/approvals.json keeps the "always allow" approvals (see
	// config.ApprovalStore), user skills and subagents come from it, and
	// protection guards it. config.Dir() if empty; "-" means none (and
	// approvals last as long as the App).
	ConfigDir string
	// ClaudeDir is the user's Claude Code folder, read beside ConfigDir:
	// its settings.json, skills, agents and CLAUDE.md (see
	// docs/claude-code.md). config.ClaudeDir() if empty; "-" means
	// none.
	ClaudeDir string
	// NoClaude reads none of Claude Code's files and folders — ClaudeDir,
	// the workspace's .claude, CLAUDE.md — only orca's own. (.claude stays
	// protected from the agent all the same.)
	NoClaude bool
	// PluginDirs are Claude Code plugin folders whose hooks run (see
	// config.Plugin), as Claude Code's --plugin-dir.
	PluginDirs []string
	// NoSettings reads no settings files (the user's and the
	// workspace's): only this Config counts.
	NoSettings bool
	// NoMemory sends no memory files (AGENTS.md, CLAUDE.md, ORCA.md …)
	// with the system prompt; NoEnvironment leaves out the section that
	// says where the agent works (folder, git, platform, date).
	NoMemory, NoEnvironment bool
	// Trust trusts the workspace for this App only, without recording it:
	// its own command hooks, allow rules, permission mode and model
	// settings apply.
	Trust bool

	// Client is the model; if nil, Model chooses one.
	Client llm.Client
	// Model chooses the model when Client is nil (see ModelConfig).
	Model ModelConfig
	// Labels name Model's fields in error messages.
	Labels Labels
	// Getenv reads the environment variables that choose the model
	// (ORCA_PROVIDER, ORCA_MODEL), the store (ORCA_STORE_DSN) and, with
	// Telemetry, the OTEL_* ones; os.Getenv if nil.
	Getenv func(string) string

	// Name is the agent's name (DefaultName if empty).
	Name string
	// SystemPrompt is the system prompt of every turn (none if empty;
	// DefaultSystemPrompt is the CLI's), followed by the environment and
	// the memory files (see NoEnvironment, NoMemory), read when Open runs.
	SystemPrompt string
	// MaxIterations caps the model calls of a turn
	// (agent.DefaultMaxIterations if zero).
	MaxIterations int
	// MaxTokens caps the output of one model call
	// (agent.DefaultMaxTokens if zero): an answer cut off there ends its
	// turn as agent.StopMaxTokens.
	MaxTokens int
	// MaxParallelTools caps how many read-only calls of one response run
	// at once (agent.Definition.MaxParallelTools): the settings'
	// "maxParallelTools" if zero, then agent.DefaultMaxParallelTools.
	MaxParallelTools int
	// Verify is the command that checks every finished turn (see
	// agent.Definition.Verify): nil means the settings' "verify", "" none.
	Verify *string
	// ToolProviders are the runtime's tools (nil: the default tool set).
	// The tools of the MCP servers the settings declare come after them.
	ToolProviders []tool.Provider
	// NoMCP starts none of the MCP servers the settings and the
	// workspace's .mcp.json declare.
	NoMCP bool
	// MCPServers are MCP servers to start besides the settings' — a
	// server of a name the settings have replaces theirs —, as the user's
	// own (outside the sandbox): those an editor names for a session
	// (orca acp). NoMCP starts none of them either.
	MCPServers []config.MCPServer
	// MCPLogin, if set, signs a person in to the MCP server it names,
	// should it ask for authorization (orca mcp login).
	MCPLogin *MCPLogin

	// Allow, Deny and Ask are permission rules on top of the settings'.
	Allow, Deny, Ask []string
	// Mode is the permission mode ("": the settings' defaultMode, else
	// default).
	Mode policy.Mode
	// NoSandbox runs commands (Bash, the verification command) without
	// the OS sandbox: the explicit opt-out, like the settings'
	// "sandbox": {"enabled": false}. Without it, where the sandbox cannot
	// be set up (sandbox.Available), commands are refused.
	NoSandbox bool
	// Approver answers the calls the policy asks about (nil:
	// policy.Headless refuses them, saying how to allow them).
	Approver policy.Approver
	// Elicitor asks the person the questions MCP servers ask during a
	// call (agent.Collaborators.Elicitor): nil declines them, saying no
	// one can answer in this run, unless an Elicitation hook answers.
	Elicitor elicit.Elicitor
	// Notifier, if set, is told when the user is needed (a call waits for
	// approval, the chat waits for a prompt), as the settings'
	// Notification hooks are, which run too.
	Notifier hook.Notifier
	// Interceptors wrap every execution of the App's sessions: turns and
	// manual compactions.
	Interceptors []agent.Interceptor
	// Telemetry traces and measures the App's runs with OpenTelemetry as
	// the standard OTEL_* variables say, read with Getenv (see
	// telemetry.FromEnv): off unless they name an OTLP endpoint. Close
	// flushes what is buffered.
	Telemetry bool
	// Tracing, if set, traces and measures the App's runs with this
	// Telemetry instead of one made from the environment (Telemetry): one
	// shared by many Apps, whose spans can nest under its caller's (orca
	// eval's cases). Its owner shuts it down, not the App.
	Tracing *telemetry.Telemetry
	// Checkpoints keeps what each turn changed in the workspace — by the
	// file tools or by commands — under .orca/rewind (package rewind:
	// Checkpoints), for orca rewind.
	Checkpoints bool
	// LanguageServers runs the workspace's language servers (package lsp:
	// those installed for Go, TypeScript and JavaScript, Python and Rust,
	// and the settings' lspServers), each on first use: after a call
	// changes files of their languages, what the servers newly find wrong
	// joins its observation, and the default tool set gets the LSP tool.
	LanguageServers bool

	// Store keeps the sessions (Open does not close one it is given); nil
	// means the PostgreSQL database of StoreDSN, if one is chosen, else
	// the workspace's SQLite store, <workspace>/.orca/orca.db.
	Store store.Store
	// StoreDSN names a PostgreSQL database (postgres://user@host/db) to
	// keep the sessions in when Store is nil, for processes that share
	// them; if empty, $ORCA_STORE_DSN (StoreDSNEnv, read with Getenv),
	// then the user's settings' "store" (a project's never counts).
	StoreDSN string
	// Timeline also writes every event to a new run timeline,
	// .orca/runs/<run>/events.jsonl (App.TimelinePath).
	Timeline bool
	// Logger receives warnings (slog.Default() if nil).
	Logger *slog.Logger
}

// App is an opened Config: everything a program needs to run sessions of
// one agent in one workspace. Its methods are safe for concurrent use.
type App struct {
	cfg       Config
	approvals agent.GrantEditor // the "always allow" approvals
	rows      *observe.Rows
	root      string
	configDir string
	// mcpAuth is the folder of the MCP servers' sign-ins (mcpAuthDir), made
	// once; "" for none.
	mcpAuth string
	// rewind keeps the turns' checkpoints (Config.Checkpoints); nil: none.
	rewind *rewind.Store
	// rewindFS is the workspace as the checkpoints see it; turns the
	// turns that keep checkpoints running now (turnWrites).
	rewindFS workspace.FileSystem
	turns    turnWrites
	// lsp are the workspace's language servers (Config.LanguageServers),
	// nil if none; lspFS and lspHidden the workspace as they see it.
	lsp       *lsp.Set
	lspFS     workspace.FileSystem
	lspHidden func(string) bool
	// search is WebSearch's backend, as the environment configures it
	// (web.FromEnv); nil: off.
	search    web.Searcher
	claudeDir string
	memory    []memory.File
	pathRules []memory.PathRule // the memory rules that apply to some files only
	// mcp is the provider of the MCP servers' tools (nil: none).
	mcp    *mcp.Provider
	mcpAsk runtimeElicitor // the runtime, asked the servers' questions outside any call
	logger *slog.Logger
	// notifier runs the settings' Notification and StopFailure entries
	// (nil: none).
	notifier *command.Notifier
	settings *config.Settings
	sandbox  *sandbox.Runner
	wsID     string
	warnings []config.Warning
	exts     []*extension.Extension
	model    *model
	svc      *agent.Services
	store    store.Store
	rt       *agent.Runtime
	router   *session.Router
	timeline *observe.Timeline
	closers  []func() error

	mu       sync.Mutex
	sessions []*session.LiveSession
	closed   bool
	closeErr error
}

// Open builds everything cfg says, in order: settings and trust, the
// model, the policy, the workspace's extensions (read, not started), the
// services with the settings' command hooks and the trusted extensions on
// them, the store and its observation rows, the timeline, the runtime and
// the router. A Config that cannot be used is a *ConfigError, and nothing
// is left open; other errors (a store that cannot be opened) are returned
// as they are.
func Open(ctx context.Context, cfg Config) (_ *App, err error) {
	a := &App{cfg: cfg}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	logger := cmp.Or(cfg.Logger, slog.Default())
	a.logger = logger
	if a.root, err = CheckWorkspace(cfg.Workspace); err != nil {
		return nil, err
	}
	a.configDir, a.claudeDir = cfg.userDirs()
	a.settings = &config.Settings{}
	if !cfg.NoSettings {
		if a.settings, a.warnings, err = config.Load(config.LoadOptions{Workspace: a.root, ConfigDir: cmp.Or(a.configDir, "-"),
			ClaudeDir: cmp.Or(a.claudeDir, "-"), NoClaude: cfg.NoClaude, TrustOverride: cfg.Trust, PluginDirs: cfg.PluginDirs}); err != nil {
			return nil, &ConfigError{Err: err}
		}
	}
	for _, m := range cfg.MCPServers {
		a.settings.MCPServers = append(slices.DeleteFunc(a.settings.MCPServers, func(s config.MCPServer) bool { return s.Name == m.Name }), m)
	}
	prompt := cfg.SystemPrompt
	{
		var env string
		if !cfg.NoEnvironment {
			env = memory.Environment(a.root, time.Now())
		}
		if !cfg.NoMemory {
			var warns []memory.Warning
			a.memory, a.pathRules, warns = memory.Read(cfg.memoryFolders(a.root, a.configDir, a.claudeDir))
			a.warnings = append(a.warnings, configWarnings(warns)...)
		}
		prompt = memory.SystemPrompt(prompt, env, a.memory)
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if cfg.Client != nil {
		rc := provider.Config{Model: cfg.Model.Model}
		a.model = &model{client: cfg.Client, cfg: rc, aliases: modelAliases(rc, a.settings, getenv)}
	} else if a.model, err = chooseModel(&a.cfg, a.settings, a.root, getenv); err != nil {
		return nil, err
	}
	if a.search, err = web.FromEnv(a.settingsEnv(getenv)); err != nil {
		return nil, fmt.Errorf("WebSearch: %w", err)
	}
	verify := a.settings.Verify
	if cfg.Verify != nil {
		verify = *cfg.Verify
	}
	pol, err := a.policy()
	if err != nil {
		return nil, err
	}
	if !cfg.NoSettings {
		if a.exts, err = a.loadExtensions(); err != nil {
			return nil, err
		}
	}

	a.svc = agent.NewServices(logger)
	a.closers = append(a.closers, a.svc.Close)
	if logger.Enabled(ctx, slog.LevelDebug) {
		// A logger that takes debug lines (orca --verbose) gets every
		// event too, as it happens.
		sub, err := a.svc.Bus.SubscribePrefix("debug-log", "", func(ev event.Event) error {
			b, err := ev.AppendJSON(nil)
			if err != nil {
				return err
			}
			logger.Debug(string(ev.Name), "event", string(b))
			return nil
		})
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() error { sub.Unsubscribe(); return nil })
	}
	interceptors := cfg.Interceptors
	if tel := cfg.Tracing; tel != nil {
		unregister, err := tel.Register(a.svc.Middleware)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() error { unregister(); return nil })
		interceptors = append(slices.Clip(interceptors), tel.Interceptor())
	} else if cfg.Telemetry {
		// Shut down after everything that may still end a span (the
		// sessions, the runtime's background forks) has closed.
		host, port := modelServer(a.model.cfg, getenv)
		tel, err := telemetry.FromEnv(ctx, getenv, telemetry.Options{Provider: a.model.cfg.Provider, ServerAddress: host, ServerPort: port,
			ToolDescription: func(name string) string {
				// Spans come from turns, which start once Open built the
				// runtime.
				if a.rt == nil {
					return ""
				}
				if tl, ok := a.rt.Tools().Lookup(name); ok {
					return tl.Description()
				}
				return ""
			}})
		if err != nil {
			return nil, &ConfigError{Err: fmt.Errorf("telemetry: %w", err)}
		}
		if tel != nil {
			a.closers = append(a.closers, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), telemetryFlush)
				defer cancel()
				return tel.Shutdown(ctx)
			})
			unregister, err := tel.Register(a.svc.Middleware)
			if err != nil {
				return nil, err
			}
			a.closers = append(a.closers, func() error { unregister(); return nil })
			interceptors = append(slices.Clip(interceptors), tel.Interceptor())
		}
	}
	unregister, err := a.settings.RegisterHooksWith(a.svc.Hooks, a.root, a.hookOptions())
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	a.closers = append(a.closers, func() error { unregister(); return nil })
	notifier, err := a.settings.Notifier(a.root, a.notifyFailed)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if a.notifier = notifier; notifier != nil {
		// Closed after the runtime (closers run last first): what a
		// turn's last call sent (a parked call's) runs to its end.
		a.closers = append(a.closers, notifier.Close)
	}
	loaded, err := extension.RegisterExtensions(a.svc, a.exts)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	a.closers = append(a.closers, loaded.Close)

	a.store = cfg.Store
	dsn := ""
	if a.store == nil {
		var from string
		dsn, from = storeDSN(cfg, getenv, a.settings)
		st, err := openStore(ctx, a.root, dsn, from)
		if err != nil {
			return nil, err
		}
		a.store = st
		a.closers = append(a.closers, st.Close)
	}
	// The workspace's id, not its path, names its runtime: moved or
	// copied, it keeps its sessions.
	wsID, err := workspaceID(a.root)
	a.wsID = wsID
	if err != nil {
		logger.Warn("the workspace has no id of its own: its sessions stay with its path", "err", err)
	}
	if o, ok := a.store.(store.Observations); ok {
		// Every event becomes a row: closed after the sessions and the
		// runtime, so that their last events are written.
		rows, err := observe.NewRows(a.svc.Bus, o, logger)
		if err != nil {
			return nil, fmt.Errorf("observation rows: %w", err)
		}
		a.rows = rows
		a.closers = append(a.closers, rows.Close)
	}
	if cfg.Timeline {
		if a.timeline, err = observe.NewTimeline(a.svc.Bus, a.root, newRunID(time.Now())); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, a.timeline.Close)
	}
	if cfg.Checkpoints {
		if err := a.openCheckpoints(pol); err != nil {
			return nil, err
		}
		interceptors = append([]agent.Interceptor{a.checkpointer()}, interceptors...)
	}

	// "Always allow" approvals live in the user's configuration folder,
	// where the workspace (a cloned repository's .orca/orca.db, the
	// agent's own commands) cannot add any.
	var approvals agent.GrantEditor = &agent.MemoryApprovals{}
	if a.configDir != "" {
		if approvals, err = config.NewApprovalStore(a.configDir, a.root); err != nil {
			return nil, err
		}
	}
	a.approvals = approvals
	// Hooks read the conversation as Claude Code's hooks do, from a
	// transcript file (transcript_path), kept only when some hook could
	// read it.
	transcripts, err := a.transcriptDir()
	if err != nil {
		return nil, fmt.Errorf("transcripts: %w", err)
	}
	targets := a.protectedTargets()
	if pol, err = a.guard(pol, targets); err != nil {
		return nil, &ConfigError{Err: err}
	}
	a.mcpAuth = a.mcpAuthDir()
	a.sandbox = a.commandSandbox(cfg, pol, targets)
	if cfg.LanguageServers {
		if a.lsp, err = a.openLanguageServers(pol, getenv); err != nil {
			return nil, err
		}
	}
	folders := a.folders(cfg)
	subagents, err := a.subagents(folders)
	if err != nil {
		return nil, err
	}
	subagents = append(subagents, a.remoteAgents(subagents)...)
	models := catalog.Default().With(a.settings.Models...)
	name := cmp.Or(cfg.Name, DefaultName)
	a.rt, err = agent.New(agent.Definition{
		Name:             name,
		SystemPrompt:     prompt,
		MaxIterations:    cfg.MaxIterations,
		MaxTokens:        cfg.MaxTokens,
		MaxParallelTools: cmp.Or(cfg.MaxParallelTools, a.settings.MaxParallelTools),
		Model:            a.model.cfg.Model,
		ModelAliases:     a.model.aliases,
		Prices:           budget.PricesOf(models).With(a.settings.Prices),
		Catalog:          models,
		Windows:          a.learntWindows(ctx, agent.RuntimeID(name, cmp.Or(wsID, a.root))),
		Verify:           verify,
		ToolProviders:    a.toolProviders(cfg),
		Subagents:        subagents,
	}, agent.Collaborators{
		Client:         a.model.client,
		Fallbacks:      a.model.fallbacks,
		Workspace:      a.root,
		WorkspaceID:    wsID,
		Logger:         logger,
		Services:       a.svc,
		Policy:         pol,
		Approver:       cfg.Approver,
		Elicitor:       cfg.Elicitor,
		Remote:         remote.A2A{},
		Notifier:       a.notifierOrNil(),
		Approvals:      approvals,
		Folders:        folders,
		Sandbox:        a.sandbox,
		TranscriptDir:  transcripts,
		NestedMemory:   nestedMemory(cfg),
		PathRules:      a.pathRules,
		OnWindowLearnt: a.keepWindow,
	})
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.rt.Close)
	a.mcpAsk.rt.Store(a.rt)
	if a.rewind != nil {
		unregister, err := a.svc.Middleware.RegisterToolExecution("orca.checkpoints", a.recordWrites, middleware.When(a.changesFiles))
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() error { unregister(); return nil })
	}
	if a.lsp != nil {
		unregister, err := a.svc.Middleware.RegisterToolExecution("orca.diagnostics", a.diagnostics(a.lsp), middleware.When(a.changesFiles))
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() error { unregister(); return nil })
	}
	if cfg.Store == nil && dsn == "" && wsID != "" {
		// The workspace's own store: sessions an orca without workspace
		// ids started here are the agent's too. (Not a shared database:
		// another machine's folder of the same path is another workspace.)
		if err := adopt(ctx, a.store, a.rt.Definition().Name, a.rt.ID()); err != nil {
			return nil, fmt.Errorf("adopting the workspace's earlier sessions: %w", err)
		}
	}
	a.router = session.NewRouter(a.rt, a.store, intercept.Wrap(agent.NewExecutor(), interceptors...))
	// What the configuration asked for and does not get is an event too,
	// once: for observation rows and whoever watches the bus.
	for _, w := range a.warnings {
		a.svc.Bus.Publish(event.Event{Name: event.ConfigWarning, Time: time.Now(), Scope: scope.Scope{RuntimeID: a.rt.ID()},
			Data: &event.ConfigWarningData{File: w.File, Message: w.Message, Untrusted: w.Untrusted}})
	}
	return a, nil
}

// CheckWorkspace returns dir, absolute and with its links resolved, if it
// is a folder orca can work in; else a *ConfigError naming it.
func CheckWorkspace(dir string) (string, error) {
	if dir == "" {
		return "", configErrorf("no workspace folder")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", configErrorf("workspace %s does not exist", dir)
	case err != nil:
		return "", configErrorf("workspace %s: %v", dir, err)
	case !fi.IsDir():
		return "", configErrorf("workspace %s is not a folder", dir)
	}
	root, err := config.Canonical(dir)
	if err != nil {
		return "", configErrorf("workspace %s: %v", dir, err)
	}
	return root, nil
}

// policy builds the permission policy: the settings' rules, then the
// Config's, in the Config's mode (else the settings').
func (a *App) policy() (*policy.Policy, error) {
	rules, err := a.settings.Rules()
	if err != nil {
		return nil, configErrorf("settings: %v", err)
	}
	extra, err := policy.ParseRules(a.cfg.Allow, a.cfg.Deny, a.cfg.Ask)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	rules.Allow = append(rules.Allow, extra.Allow...)
	rules.Deny = append(rules.Deny, extra.Deny...)
	rules.Ask = append(rules.Ask, extra.Ask...)
	mode := a.cfg.Mode
	if mode != "" {
		m, err := policy.ParseMode(string(mode))
		if err != nil {
			return nil, configErrorf("Config.Mode: %v", err)
		}
		mode = m
	} else {
		mode = a.settings.Mode()
	}
	if mode == policy.ModeBypass && a.settings.Permissions.NoBypass {
		return nil, configErrorf("permission mode bypass is turned off by the settings (permissions.disableBypassPermissionsMode): choose another mode")
	}
	var opts []policy.Option
	if sb := a.settings.Sandbox; sb.AutoAllow && !sb.Disabled && !a.cfg.NoSandbox {
		// Commands that will run in the sandbox run unasked, as the
		// settings ask: only when the sandbox really is there, which
		// is asked when a command is (its server is then the one that
		// runs it), not at every start.
		opts = append(opts, policy.WithSandboxedCommandsIf(func() bool { return a.sandbox.Available() == nil }, sb.ExcludedCommands))
	}
	// The runtime derives the policy to guard its configuration folder.
	p, err := policy.New(mode, rules, opts...)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	return p, nil
}

// loadExtensions reads the workspace's filesystem extensions and what the
// trust policy grants each, without running anything. Resource values
// that cannot be read from the user's settings are a warning: the
// extensions then get none.
func (a *App) loadExtensions() ([]*extension.Extension, error) {
	opts := extension.ExtensionOptions{Workspace: a.root}
	if a.configDir != "" {
		opts.Trust = config.NewTrustStore(a.configDir)
		res, err := config.UserResources(a.configDir)
		if err != nil {
			file := filepath.Join(a.configDir, filepath.FromSlash(config.UserFile))
			a.warnings = append(a.warnings, config.Warning{File: file,
				Message: "extension resources not read: " + strings.TrimPrefix(err.Error(), file+": ")})
		}
		opts.Resources = res
	}
	exts, err := extension.LoadExtensions(opts)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	return exts, nil
}

// OpenStore opens the session store of workspace ws,
// <ws>/.orca/orca.db, creating it if needed. Its errors name the file.
// When it creates the store it also writes .orca/.gitignore (StateIgnore),
// unless the folder has one.
func OpenStore(ws string) (*sqlite.Store, error) {
	root, err := config.Canonical(ws)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", ws, err)
	}
	// The store and the files SQLite keeps beside it stay in the
	// workspace: a link (a cloned repository's .orca -> ~/x) that leads
	// them out is refused.
	var path string
	for _, name := range []string{"orca.db", "orca.db-wal", "orca.db-shm", "orca.db-journal"} {
		p, err := statePath(root, ".orca/"+name)
		if err != nil {
			return nil, fmt.Errorf("cannot open the session store: %w", err)
		}
		if path == "" {
			path = p
		}
	}
	_, statErr := os.Lstat(path)
	st, err := sqlite.Open(path)
	if err != nil {
		// Say the path once.
		msg := strings.TrimPrefix(err.Error(), "sqlite store: open "+path+": ")
		return nil, fmt.Errorf("cannot open the session store %s: %s", path, msg)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		writeStateIgnore(filepath.Dir(path))
	}
	return st, nil
}

// StateIgnore is the .gitignore orca writes in a workspace's .orca folder
// when it creates the session store or the workspace id there (unless the
// folder has one): what orca keeps in the folder for this copy of the
// workspace only, and not for the repository. (The
// workspace id is among them: committed, every clone would share it, and
// a store shared by two clones would take each one's sessions for the
// other's.)
const StateIgnore = `# Written by orca when it first kept state in this folder: what orca
# keeps here for this copy of the workspace only. settings.json, ORCA.md,
# skills/, agents/ and hooks/ are meant to be committed. orca writes this
# file only with a new store or workspace id: edit or delete it as you like.
/orca.db
/orca.db-*
/workspace-id
/runs/
/results/
/transcripts/
/settings.local.json
`

// statePath returns where orca keeps rel (slash-separated, ".orca/…"), a
// file or folder of its state in the workspace root: the path with the
// links it has inside the workspace followed. A link that leads it out of
// the workspace, or nowhere, is refused (workspace.Confine): orca writes
// its state, the sessions, transcripts and timelines among it, only in
// the workspace.
func statePath(root, rel string) (string, error) {
	p, err := workspace.Confine(root, rel)
	if err != nil {
		return "", fmt.Errorf("%w; orca keeps a workspace's state inside it, and follows no link out", err)
	}
	return p, nil
}

// writeStateIgnore writes StateIgnore to dir/.gitignore unless there is
// one. It is a convenience: a folder where it cannot be written loses
// nothing but the convenience, so its error is not the caller's.
func writeStateIgnore(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	_, err = f.WriteString(StateIgnore)
	if cerr := f.Close(); err != nil || cerr != nil {
		os.Remove(f.Name()) // not half a file
	}
}

// newRunID returns a fresh run id, run_<yyyymmdd-hhmmss>_<random hex>: ids
// sort in the order the runs started.
func newRunID(now time.Time) string {
	return "run_" + now.Format("20060102-150405") + "_" + randomHex()
}

func randomHex() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Root returns the workspace folder, absolute with links resolved.
func (a *App) Root() string { return a.root }

// ConfigDir returns the user's configuration folder the App reads, or "".
func (a *App) ConfigDir() string { return a.configDir }

// MemoryFiles returns the memory files sent with the system prompt, in
// order: workspace-relative paths, or absolute ones for the files outside
// it.
func (a *App) MemoryFiles() []string {
	out := make([]string, len(a.memory))
	for i, m := range a.memory {
		out[i] = m.Path
	}
	return out
}

// responses returns the model's responses session id has had: its
// assistant messages, compacted ones too.
func (a *App) responses(ctx context.Context, id string) []llm.Message {
	recs, err := a.store.Records(ctx, id, store.RecordFilter{IncludeCompacted: true})
	if err != nil {
		return nil
	}
	var out []llm.Message
	for _, r := range recs {
		if r.Kind == store.KindMessage && r.Message.Role == llm.RoleAssistant {
			out = append(out, r.Message)
		}
	}
	return out
}

// Grants returns the "always allow" approvals of the App's runtime: what a
// person granted, to review and revoke.
func (a *App) Grants() agent.GrantEditor { return a.approvals }

// Runtime returns the agent runtime.
func (a *App) Runtime() *agent.Runtime { return a.rt }

// Services returns the process's services: hook and middleware
// registries, bus, queues, background tasks.
func (a *App) Services() *agent.Services { return a.svc }

// Rows returns the writer of the observation rows, nil when the store
// keeps none.
func (a *App) Rows() *observe.Rows { return a.rows }

// Store returns the session store.
func (a *App) Store() store.Store { return a.store }

// Settings returns the settings files as they were applied.
func (a *App) Settings() *config.Settings { return a.settings }

// Warnings returns what reading the settings skipped (a workspace's own
// settings an untrusted workspace may not use, marked Untrusted).
func (a *App) Warnings() []config.Warning { return a.warnings }

// SandboxError says why the commands of the App's tools cannot run in the
// OS sandbox here (sandbox.Runner.Available), so that they will be
// refused; nil when they can, or when the sandbox was turned off
// (Config.NoSandbox, the settings' "sandbox": {"enabled": false}). It
// starts the sandbox server the commands then run on, if none is
// running: a program that may run no command need not ask (the commands'
// errors say it).
func (a *App) SandboxError() error {
	return a.sandbox.Available()
}

// Extensions returns the workspace's filesystem extensions, trusted or
// not (an untrusted one never runs: its Reason says why).
func (a *App) Extensions() []*extension.Extension { return a.exts }

// Model returns the model's configuration, as resolved (empty Provider
// for a Client the Config gave).
func (a *App) Model() provider.Config { return a.model.cfg }

// ModelLabel names the model, for people: the provider and the model
// ("anthropic claude-sonnet-4-5"), "script" for the scripted model of
// ModelConfig.Script, "scripted model" for a Client the Config gave.
func (a *App) ModelLabel() string {
	m := a.Model()
	switch {
	case m.Provider == "":
		return "scripted model"
	case m.Provider == ScriptProvider:
		return "script"
	}
	name := m.Model
	if name == "" {
		name = provider.DefaultModel(m.Provider)
	}
	return m.Provider + " " + name
}

// Config returns the configuration the App was opened with.
func (a *App) Config() Config { return a.cfg }

// notifierOrNil is who hears that the user is needed: the settings'
// Notification hooks and Config.Notifier, nil when neither is there (not
// a nil *command.Notifier in an interface).
func (a *App) notifierOrNil() hook.Notifier {
	switch {
	case a.notifier == nil:
		return a.cfg.Notifier
	case a.cfg.Notifier == nil:
		return a.notifier
	}
	return notifiers{a.notifier, a.cfg.Notifier}
}

// notifiers tells each of its Notifiers.
type notifiers []hook.Notifier

func (ns notifiers) Notify(n hook.Notification) {
	for _, x := range ns {
		x.Notify(n)
	}
}

// notifyFailed reports a Notification or StopFailure entry's run that
// failed: a warning in the log, and a hook_failed event of the run that
// sent it.
func (a *App) notifyFailed(note hook.Notification, handler string, err error) {
	ev := command.NotifierEventOf(note.Type)
	a.logger.Warn("a "+ev+" hook failed", "handler", handler, "err", err)
	a.svc.Bus.Publish(event.Event{Name: event.HookFailed, Time: time.Now(), Scope: note.Scope,
		Data: &event.HookFailedData{Hook: ev, Handler: handler, Error: err.Error()}})
}

// hookOptions are what prompt hooks need: the session's client, asking
// the model the alias haiku stands for (Claude Code's default for them),
// else the session's; a hook's own model goes through the alias table.
func (a *App) hookOptions() command.Options {
	model := a.model.cfg.Model
	if m := a.model.aliases["haiku"]; m != "" {
		model = m
	}
	return command.Options{
		Prompt: &command.PromptModel{Client: a.model.client, Model: model},
		Model: func(name string) string {
			if m := a.model.aliases[name]; m != "" {
				return m
			}
			return name
		},
	}
}

// mcpEvents are the events of the MCP servers' changes.
var mcpEvents = map[mcp.ChangeKind]event.Name{
	mcp.Started:      event.MCPServerStarted,
	mcp.Failed:       event.MCPServerFailed,
	mcp.Dropped:      event.MCPServerDropped,
	mcp.Reconnected:  event.MCPServerReconnected,
	mcp.ToolsChanged: event.MCPServerToolsChanged,
}

// mcpChanged publishes an MCP server's change as an mcp_server_* event,
// in the scope of the runtime whose server it is: observation rows and
// timelines keep it.
func (a *App) mcpChanged(ch mcp.Change) {
	name, ok := mcpEvents[ch.Kind]
	if !ok {
		return
	}
	st := ch.Status
	a.svc.Bus.Publish(event.Event{Name: name, Time: time.Now(), Scope: scope.Scope{RuntimeID: ch.RuntimeID},
		Data: &event.MCPServerData{Server: st.Name, Type: st.Type, State: string(st.State), Tools: st.Tools, Info: st.Server,
			Error: st.Error, Added: ch.Added, Removed: ch.Removed}})
}

// mcpLogged publishes a message an MCP server logged as an mcp_log event,
// in the scope of the runtime whose server it is, and tells the logger
// (the CLI's warnings) those at the settings' mcpLogLevel or above.
func (a *App) mcpLogged(l mcp.Log) {
	a.svc.Bus.Publish(event.Event{Name: event.MCPLog, Time: time.Now(), Scope: scope.Scope{RuntimeID: l.RuntimeID},
		Data: &event.MCPLogData{Server: l.Server, Level: l.Level, Logger: l.Logger, Message: l.Message, Dropped: l.Dropped}})
	if slices.Index(mcp.LogLevels, l.Level) < slices.Index(mcp.LogLevels, a.mcpLogShown()) {
		return
	}
	a.logger.Warn("MCP server log", l.Attrs()...)
}

// mcpLogShown is the lowest level of the MCP servers' log messages shown
// to the user: the settings' mcpLogLevel, else warning.
func (a *App) mcpLogShown() string { return cmp.Or(a.settings.MCPLogLevel, "warning") }

// mcpLogAsked is the level the MCP servers are asked to log from: info
// (every message asked for is an event), debug if that is what the user
// is shown.
func (a *App) mcpLogAsked() string {
	if a.mcpLogShown() == "debug" {
		return "debug"
	}
	return mcp.DefaultLogLevel
}

// MCPServers returns the MCP servers' status: those the settings declare,
// up, failed or down (empty without any).
func (a *App) MCPServers() []mcp.Status {
	if a.mcp == nil {
		return nil
	}
	return a.mcp.Status()
}

// pluginFolders are the plugins whose skills and agents the runtime reads.
func pluginFolders(plugins []config.Plugin) []tool.PluginFolder {
	var out []tool.PluginFolder
	for _, p := range plugins {
		out = append(out, tool.PluginFolder{Name: p.Prefix, Dir: p.Dir})
	}
	return out
}

// nestedMemory names the memory files of subfolders the runtime loads when
// the agent first works in one: AGENTS.md, and CLAUDE.md unless Claude
// Code's files are off; none without memory.
func nestedMemory(cfg Config) []string {
	switch {
	case cfg.NoMemory:
		return nil
	case cfg.NoClaude:
		return []string{"AGENTS.md"}
	}
	return []string{"AGENTS.md", "CLAUDE.md"}
}

// transcriptDir is where the runtime keeps the transcripts hooks read:
// beside the session store, when any hook is registered or anyone hears
// notifications (which name the transcript).
func (a *App) transcriptDir() (string, error) {
	if a.notifierOrNil() != nil || slices.ContainsFunc(hook.Names, a.svc.Hooks.Has) {
		return statePath(a.root, ".orca/transcripts")
	}
	return "", nil
}

// TimelinePath returns the file of the run's timeline, or "" without one.
func (a *App) TimelinePath() string {
	if a.timeline == nil {
		return ""
	}
	return a.timeline.Path()
}

// SessionOptions say which session App.Session opens.
type SessionOptions struct {
	// ID names the session: continued if the store has it, started if not.
	// Empty: a new session (or, with Continue, the latest).
	ID string
	// Continue opens the most recently active session of the App's
	// runtime (its agent in its workspace).
	Continue bool
	// Fork starts a new session from the conversation of the one ID or
	// Continue names, leaving that one as it was (session.Router.Fork).
	Fork bool
	// OnEvent is the session's event feed (session.OpenOptions.OnEvent).
	OnEvent func(event.Event)
	// Wait is how long to wait for a session another writer holds
	// (session.OpenOptions.Wait); zero refuses at once.
	Wait time.Duration
	// CallsNotStarted: the calls the session's last response left without
	// a result never started (session.OpenOptions.CallsNotStarted).
	CallsNotStarted bool
	// Cleared: the new session replaces one the user cleared
	// (session.OpenOptions.Cleared).
	Cleared bool
	// GoOn: the session goes on with its turn that parked a call. The
	// scripted model (ModelConfig.Script) then goes on where the script
	// stood when the script is the one that parked it (its response there
	// is the session's last: script.File.Given); another script starts at
	// its first response.
	GoOn bool
}

// Session opens a live session: the one ID names, the workspace's latest
// with Continue, or a new one. A session of another runtime (the
// workspace was moved, or another agent started it) and Continue without
// a session are *ConfigErrors. The App closes the sessions it opened that
// are still open when it closes.
func (a *App) Session(ctx context.Context, opts SessionOptions) (*session.LiveSession, error) {
	id := opts.ID
	switch {
	case opts.Continue && id != "":
		return nil, configErrorf("continue and session %s name two sessions: give one of them", id)
	case opts.Continue:
		ss, err := a.store.Sessions(ctx, store.Filter{RuntimeID: a.rt.ID(), Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("listing the sessions of %s: %w", a.root, err)
		}
		if len(ss) == 0 {
			return nil, configErrorf("workspace %s has no session to continue yet", a.root)
		}
		id = ss[0].ID
	case opts.Fork && id == "":
		return nil, configErrorf("fork needs the session to fork: give its id, or continue the latest")
	case id == "":
		id = session.NewID()
	}
	var ls *session.LiveSession
	var err error
	if opts.Fork {
		forked := session.NewID()
		if a.model.fill != nil {
			a.model.fill(forked, nil)
		}
		ls, err = a.router.Fork(ctx, id, forked, session.OpenOptions{OnEvent: opts.OnEvent, Wait: opts.Wait})
		if errors.Is(err, store.ErrNotFound) {
			return nil, configErrorf("workspace %s has no session %s to fork", a.root, id)
		}
	} else {
		if a.model.fill != nil {
			var done []llm.Message
			if opts.GoOn {
				done = a.responses(ctx, id)
			}
			a.model.fill(id, done)
		}
		ls, err = a.router.Open(ctx, id, session.OpenOptions{OnEvent: opts.OnEvent, Wait: opts.Wait, CallsNotStarted: opts.CallsNotStarted, Cleared: opts.Cleared})
	}
	switch {
	case errors.Is(err, store.ErrWrongRuntime):
		// A runtime is an agent over a workspace: the session is another
		// agent's, or another workspace's (a shared store).
		why := "it belongs to another runtime"
		if s, err := a.store.Session(ctx, id); err == nil {
			_, why = Opens(a.rt.Definition().Name, a.wsID, a.root, s)
		}
		return nil, configErrorf("session %s cannot be opened here: %s", id, why)
	case err != nil:
		return nil, fmt.Errorf("cannot open session %s: %w", id, err)
	}
	a.mu.Lock()
	// A program that opens a session per turn (a durable engine's worker)
	// keeps only those still open.
	a.sessions = slices.DeleteFunc(a.sessions, (*session.LiveSession).Closed)
	a.sessions = append(a.sessions, ls)
	a.mu.Unlock()
	return ls, nil
}

// Close closes what Open built, in reverse: the sessions still open
// (firing SESSION_END), the runtime, the timeline, the observation rows
// (writing what they hold), the store, the extensions, the command hooks,
// the telemetry (exporting what it holds), the services. It is
// idempotent.
func (a *App) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return a.closeErr
	}
	a.closed = true
	sessions := a.sessions
	a.mu.Unlock()
	var errs []error
	for i := len(sessions) - 1; i >= 0; i-- {
		errs = append(errs, sessions[i].Close(context.Background()))
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closeErr = errors.Join(errs...)
	return a.closeErr
}

// ToolDisplays returns how the tools of the default tool set over the
// workspace root show their calls (tool.Display), for a program that shows
// a transcript read from the store, where no runtime ran them; a tool it
// does not know has the zero Display (show its arguments).
func ToolDisplays(root string) func(name string, input json.RawMessage) tool.Display {
	none := func(string, json.RawMessage) tool.Display { return tool.Display{} }
	rt, err := agent.New(agent.Definition{Name: DefaultName, ToolProviders: toolset.Default()}, agent.Collaborators{
		Client: llm.ClientFunc(func(context.Context, *llm.Request, func(llm.Delta)) (*llm.Response, error) {
			return nil, errors.New("no model")
		}),
		Workspace: root, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return none
	}
	defer rt.Close()
	tools := map[string]tool.Tool{}
	for _, t := range rt.Tools().Tools() {
		tools[t.Name()] = t
	}
	return func(name string, input json.RawMessage) tool.Display {
		if t, ok := tools[name]; ok {
			return tool.DisplayOf(t, input)
		}
		return tool.Display{}
	}
}

// userDirs returns the user's configuration folder and Claude Code folder
// that cfg names: ConfigDir and ClaudeDir, config.Dir() and
// config.ClaudeDir() for empty ones (none without a home folder: nothing
// is read or trusted), "" for "-".
func (cfg *Config) userDirs() (configDir, claudeDir string) {
	dir := func(given string, def func() (string, error)) string {
		switch given {
		case "-":
			return ""
		case "":
			d, _ := def()
			return d
		}
		return given
	}
	return dir(cfg.ConfigDir, config.Dir), dir(cfg.ClaudeDir, config.ClaudeDir)
}

// MCPLogin is a sign-in to one MCP server (Config.MCPLogin).
type MCPLogin struct {
	// Server names the server.
	Server string
	// Login shows the person the authorization page and reads a pasted
	// address.
	Login mcp.Login
}
