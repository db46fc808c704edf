// Package config is the configuration orca reads from outside a program:
// the settings files — permission rules, a default permission mode and
// command hooks in Claude Code's format, plus orca's model, prices and
// verification — the trust store that says which workspaces' own settings
// and which filesystem extensions may take effect, and the one definition
// of the user's configuration folder (Dir) in which both live.
//
// Settings files, read in this order (later ones extend earlier ones):
//
//	<claude>/settings.json                  the user's Claude Code settings
//	<config>/orca/settings.json             the user's, for every workspace
//	<workspace>/.claude/settings.json       the project's Claude Code settings, checked in
//	<workspace>/.orca/settings.json         the project's, checked in
//	<workspace>/.claude/settings.local.json the project's Claude Code settings, kept out of version control
//	<workspace>/.orca/settings.local.json   the project's, kept out of version control
//
// where <config> is Dir() and <claude> is ClaudeDir(): at each level
// (user, project, local) Claude Code's file comes first and orca's extends
// it. LoadOptions.NoClaude leaves Claude Code's files out. Permission lists
// and hooks concatenate; a later defaultMode replaces an earlier one.
//
// Claude Code's files are read as orca's, with three differences: their
// "model" names a Claude model, used only when the provider is anthropic
// (Settings.ClaudeModel); a defaultMode orca does not have ("auto") is
// a warning, not an error; and orca's own keys are not expected there.
// In every file, what orca does not know — a key, a hook event, a hook
// type — is a warning and the rest of the file applies; "disableAllHooks":
// true turns the files' hooks off.
//
// Beside Claude Code's keys, a file may choose the model — "provider",
// "model", "base_url" — say which models the model aliases of subagent
// definitions stand for (model: sonnet), over the provider's own table
// (llm/provider.ModelAliases):
//
//	{"modelAliases": {"sonnet": "qwen3-coder", "haiku": "qwen3:4b"}}
//
// and price models for the cost budget, per model name:
//
//	{"prices": {"my-model": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}}
//
// in US dollars per million tokens (a price left out is 0); a later file's
// entry for a model, or for an alias, replaces an earlier one's. Model
// aliases, like the model, belong to the file's provider if it names one.
// The "sandbox" key, in Claude Code's shape, says how commands are
// sandboxed (see Sandbox). "maxParallelTools" caps how many read-only
// calls of one model response run at once (1: one after another, and the
// model is asked for one call per response). "store", in the user's files
// only, is the DSN of a PostgreSQL database that keeps the sessions
// instead of the workspace's SQLite file (Settings.Store).
//
// Project files come with the workspace, so a cloned repository could use
// them to run commands or grant itself permissions. Their hooks therefore
// run only in a workspace the user trusts (TrustStore, kept in the user's
// configuration folder, outside any workspace); in an untrusted workspace,
// their allow rules and a defaultMode that allows more than "default" are
// skipped too, while their deny and ask rules, which only restrict, apply;
// so are sandbox settings that loosen the sandbox, their base_url (which could send the user's API key elsewhere) and
// prices (which could hide spending from the cost budget). Their provider,
// model and modelAliases, a choice of model like the user's flags, always
// apply. The user's own file is always applied in full.
//
// The command hooks themselves — how they run and answer — are package
// hook/command's.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/hook/command"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
)

// Settings are the merged settings files of a workspace.
type Settings struct {
	// Permissions are the files' permission rules, concatenated in file
	// order, and the last defaultMode given.
	Permissions Permissions
	// Hooks are the command hooks that may run, in file order, then the
	// plugins' (Plugins).
	Hooks []command.Spec
	// MCPServers are the MCP servers to start: those of Claude Code's
	// user scope (ClaudeStateFile), the settings files' "mcpServers" (a
	// project file's only in a trusted workspace), the workspace's
	// .mcp.json servers that are approved (MCPApproval) in a trusted
	// workspace, those of Claude Code's local scope for the workspace
	// (ClaudeStateFile), then the plugins', in that order; a later one of
	// a name replaces an earlier.
	MCPServers []MCPServer
	// LSPServers are the language servers of the settings files'
	// "lspServers" (a project file's only in a trusted workspace), then
	// the plugins'; a later one of a name replaces an earlier.
	LSPServers []LSPServer
	// A2AAgents are the remote Agent2Agent agents the settings files'
	// "a2aAgents" name as subagents (a project file's only in a trusted
	// workspace); a later one of a name replaces an earlier.
	A2AAgents []A2AAgent
	// MCPApproval says which of .mcp.json's servers may start (the files'
	// approval keys, and those of the workspace's entry in Claude Code's
	// state file, together).
	MCPApproval MCPApproval
	// EnabledPlugins are the files' "enabledPlugins": Claude Code plugins
	// by name@marketplace, later files over earlier ones.
	EnabledPlugins map[string]bool
	// Plugins are the plugins whose hooks were read (LoadOptions.PluginDirs
	// and the enabled plugins Claude Code installed), in order.
	Plugins []Plugin
	// UserModel is the model choice of the user's file, ProjectModel that
	// of the project's files (settings.local.json over settings.json).
	// They stay apart so that a program can weigh them against its flags
	// and the environment (llm/provider.Resolve does).
	UserModel, ProjectModel ModelSettings
	// Prices price models for the cost budget, over the defaults (see
	// budget.Prices.With); nil if no file has any.
	Prices budget.Prices
	// Models are what the files' "models" say of models, over orca's
	// catalog (catalog.Catalog.With: a field left out keeps the
	// catalog's); nil if no file has any.
	Models []catalog.Model
	// Verify is the built-in verification command run after a finished
	// turn (agent.Definition.Verify), from the "verify" key; the last file
	// that sets it wins. A project's is skipped in an untrusted workspace:
	// it is a command.
	Verify string
	// Store is the "store" key of the user's files: a postgres:// (or
	// postgresql://) URL naming the database that keeps the sessions; the
	// last file that sets it wins. A project file's is never used (a
	// warning says so): a cloned repository must not send the user's
	// sessions to its server.
	Store string
	// APIKeyHelper is the "apiKeyHelper" key (Claude Code's): a shell
	// command that prints the Anthropic API key, run when no key is in
	// the environment (llm/anthropic.KeyFunc); the last file that sets it
	// wins. A project's is skipped in an untrusted workspace: it is a
	// command.
	APIKeyHelper string
	// UntrustedKeyHelper is the apiKeyHelper of a project file that was
	// not applied because the workspace is not trusted ("" if none).
	UntrustedKeyHelper string
	// MaxParallelTools is the "maxParallelTools" key (agent.Definition.
	// MaxParallelTools; the last file that sets it wins), 0 if none does.
	MaxParallelTools int
	// MCPLogLevel is the "mcpLogLevel" key: the lowest level of an MCP
	// server's log messages that are shown to the user (MCP's levels,
	// MCPLogLevels), "" if no file sets it; the last file that sets it
	// wins, trusted or not (it changes only what is shown). Every message
	// is an event whatever it says.
	MCPLogLevel string
	// Env are the variables of the files' "env" blocks (a later file's
	// value wins), given to command hooks and commands. A project's are
	// skipped in an untrusted workspace.
	Env map[string]string
	// Sandbox is how commands are sandboxed, from the "sandbox" key (see
	// Sandbox). A project's settings that loosen it are skipped in an
	// untrusted workspace; those that tighten it apply.
	Sandbox Sandbox
	// ClaudeModel is the "model" of Claude Code's files (the last one that
	// sets it): a Claude model or alias ("sonnet", which stands for what
	// llm/provider.ModelAliases says), meant for the anthropic provider.
	ClaudeModel string
	// ClaudeFallbacks is the "fallbackModel" of Claude Code's files (the
	// last one that sets it): Claude models or aliases, meant for the
	// anthropic provider.
	ClaudeFallbacks []string
	// NoHooks: a file set "disableAllHooks": true, so Hooks is empty (a
	// file may only turn hooks off, so a project's counts untrusted too).
	NoHooks     bool
	noHooksFile string
	// Sources are the files that were read, in order (files that do not
	// exist are not listed).
	Sources []string
	// Ignored are, by file, the keys Claude Code documents that orca does
	// not read (a file shared with Claude Code sets them): not warned
	// about on every run, but listed by `orca doctor`. Keys neither reads
	// — misspellings — are warnings.
	Ignored []IgnoredKeys
}

// MCPLogLevels are MCP's log levels, from the lowest: what "mcpLogLevel"
// takes.
var MCPLogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// IgnoredKeys are the keys of File that only Claude Code reads, written
// as paths ("theme", "sandbox.network.httpProxyPort").
type IgnoredKeys struct {
	File string
	Keys []string
}

// Permissions are the "permissions" of settings files.
type Permissions struct {
	// Allow, Deny and Ask are permission rules (see policy.Rule), as
	// written.
	Allow, Deny, Ask []string
	// DefaultMode is the permission mode of runs that do not choose one;
	// empty when no file sets it.
	DefaultMode policy.Mode
	// NoBypass: a file set "disableBypassPermissionsMode": "disable", so
	// permission mode bypass may not be used.
	NoBypass bool
}

// ModelSettings are the "provider", "model", "base_url" and
// "modelAliases" of settings files; empty when not given.
type ModelSettings struct {
	Provider, Model, BaseURL string
	// Fallbacks are the "fallbackModel" chain (Claude Code's key): the
	// models a call falls over to, in order ("MODEL", an alias, "default",
	// or "PROVIDER:MODEL"); nil when no file gives any.
	Fallbacks []string
	// Aliases map the model names of subagent definitions (sonnet, opus,
	// haiku, or names of the user's own) to models; nil when no file
	// gives any.
	Aliases map[string]string
}

// over returns m, with what it leaves empty taken from less — except a
// model, base URL or aliases that less gives for another provider than
// the one chosen: those belong to that provider.
func (m ModelSettings) over(less ModelSettings) ModelSettings {
	out := m
	if out.Provider == "" {
		out.Provider = less.Provider
	}
	if less.Provider != "" && less.Provider != out.Provider {
		return out
	}
	if out.Model == "" {
		out.Model = less.Model
	}
	if out.BaseURL == "" {
		out.BaseURL = less.BaseURL
	}
	if out.Fallbacks == nil {
		out.Fallbacks = less.Fallbacks
	}
	if len(less.Aliases) > 0 {
		out.Aliases = maps.Clone(less.Aliases)
		maps.Copy(out.Aliases, m.Aliases)
	}
	return out
}

// Warning is something Load skipped without failing.
type Warning struct {
	// File is the settings file concerned.
	File string
	// Message says what was skipped and why.
	Message string
	// Untrusted says project settings were skipped because the workspace
	// is not trusted (Trust, or LoadOptions.TrustOverride, enables them).
	Untrusted bool
	// Withheld, with Untrusted, names what trust would enable ("1 command
	// hook and 1 allow rule", "2 MCP servers").
	Withheld string
}

// String returns the warning as "file: message".
func (w Warning) String() string { return w.File + ": " + w.Message }

// LoadOptions say which settings Load reads.
type LoadOptions struct {
	// Workspace is the workspace folder whose .orca settings are read;
	// empty: none.
	Workspace string
	// ConfigDir is the user's configuration folder (Dir() if empty; "-"
	// means none): its orca/settings.json is read and its orca/trust.json
	// says whether Workspace is trusted.
	ConfigDir string
	// TrustOverride trusts Workspace for this load only, without recording
	// it.
	TrustOverride bool
	// ClaudeDir is the user's Claude Code folder, whose settings.json is
	// read before the user's orca file: ClaudeDir() if empty; "-" means
	// none.
	ClaudeDir string
	// NoClaude reads none of Claude Code's files, the user's or the
	// project's.
	NoClaude bool
	// PluginDirs are plugin folders whose hooks (hooks/hooks.json) run,
	// as Claude Code's --plugin-dir: the user named them.
	PluginDirs []string
}

// ProjectFiles are the project settings files, relative to the workspace,
// in the order they are read (Claude Code's are left out with
// LoadOptions.NoClaude).
var ProjectFiles = []string{".claude/settings.json", ".orca/settings.json", ".claude/settings.local.json", ".orca/settings.local.json"}

// UserFile is the user's settings file, relative to the configuration
// folder.
const UserFile = "orca/settings.json"

// ClaudeUserFile is the user's Claude Code settings file, relative to
// Claude Code's folder (ClaudeDir).
const ClaudeUserFile = "settings.json"

// Load reads and merges the user's and the workspace's settings files. A
// file that does not exist is skipped; a file that cannot be read or is
// invalid is an error naming the file and the key (see the package
// documentation for what is checked). Project settings skipped because the
// workspace is not trusted are reported as warnings with Untrusted set.
func Load(opts LoadOptions) (*Settings, []Warning, error) {
	s := &Settings{}
	var warns []Warning
	configDir := opts.ConfigDir
	if configDir == "-" {
		configDir = ""
	} else if configDir == "" {
		d, err := Dir()
		if err != nil {
			warns = append(warns, Warning{File: UserFile, Message: fmt.Sprintf("not read: %v", err)})
		}
		configDir = d
	}
	// The user's files, in order: Claude Code's, then orca's.
	type place struct {
		path   string
		claude bool
	}
	var user []place
	var state *claudeState // Claude Code's state file: claude mcp add's servers
	if !opts.NoClaude {
		claudeDir := ""
		switch opts.ClaudeDir {
		case "-":
		case "":
			if d, err := ClaudeDir(); err == nil {
				claudeDir = d
			}
		default:
			claudeDir = opts.ClaudeDir
		}
		if claudeDir != "" {
			user = append(user, place{filepath.Join(claudeDir, ClaudeUserFile), true})
			var w []Warning
			state, w = readClaudeState(claudeDir, opts.Workspace, os.LookupEnv)
			warns = append(warns, w...)
		}
	}
	if configDir != "" {
		user = append(user, place{filepath.Join(configDir, filepath.FromSlash(UserFile)), false})
	}
	var files []*file
	trusted := false // the workspace, once its files are read
	for _, p := range user {
		f, err := readFile(p.path, false, p.claude)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	if opts.Workspace != "" {
		var project []*file
		for _, rel := range ProjectFiles {
			claude := strings.HasPrefix(rel, ".claude/")
			if claude && opts.NoClaude {
				continue
			}
			f, err := readFile(filepath.Join(opts.Workspace, filepath.FromSlash(rel)), true, claude)
			if err != nil {
				return nil, nil, err
			}
			if f != nil {
				project = append(project, f)
			}
		}
		trusted = opts.TrustOverride
		mcpFile := !opts.NoClaude && fileExists(filepath.Join(opts.Workspace, MCPFile))
		if !trusted && (mcpFile || slices.ContainsFunc(project, (*file).grants)) {
			trusted = configDir != "" && NewTrustStore(configDir).Trusted(opts.Workspace)
		}
		for _, f := range project {
			if !trusted {
				if f.keyHelper != "" {
					s.UntrustedKeyHelper = f.keyHelper
				}
				if w, ok := f.restrict(opts.Workspace); ok {
					warns = append(warns, w)
				}
			}
		}
		files = append(files, project...)
	}
	if state != nil {
		// The user scope of claude mcp add: under every settings file's.
		s.MCPServers = append(s.MCPServers, state.user...)
	}
	for _, f := range files {
		s.merge(f)
		warns = append(warns, f.warnings()...)
	}
	if state != nil && state.approval != nil {
		s.MCPApproval.All = s.MCPApproval.All || state.approval.All
		s.MCPApproval.Enabled = append(s.MCPApproval.Enabled, state.approval.Enabled...)
		s.MCPApproval.Disabled = append(s.MCPApproval.Disabled, state.approval.Disabled...)
	}
	// The user's own servers of the workspace (orca mcp add's local
	// scope): trusted or not, over the project's of a name.
	var local []MCPServer
	if opts.Workspace != "" {
		var w []Warning
		local, w = localServers(configDir, opts.Workspace)
		warns = append(warns, w...)
	}
	if opts.Workspace != "" && !opts.NoClaude {
		mine := local
		if state != nil {
			mine = append(slices.Clone(mine), state.local...)
		}
		// The .mcp.json entries the user trusted as they are now; a trust
		// for this load only takes the file as it is.
		var digests map[string]string
		if trusted && !opts.TrustOverride {
			digests = NewTrustStore(configDir).MCPDigests(opts.Workspace)
			if digests == nil {
				digests = map[string]string{}
			}
		}
		warns = append(warns, s.addMCPFile(opts.Workspace, trusted, digests, mine)...)
	}
	s.MCPServers = append(s.MCPServers, local...)
	if state != nil {
		// The local scope of claude mcp add: the user's own servers for
		// this project, over the project's (as in Claude Code).
		s.MCPServers = append(s.MCPServers, state.local...)
	}
	plugins, pwarns := loadPlugins(opts, s.EnabledPlugins)
	warns = append(warns, pwarns...)
	for _, p := range plugins {
		s.Plugins = append(s.Plugins, p)
		s.Hooks = append(s.Hooks, p.Hooks...)
		s.MCPServers = append(s.MCPServers, p.MCPServers...)
		s.LSPServers = append(s.LSPServers, p.LSPServers...)
	}
	s.MCPServers = lastByName(s.MCPServers)
	s.LSPServers = lastLSPByName(s.LSPServers)
	if s.NoHooks && len(s.Hooks) > 0 {
		warns = append(warns, Warning{File: s.noHooksFile, Message: fmt.Sprintf("disableAllHooks: %s of the settings files not run", plural(len(s.Hooks), "command hook"))})
		s.Hooks = nil
	}
	return s, warns, nil
}

// ClaudeDir returns Claude Code's folder of the user: $CLAUDE_CONFIG_DIR
// when it is an absolute path (Claude Code's own override), else
// ~/.claude. Its settings.json, skills and agents are read beside orca's
// own (see the package documentation, skill and subagent).
func ClaudeDir() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no Claude Code folder: %w", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// Mode returns the default permission mode: the last defaultMode of the
// files, or policy.ModeDefault.
func (s *Settings) Mode() policy.Mode {
	if s.Permissions.DefaultMode == "" {
		return policy.ModeDefault
	}
	return s.Permissions.DefaultMode
}

// Rules returns the permission rules of the files, parsed.
func (s *Settings) Rules() (policy.Rules, error) {
	return policy.ParseRules(s.Permissions.Allow, s.Permissions.Deny, s.Permissions.Ask)
}

// RegisterHooks registers the command hooks of s on reg, running in the
// workspace folder (see command.Register), and returns the function that
// unregisters them.
func (s *Settings) RegisterHooks(reg *hook.Registry, workspace string) (unregister func(), err error) {
	return s.RegisterHooksWith(reg, workspace, command.Options{})
}

// RegisterHooksWith is RegisterHooks with the options of the hooks that
// are not commands (the model prompt hooks ask).
func (s *Settings) RegisterHooksWith(reg *hook.Registry, workspace string, opts command.Options) (unregister func(), err error) {
	return command.RegisterWith(reg, s.hookSpecs(), workspace, opts)
}

// Notifier returns the Notifier of the settings' Notification and
// StopFailure entries (nil if there are none), running in the workspace
// folder; onFail hears of the runs that fail (see command.NewNotifier).
func (s *Settings) Notifier(workspace string, onFail func(note hook.Notification, handler string, err error)) (*command.Notifier, error) {
	return command.NewNotifier(s.hookSpecs(), workspace, onFail)
}

// hookSpecs are the settings' hooks with the settings' env block.
func (s *Settings) hookSpecs() []command.Spec {
	specs := slices.Clone(s.Hooks)
	if env := s.EnvList(); len(env) > 0 {
		for i := range specs {
			specs[i].Env = append(slices.Clone(env), specs[i].Env...)
		}
	}
	return specs
}

func (s *Settings) merge(f *file) {
	if f == nil {
		return
	}
	s.Sources = append(s.Sources, f.path)
	if len(f.ignored) > 0 {
		s.Ignored = append(s.Ignored, IgnoredKeys{File: f.path, Keys: f.ignored})
	}
	p := &s.Permissions
	p.Allow = append(p.Allow, f.perms.Allow...)
	p.Deny = append(p.Deny, f.perms.Deny...)
	p.Ask = append(p.Ask, f.perms.Ask...)
	if f.perms.DefaultMode != "" {
		p.DefaultMode = f.perms.DefaultMode
	}
	p.NoBypass = p.NoBypass || f.perms.NoBypass
	for k, v := range f.env {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
	s.Hooks = append(s.Hooks, f.hooks...)
	if f.project {
		s.ProjectModel = f.model.over(s.ProjectModel)
	} else {
		s.UserModel = f.model.over(s.UserModel)
	}
	if f.verify != "" {
		s.Verify = f.verify
	}
	if f.keyHelper != "" {
		s.APIKeyHelper = f.keyHelper
	}
	if f.parallel > 0 {
		s.MaxParallelTools = f.parallel
	}
	if f.mcpLogLevel != "" {
		s.MCPLogLevel = f.mcpLogLevel
	}
	if f.store != "" && !f.project {
		s.Store = f.store
	}
	if f.claudeModel != "" {
		s.ClaudeModel = f.claudeModel
	}
	if f.claudeFallbacks != nil {
		s.ClaudeFallbacks = f.claudeFallbacks
	}
	s.MCPServers = append(s.MCPServers, f.mcp...)
	s.LSPServers = append(s.LSPServers, f.lsp...)
	for _, a := range f.a2a {
		s.A2AAgents = append(slices.DeleteFunc(s.A2AAgents, func(o A2AAgent) bool { return o.Name == a.Name }), a)
	}
	if a := f.mcpApproval; a != nil {
		s.MCPApproval.All = s.MCPApproval.All || a.All
		s.MCPApproval.Enabled = append(s.MCPApproval.Enabled, a.Enabled...)
		s.MCPApproval.Disabled = append(s.MCPApproval.Disabled, a.Disabled...)
	}
	for name, on := range f.plugins {
		if s.EnabledPlugins == nil {
			s.EnabledPlugins = map[string]bool{}
		}
		s.EnabledPlugins[name] = on
	}
	if f.noHooks && !s.NoHooks {
		s.NoHooks, s.noHooksFile = true, f.path
	}
	if f.sandbox != nil {
		s.Sandbox.merge(f.sandbox)
	}
	for name, price := range f.prices {
		if s.Prices == nil {
			s.Prices = budget.Prices{}
		}
		s.Prices[name] = price
	}
	s.Models = append(s.Models, f.models...)
}

// file is one settings file, checked.
type file struct {
	path    string
	project bool
	claude  bool // one of Claude Code's files
	perms   Permissions
	hooks   []command.Spec

	model  ModelSettings
	prices budget.Prices
	models []catalog.Model
	verify string
	// keyHelper is "apiKeyHelper".
	keyHelper string
	// parallel is "maxParallelTools", 0 if not given.
	parallel int
	// mcpLogLevel is "mcpLogLevel".
	mcpLogLevel string
	// store is "store", the sessions' PostgreSQL DSN.
	store   string
	sandbox *sandboxFile
	env     map[string]string
	// claudeModel is the "model" of a Claude Code file; claudeFallbacks
	// its "fallbackModel".
	claudeModel     string
	claudeFallbacks []string
	noHooks         bool // "disableAllHooks": true
	// plugins are "enabledPlugins": Claude Code plugins by name@marketplace.
	plugins map[string]bool
	// mcp are its "mcpServers"; mcpApproval its approval of .mcp.json's.
	mcp         []MCPServer
	mcpApproval *MCPApproval
	// lsp are its "lspServers"; a2a its "a2aAgents".
	lsp []LSPServer
	a2a []A2AAgent
	// warns say what the file asks for that is not done as written.
	warns []string
	// ignored are the keys only Claude Code reads (IgnoredKeys).
	ignored []string
}

// grants reports whether f has something an untrusted workspace may not
// use: hooks, allow rules, a mode that allows more than the default, a base
// URL or prices.
func (f *file) grants() bool {
	return len(f.hooks) > 0 || len(f.perms.Allow) > 0 || granting(f.perms.DefaultMode) ||
		f.model.BaseURL != "" || len(f.prices) > 0 || len(f.models) > 0 || f.verify != "" || f.keyHelper != "" || f.sandbox != nil && len(f.sandbox.grants()) > 0 || len(f.env) > 0 ||
		enables(f.plugins) || len(f.mcp) > 0 || f.mcpApproval != nil || slices.ContainsFunc(f.lsp, func(l LSPServer) bool { return !l.Off }) || len(f.a2a) > 0
}

// enables reports whether plugins enables any plugin.
func enables(plugins map[string]bool) bool {
	for _, on := range plugins {
		if on {
			return true
		}
	}
	return false
}

// granting reports whether mode allows calls that ModeDefault asks about.
func granting(m policy.Mode) bool {
	return m != "" && m != policy.ModeDefault && m != policy.ModePlan && m != policy.ModeDontAsk
}

// restrict drops from a project file what an untrusted workspace may not
// use, and returns the warning that says so.
func (f *file) restrict(workspace string) (Warning, bool) {
	if !f.grants() {
		return Warning{}, false
	}
	var what []string
	if n := len(f.hooks); n > 0 {
		what = append(what, plural(n, "command hook"))
	}
	if n := len(f.perms.Allow); n > 0 {
		what = append(what, plural(n, "allow rule"))
	}
	if granting(f.perms.DefaultMode) {
		what = append(what, fmt.Sprintf("defaultMode %q", f.perms.DefaultMode))
		f.perms.DefaultMode = ""
	}
	if f.model.BaseURL != "" {
		what = append(what, fmt.Sprintf("base_url %q", f.model.BaseURL))
	}
	if n := len(f.prices); n > 0 {
		what = append(what, plural(n, "model price"))
	}
	if n := len(f.models); n > 0 {
		what = append(what, plural(n, "model entry"))
		f.models = nil
	}
	if f.verify != "" {
		what = append(what, fmt.Sprintf("verify command %q", f.verify))
	}
	if f.keyHelper != "" {
		what = append(what, fmt.Sprintf("apiKeyHelper %q", f.keyHelper))
		f.keyHelper = ""
	}
	if f.sandbox != nil {
		what = append(what, f.sandbox.grants()...)
		f.sandbox.restrict()
	}
	if enables(f.plugins) {
		what = append(what, "enabledPlugins")
		f.plugins = nil
	}
	if n := len(f.mcp); n > 0 {
		what = append(what, plural(n, "MCP server"))
		f.mcp = nil
	}
	if f.mcpApproval != nil {
		what = append(what, "the approval of .mcp.json servers")
		f.mcpApproval = nil
	}
	if n := len(f.a2a); n > 0 {
		what = append(what, plural(n, "remote agent"))
		f.a2a = nil
	}
	if off := slices.DeleteFunc(slices.Clone(f.lsp), func(l LSPServer) bool { return !l.Off }); len(off) < len(f.lsp) {
		what = append(what, plural(len(f.lsp)-len(off), "language server"))
		f.lsp = off // turning a server off grants nothing
	}
	if n := len(f.env); n > 0 {
		what = append(what, plural(n, "env variable"))
		f.env = nil
	}
	f.hooks, f.perms.Allow, f.model.BaseURL, f.prices, f.verify = nil, nil, "", nil, ""
	list := strings.Join(what, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " and " + list[i+2:]
	}
	if abs, err := canonical(workspace); err == nil {
		workspace = abs
	}
	return Warning{File: f.path, Untrusted: true, Withheld: list,
		Message: fmt.Sprintf("%s not applied: the workspace %s is not trusted", list, workspace)}, true
}

// warnings returns f's warnings, as Warnings.
func (f *file) warnings() []Warning {
	if f == nil {
		return nil
	}
	var out []Warning
	for _, w := range f.warns {
		out = append(out, Warning{File: f.path, Message: w})
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// readFile reads and checks one settings file, Claude Code's if claude;
// nil if it does not exist.
func readFile(path string, project, claude bool) (*file, error) {
	data, err := readConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	f, err := parse(path, data, claude)
	if err != nil {
		return nil, err
	}
	f.project = project
	if project && f.store != "" {
		f.warns = append(f.warns, "store: not used: only the user's settings choose where sessions are stored (a cloned repository must not send them to its server); set it in "+UserFile+" or ORCA_STORE_DSN")
		f.store = ""
	}
	for i := range f.hooks {
		f.hooks[i].Project = project
	}
	for i := range f.mcp {
		f.mcp[i].Project = project
	}
	for i := range f.lsp {
		f.lsp[i].Project = project
	}
	for i := range f.a2a {
		f.a2a[i].Project = project
	}
	return f, nil
}

// ParseFile checks the settings file at path, given its contents, and
// returns its settings alone; a file in a .claude folder is read as
// Claude Code's. Errors name the file and the key:
//
//	.orca/settings.json: hooks.PreToolUse[0].hooks[1].timeout: want a number of seconds, got a string
func ParseFile(path string, data []byte) (*Settings, error) {
	f, err := parse(path, data, filepath.Base(filepath.Dir(path)) == ".claude")
	if err != nil {
		return nil, err
	}
	s := &Settings{}
	s.merge(f)
	return s, nil
}

func parse(path string, data []byte, claude bool) (*file, error) {
	fail := func(key string, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if key != "" {
			msg = key + ": " + msg
		}
		return fmt.Errorf("%s: %s", path, msg)
	}
	var top map[string]json.RawMessage
	if err := strictJSON(data, &top); err != nil {
		return nil, fail("", "%v", syntaxError(data, err))
	}
	if top == nil {
		return nil, fail("", "want a JSON object")
	}
	f := &file{path: path, claude: claude}
	f.warns, f.ignored = checkKeys("", top, settingsKeys, claudeKeys)
	if raw, ok := top["disableAllHooks"]; ok {
		if err := json.Unmarshal(raw, &f.noHooks); err != nil {
			return nil, fail("disableAllHooks", "want true or false, got %s", kind(raw))
		}
	}
	if raw, ok := top["permissions"]; ok {
		var perms map[string]json.RawMessage
		if err := json.Unmarshal(raw, &perms); err != nil || perms == nil {
			return nil, fail("permissions", "want an object, got %s", kind(raw))
		}
		w, ig := checkKeys("permissions.", perms, permissionsKeys, claudePermissionsKeys)
		f.warns, f.ignored = append(f.warns, w...), append(f.ignored, ig...)
		for _, l := range []struct {
			key string
			out *[]string
		}{{"allow", &f.perms.Allow}, {"deny", &f.perms.Deny}, {"ask", &f.perms.Ask}} {
			raw, ok := perms[l.key]
			if !ok {
				continue
			}
			var rules []json.RawMessage
			if err := json.Unmarshal(raw, &rules); err != nil {
				return nil, fail("permissions."+l.key, "want a list of permission rules, got %s", kind(raw))
			}
			for i, r := range rules {
				key := fmt.Sprintf("permissions.%s[%d]", l.key, i)
				var s string
				if err := json.Unmarshal(r, &s); err != nil {
					return nil, fail(key, "want a permission rule (a string), got %s", kind(r))
				}
				rule, err := policy.ParseRule(s)
				if err != nil {
					return nil, fail(key, "%v", err)
				}
				if why := rule.Inert(); why != "" {
					f.warns = append(f.warns, fmt.Sprintf("%s: %s: %s", key, s, why))
				}
				*l.out = append(*l.out, s)
			}
		}
		if raw, ok := perms["disableBypassPermissionsMode"]; ok {
			var v string
			if err := json.Unmarshal(raw, &v); err != nil || v != "disable" {
				return nil, fail("permissions.disableBypassPermissionsMode", "want \"disable\", got %s", string(raw))
			}
			f.perms.NoBypass = true
		}
		if raw, ok := perms["additionalDirectories"]; ok && string(raw) != "[]" {
			f.warns = append(f.warns, "permissions.additionalDirectories: not used: orca's tools work in one workspace folder (the sandbox's filesystem.allowWrite lets commands write elsewhere)")
		}
		if raw, ok := perms["defaultMode"]; ok {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fail("permissions.defaultMode", "want a string, got %s", kind(raw))
			}
			m, err := policy.ParseMode(s)
			switch {
			case err != nil && claude:
				// A mode of Claude Code's that orca has not (auto).
				f.warns = append(f.warns, fmt.Sprintf("permissions.defaultMode: %v; the file's mode is not used", err))
			case err != nil:
				return nil, fail("permissions.defaultMode", "%v", err)
			}
			f.perms.DefaultMode = m
		}
	}
	for _, k := range []struct {
		key  string
		out  *string
		what string
	}{{"provider", &f.model.Provider, "a provider name"}, {"model", &f.model.Model, "a model name"}, {"base_url", &f.model.BaseURL, "a URL"}} {
		raw, ok := top[k.key]
		if !ok {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fail(k.key, "want %s (a string), got %s", k.what, kind(raw))
		}
		if strings.TrimSpace(v) == "" {
			return nil, fail(k.key, "want %s, got an empty string", k.what)
		}
		if k.key == "model" && claude {
			// Claude Code's model: a Claude model or alias.
			f.claudeModel = v
			continue
		}
		if k.key == "base_url" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fail(k.key, "%q is not an http or https URL", v)
			}
		}
		*k.out = v
	}
	if raw, ok := top["fallbackModel"]; ok {
		chain, err := parseFallbacks(raw)
		if err != nil {
			return nil, fail("fallbackModel", "%v", err)
		}
		if claude {
			f.claudeFallbacks = chain
		} else {
			f.model.Fallbacks = chain
		}
	}
	if raw, ok := top["modelAliases"]; ok {
		aliases, err := parseAliases(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.model.Aliases = aliases
	}
	if raw, ok := top["verify"]; ok {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || strings.TrimSpace(v) == "" {
			return nil, fail("verify", "want a command (a non-empty string), got %s", kind(raw))
		}
		f.verify = v
	}
	if raw, ok := top["apiKeyHelper"]; ok {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || strings.TrimSpace(v) == "" {
			return nil, fail("apiKeyHelper", "want a command that prints the API key (a non-empty string), got %s", kind(raw))
		}
		f.keyHelper = v
	}
	if raw, ok := top["maxParallelTools"]; ok {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return nil, fail("maxParallelTools", "want a whole number of calls, at least 1, got %s", raw)
		}
		f.parallel = n
	}
	if raw, ok := top["mcpLogLevel"]; ok {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || !slices.Contains(MCPLogLevels, v) {
			return nil, fail("mcpLogLevel", "want one of MCP's log levels (%s), got %s", strings.Join(MCPLogLevels, ", "), raw)
		}
		f.mcpLogLevel = v
	}
	if raw, ok := top["store"]; ok {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fail("store", "want a PostgreSQL URL (a string), got %s", kind(raw))
		}
		if u, err := url.Parse(v); err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
			// Not the value itself: it may hold a password.
			return nil, fail("store", "want a postgres:// or postgresql:// URL")
		}
		f.store = v
	}
	if raw, ok := top["env"]; ok {
		var env map[string]json.RawMessage
		if err := json.Unmarshal(raw, &env); err != nil || env == nil {
			return nil, fail("env", "want an object of variables, got %s", kind(raw))
		}
		f.env = map[string]string{}
		for k, v := range env {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fail("env."+k, "want a string, got %s", kind(v))
			}
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, fail("env", "%q is not a variable name", k)
			}
			f.env[k] = s
		}
	}
	if raw, ok := top["sandbox"]; ok {
		sb, warns, err := parseSandbox(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.sandbox, f.warns, f.ignored = sb, append(f.warns, warns...), append(f.ignored, sb.ignored...)
	}
	if raw, ok := top["prices"]; ok {
		prices, err := parsePrices(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.prices = prices
	}
	if raw, ok := top["models"]; ok {
		models, err := parseModels(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f.models = models
	}
	if raw, ok := top["mcpServers"]; ok {
		servers, err := parseMCPServers(path, raw, os.LookupEnv)
		if err != nil {
			return nil, err
		}
		f.mcp = servers
	}
	if raw, ok := top["a2aAgents"]; ok {
		agents, err := parseA2AAgents(path, raw)
		if err != nil {
			return nil, err
		}
		f.a2a = agents
	}
	if raw, ok := top["lspServers"]; ok {
		servers, err := parseLSPServers(path, raw, nil)
		if err != nil {
			return nil, err
		}
		f.lsp = servers
	}
	var err error
	if f.mcpApproval, err = parseMCPApproval(path, top); err != nil {
		return nil, err
	}
	if raw, ok := top["enabledPlugins"]; ok {
		if err := json.Unmarshal(raw, &f.plugins); err != nil {
			return nil, fail("enabledPlugins", "want an object of plugin names (name@marketplace) and true or false, got %s", kind(raw))
		}
	}
	if raw, ok := top["hooks"]; ok {
		hs, warns, err := parseHooks(path, raw)
		if err != nil {
			return nil, err
		}
		f.hooks, f.warns = append(f.hooks, hs...), append(f.warns, warns...)
	}
	return f, nil
}

// parseHooks reads a "hooks" object of command hooks by event, as settings
// files and plugins' hooks/hooks.json hold them.
func parseHooks(path string, raw json.RawMessage) ([]command.Spec, []string, error) {
	var (
		specs []command.Spec
		warns []string
	)
	{
		var byEvent map[string]json.RawMessage
		if err := json.Unmarshal(raw, &byEvent); err != nil || byEvent == nil {
			return nil, nil, fmt.Errorf("%s: hooks: want an object of hook events, got %s", path, kind(raw))
		}
		var unknown []string
		for name := range byEvent {
			if _, ok := command.HookOf(name); !ok && !command.IsNotifierEvent(name) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			warns = append(warns, fmt.Sprintf("hooks: %s skipped: orca has no such hook event (its events are %s, and %s)",
				strings.Join(quoteAll(unknown), ", "), command.EventNames(), strings.Join(command.NotifierEvents, ", ")))
		}
		// Events in a fixed order, entries in file order.
		for _, e := range command.Events {
			raw, ok := byEvent[e.Name]
			if !ok {
				continue
			}
			hs, ws, err := parseEvent(path, e.Name, e.Hook, raw)
			if err != nil {
				return nil, nil, err
			}
			specs = append(specs, hs...)
			warns = append(warns, ws...)
		}
		// Notification, StopFailure and PostCompact, which are no hooks
		// of orca's: their entries run when orca tells the user something,
		// or that a compaction happened (command.Notifier).
		for _, event := range command.NotifierEvents {
			raw, ok := byEvent[event]
			if !ok {
				continue
			}
			hs, ws, err := parseEvent(path, event, "", raw)
			if err != nil {
				return nil, nil, err
			}
			for _, h := range hs {
				if h.Type == "prompt" {
					ws = append(ws, fmt.Sprintf("%s: a \"prompt\" hook, skipped: a %s asks nothing for a model to answer (orca runs its command and http hooks)", h.Key, event))
					continue
				}
				specs = append(specs, h)
			}
			warns = append(warns, ws...)
		}
	}
	return specs, warns, nil
}

// parseFallbacks checks a "fallbackModel": a list of model names (as
// Claude Code writes it), or one.
func parseFallbacks(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		raw, _ = json.Marshal([]string{one})
	}
	var chain []string
	if err := json.Unmarshal(raw, &chain); err != nil {
		return nil, fmt.Errorf("want a list of model names, got %s", kind(raw))
	}
	for i, m := range chain {
		if strings.TrimSpace(m) == "" {
			return nil, fmt.Errorf("entry %d is empty: want a model name", i)
		}
		if p, model, ok := strings.Cut(m, ":"); ok && (strings.TrimSpace(p) == "" || strings.TrimSpace(model) == "") {
			return nil, fmt.Errorf("entry %d, %q: want PROVIDER:MODEL, both named", i, m)
		}
	}
	return slices.Clip(chain), nil
}

// parseAliases checks the "modelAliases" of a file; errors name the key:
// modelAliases["sonnet"].
func parseAliases(raw json.RawMessage) (map[string]string, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		return nil, fmt.Errorf("modelAliases: want an object of model names by alias, got %s", kind(raw))
	}
	out := make(map[string]string, len(in))
	for _, alias := range slices.Sorted(maps.Keys(in)) {
		raw := in[alias]
		key := fmt.Sprintf("modelAliases[%q]", alias)
		switch strings.TrimSpace(alias) {
		case "":
			return nil, fmt.Errorf("%s: the alias is empty", key)
		case "inherit":
			return nil, fmt.Errorf("%s: inherit is not an alias: it means the parent's model", key)
		}
		var m string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: want a model name (a string), got %s", key, kind(raw))
		}
		if strings.TrimSpace(m) == "" {
			return nil, fmt.Errorf("%s: want a model name, got an empty string", key)
		}
		out[alias] = strings.TrimSpace(m)
	}
	return out, nil
}

// parsePrices checks the "prices" of a file; errors name the key:
// prices["gpt-6.1-terra"].input.
func parsePrices(raw json.RawMessage) (budget.Prices, error) {
	fail := func(key string, format string, args ...any) error {
		return fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))
	}
	var models map[string]json.RawMessage
	if err := json.Unmarshal(raw, &models); err != nil || models == nil {
		return nil, fail("prices", "want an object of model names, got %s", kind(raw))
	}
	out := make(budget.Prices, len(models))
	// In order, so that of several mistakes the same is reported first.
	for _, name := range slices.Sorted(maps.Keys(models)) {
		raw := models[name]
		key := fmt.Sprintf("prices[%q]", name)
		if strings.TrimSpace(name) == "" {
			return nil, fail(key, "the model name is empty")
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return nil, fail(key, "want an object of prices (input, output, cache_read, cache_write), got %s", kind(raw))
		}
		var p budget.Price
		dest := map[string]*float64{"input": &p.Input, "output": &p.Output, "cache_read": &p.CacheRead, "cache_write": &p.CacheWrite}
		for _, field := range slices.Sorted(maps.Keys(fields)) {
			raw := fields[field]
			to, ok := dest[field]
			if !ok {
				return nil, fail(key+"."+field, "unknown price (the prices are input, output, cache_read and cache_write)")
			}
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fail(key+"."+field, "want a number of US dollars per million tokens, got %s", kind(raw))
			}
			if v < 0 {
				return nil, fail(key+"."+field, "%v is negative", v)
			}
			*to = v
		}
		out[name] = p
	}
	return out, nil
}

// parseModels checks the "models" of a file — entries of orca's model
// catalog by model name: {"qwen3-coder": {"context_window": 32768,
// "images": false}} —; errors name the key: models["qwen3-coder"].
func parseModels(raw json.RawMessage) ([]catalog.Model, error) {
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil || byName == nil {
		return nil, fmt.Errorf("models: want an object of model names, got %s", kind(raw))
	}
	var out []catalog.Model
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		key := fmt.Sprintf("models[%q]", name)
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%s: the model name is empty", key)
		}
		var m catalog.Model
		dec := json.NewDecoder(bytes.NewReader(byName[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: %v (an entry of orca's model catalog: provider, context_window, max_output, price, images, pdfs, tools, reasoning, caching)", key, strings.TrimPrefix(err.Error(), "json: "))
		}
		if m.Name != "" && m.Name != name {
			return nil, fmt.Errorf("%s: its name is %q", key, m.Name)
		}
		m.Name = name
		if err := m.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// parseEvent checks the matcher groups of one event.
func parseEvent(path, event string, n hook.Name, raw json.RawMessage) (_ []command.Spec, warns []string, _ error) {
	fail := func(key string, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", path, key, fmt.Sprintf(format, args...))
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, nil, fail("hooks."+event, "want a list of {\"matcher\": …, \"hooks\": […]} objects, got %s", kind(raw))
	}
	var out []command.Spec
	for i, g := range groups {
		gkey := fmt.Sprintf("hooks.%s[%d]", event, i)
		var group map[string]json.RawMessage
		if err := json.Unmarshal(g, &group); err != nil || group == nil {
			return nil, nil, fail(gkey, "want an object with \"matcher\" and \"hooks\", got %s", kind(g))
		}
		var m string
		if raw, ok := group["matcher"]; ok {
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, nil, fail(gkey+".matcher", "want a string, got %s", kind(raw))
			}
			if err := command.CheckMatcher(m); err != nil {
				return nil, nil, fail(gkey+".matcher", "%v", err)
			}
		}
		var entries []json.RawMessage
		if raw, ok := group["hooks"]; !ok {
			return nil, nil, fail(gkey, "no \"hooks\" list")
		} else if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, nil, fail(gkey+".hooks", "want a list of {\"type\": \"command\", \"command\": …} objects, got %s", kind(raw))
		}
		for j, e := range entries {
			key := fmt.Sprintf("%s.hooks[%d]", gkey, j)
			var entry map[string]json.RawMessage
			if err := json.Unmarshal(e, &entry); err != nil || entry == nil {
				return nil, nil, fail(key, "want an object with \"type\" and \"command\", got %s", kind(e))
			}
			str := func(name string, required bool) (string, error) {
				raw, ok := entry[name]
				if !ok {
					if required {
						return "", fail(key, "no %q", name)
					}
					return "", nil
				}
				var v string
				if err := json.Unmarshal(raw, &v); err != nil {
					return "", fail(key+"."+name, "want a string, got %s", kind(raw))
				}
				return v, nil
			}
			typ, err := str("type", true)
			if err != nil {
				return nil, nil, err
			}
			h := command.Spec{Event: event, Hook: n, Matcher: m, File: path, Key: key, Type: typ}
			switch typ {
			case "command":
				if h.Command, err = str("command", true); err != nil {
					return nil, nil, err
				}
				if strings.TrimSpace(h.Command) == "" {
					return nil, nil, fail(key+".command", "the command is empty")
				}
			case "http":
				if h.URL, err = str("url", true); err != nil {
					return nil, nil, err
				}
				if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return nil, nil, fail(key+".url", "%q is not an http or https URL", h.URL)
				}
				if raw, ok := entry["headers"]; ok {
					if err := json.Unmarshal(raw, &h.Headers); err != nil {
						return nil, nil, fail(key+".headers", "want an object of header values (strings), got %s", kind(raw))
					}
				}
				if raw, ok := entry["allowedEnvVars"]; ok {
					if err := json.Unmarshal(raw, &h.AllowedEnvVars); err != nil {
						return nil, nil, fail(key+".allowedEnvVars", "want a list of variable names, got %s", kind(raw))
					}
				}
			case "prompt":
				if h.Prompt, err = str("prompt", true); err != nil {
					return nil, nil, err
				}
				if strings.TrimSpace(h.Prompt) == "" {
					return nil, nil, fail(key+".prompt", "the prompt is empty")
				}
				if h.Model, err = str("model", false); err != nil {
					return nil, nil, err
				}
			default:
				// Claude Code's agent hooks, and kinds to come: not run, and
				// said so.
				warns = append(warns, fmt.Sprintf("%s: a %q hook, skipped: orca runs command, http and prompt hooks", key, typ))
				continue
			}
			if raw, ok := entry["async"]; ok {
				if err := json.Unmarshal(raw, &h.Async); err != nil {
					return nil, nil, fail(key+".async", "want true or false, got %s", kind(raw))
				}
			}
			if raw, ok := entry["if"]; ok {
				// Claude Code's condition: a permission rule the tool call
				// must match for the hook to run.
				var cond string
				if err := json.Unmarshal(raw, &cond); err != nil {
					return nil, nil, fail(key+".if", "want a permission rule (a string), got %s", kind(raw))
				}
				rule, err := policy.ParseRule(cond)
				if err != nil {
					return nil, nil, fail(key+".if", "%v", err)
				}
				if h.If, err = ruleMatcher(rule); err != nil {
					return nil, nil, fail(key+".if", "%v", err)
				}
			}
			if raw, ok := entry["timeout"]; ok && string(raw) != "null" {
				var secs float64
				if err := json.Unmarshal(raw, &secs); err != nil {
					return nil, nil, fail(key+".timeout", "want a number of seconds, got %s", kind(raw))
				}
				if secs < 0 || math.IsInf(secs, 0) || secs > float64(math.MaxInt64/int64(time.Second)) {
					return nil, nil, fail(key+".timeout", "%v is not a valid number of seconds (want 0 for the default, %v, or more)", secs, hook.DefaultTimeout)
				}
				h.Timeout = time.Duration(secs * float64(time.Second))
			}
			out = append(out, h)
		}
	}
	return out, warns, nil
}

// strictJSON decodes exactly one JSON value.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// syntaxError says where in data a decoding error happened, in lines and
// columns, which is what a person editing the file needs.
func syntaxError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("empty file: want a JSON object")
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		return fmt.Errorf("want a JSON object, got %s", typ.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if off <= 0 || off > int64(len(data)) {
		return errors.New(msg)
	}
	before := data[:off-1]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Errorf("line %d, column %d: %s", line, col, msg)
}

// kind names the JSON type of raw, for error messages.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// UserResources reads the values of extension resources from the user's
// settings file, <configDir>/orca/settings.json (UserFile), never from a
// workspace's:
//
//	{"extensions": {"resources": {
//	    "METRICS_URL": "https://metrics.example.com",
//	    "METRICS_TOKEN": {"env": "MY_METRICS_TOKEN"}
//	}}}
//
// A value is a string, or {"env": "NAME"}: the value of orca's environment
// variable NAME, so that secrets need not be written in the file (a
// variable that is not set gives no value). A missing file gives none.
// Errors name the file and the key.
func UserResources(configDir string) (map[string]string, error) {
	path := filepath.Join(configDir, filepath.FromSlash(UserFile))
	data, err := readConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	fail := func(key, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", path, key, fmt.Sprintf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := strictJSON(data, &top); err != nil {
		return nil, fmt.Errorf("%s: %v", path, syntaxError(data, err))
	}
	out := map[string]string{}
	raw, ok := top["extensions"]
	if !ok {
		return out, nil
	}
	var ext map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ext); err != nil || ext == nil {
		return nil, fail("extensions", "want an object with \"resources\", got %s", kind(raw))
	}
	for k := range ext {
		if k != "resources" {
			return nil, fail("extensions."+k, "unknown key (extensions has \"resources\")")
		}
	}
	raw, ok = ext["resources"]
	if !ok {
		return out, nil
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil || res == nil {
		return nil, fail("extensions.resources", "want an object of resource values by key, got %s", kind(raw))
	}
	for _, k := range slices.Sorted(maps.Keys(res)) {
		raw := res[k]
		key := "extensions.resources." + k
		if !ValidResourceKey(k) {
			return nil, fail(key, "%q is not a valid resource key", k)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if strings.ContainsRune(s, 0) {
				return nil, fail(key, "the value contains a NUL byte")
			}
			out[k] = s
			continue
		}
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ref); err != nil || len(ref) != 1 || ref["env"] == nil {
			return nil, fail(key, "want a string or {\"env\": \"NAME\"}, got %s", kind(raw))
		}
		var name string
		if err := json.Unmarshal(ref["env"], &name); err != nil || name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fail(key+".env", "want the name of an environment variable, got %s", ref["env"])
		}
		if v, ok := os.LookupEnv(name); ok && !strings.ContainsRune(v, 0) {
			out[k] = v
		}
	}
	return out, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// ruleMatcher returns whether a tool call matches the permission rule r,
// as an allow rule would: the condition of a hook's "if".
func ruleMatcher(r policy.Rule) (func(hook.ToolCall) bool, error) {
	p, err := policy.New(policy.ModeDefault, policy.Rules{Allow: []policy.Rule{r}})
	if err != nil {
		return nil, err
	}
	raw := r.String()
	return func(tc hook.ToolCall) bool {
		v := p.Decide(policy.Request{ToolName: tc.ToolName, Input: tc.Arguments, Traits: tool.Traits{Aliases: tc.Aliases},
			Access: tool.Access{Reads: tc.Reads, Writes: tc.Writes, Command: tc.Command}})
		return v.Decision == policy.Allow && strings.Contains(v.Rule, raw)
	}, nil
}

// EnvList returns the settings' env block as NAME=value, sorted.
func (s *Settings) EnvList() []string {
	var out []string
	for k, v := range s.Env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// addMCPFile adds the workspace's .mcp.json servers that may start, and
// says why the others do not — but for those the settings disable by
// name, and those a server of the user's own of the name (mine)
// replaces. digests are the entries the user trusted (TrustStore.
// MCPDigests); nil takes every entry as it is.
func (s *Settings) addMCPFile(workspace string, trusted bool, digests map[string]string, mine []MCPServer) []Warning {
	servers, err := readMCPFile(workspace, os.LookupEnv)
	path := filepath.Join(workspace, MCPFile)
	if err != nil {
		return []Warning{{File: path, Message: fmt.Sprintf("not used: %v", err)}}
	}
	if len(servers) == 0 {
		return nil
	}
	if !trusted {
		what := plural(len(servers), "MCP server")
		return []Warning{{File: path, Untrusted: true, Withheld: what, Message: what + " not started: the workspace is not trusted"}}
	}
	var off, changed []string
	for _, m := range servers {
		switch {
		case s.MCPApproval.Approves(m.Name) && digests != nil && digests[m.Name] != m.Digest:
			changed = append(changed, m.Name)
		case s.MCPApproval.Approves(m.Name):
			s.MCPServers = append(s.MCPServers, m)
		case slices.Contains(s.MCPApproval.Disabled, m.Name),
			slices.ContainsFunc(mine, func(o MCPServer) bool { return o.Name == m.Name }):
		default:
			off = append(off, m.Name)
		}
	}
	var warns []Warning
	if len(changed) > 0 {
		// The agent (or a pull) may have written them: a command the
		// user never saw must not start unasked.
		warns = append(warns, Warning{File: path, Message: fmt.Sprintf("MCP servers %s not started: new or changed since you trusted the workspace; read them, then run 'orca trust %s' to start them as they are now",
			strings.Join(changed, ", "), workspace)})
	}
	if len(off) > 0 {
		warns = append(warns, Warning{File: path, Message: fmt.Sprintf("MCP servers %s not started: approve them in a settings file (\"enabledMcpjsonServers\": [%q], or \"enableAllProjectMcpServers\": true)",
			strings.Join(off, ", "), off[0])})
	}
	return warns
}

// lastByName keeps, of servers of one name, the last, in the place of the
// first.
func lastByName(servers []MCPServer) []MCPServer {
	at := map[string]int{}
	var out []MCPServer
	for _, m := range servers {
		if i, ok := at[m.Name]; ok {
			out[i] = m
			continue
		}
		at[m.Name] = len(out)
		out = append(out, m)
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readConfig reads a configuration file, without the UTF-8 byte order
// mark Windows editors and PowerShell write at its start (Claude Code
// reads such files too).
func readConfig(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	return bytes.TrimPrefix(data, []byte("\uFEFF")), err
}
