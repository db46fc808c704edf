package app

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/lsp"
	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/memory"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/protect"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// What the runtime is built of, decided here and nowhere else: agent.New
// takes these as they are. The folders its tools read, the policy with
// every protection, the sandbox of its commands with every protection,
// its subagents and its tools.

// folders are the folders beside the workspace that the runtime's tools
// read: the user's configuration and Claude Code folders (none if "-",
// config.Dir() and config.ClaudeDir() if empty: Config.userDirs), the
// project's .claude and Claude Code's plugins unless Claude Code's files
// are off, and whether the workspace is trusted.
func (a *App) folders(cfg Config) tool.Folders {
	f := tool.Folders{ConfigDir: a.configDir, ClaudeDir: a.claudeDir, Claude: !cfg.NoClaude, Plugins: pluginFolders(a.settings.Plugins),
		// A cloned repository's /build cannot answer the asks of the turn
		// it starts: the project's grants count once it is trusted.
		Untrusted: !cfg.Trust && (a.configDir == "" || !config.NewTrustStore(a.configDir).Trusted(a.root))}
	if cfg.NoClaude {
		// Protected all the same (guard, commandSandbox).
		f.ClaudeDir = ""
	}
	return f
}

// memoryFolders are where the memory files are read from: Claude Code's
// unless they are off.
func (cfg *Config) memoryFolders(root, configDir, claudeDir string) memory.Folders {
	return memory.Folders{Root: root, ConfigDir: configDir, ClaudeDir: claudeDir, Claude: !cfg.NoClaude}
}

// configWarnings are the memory's warnings among the settings'.
func configWarnings(ws []memory.Warning) []config.Warning {
	out := make([]config.Warning, len(ws))
	for i, w := range ws {
		out[i] = config.Warning{File: w.File, Message: w.Message}
	}
	return out
}

// guard adds to pol what protection covers beyond the workspace's own
// state: the user's configuration folder and Claude Code folder (read or
// not: so that protection and the trust store mean the same folder), and
// targets, where links in protected state lead and the scripts trusted
// settings run (protectedTargets).
func (a *App) guard(pol *policy.Policy, targets []protect.Target) (*policy.Policy, error) {
	return pol.WithOptions(policy.WithUserConfigDir(a.configDir), policy.WithClaudeDir(a.claudeDir), policy.WithTargets(targets))
}

// commandSandbox is what a model command may touch: the sandbox the
// runtime's commands (Bash, the verification command) run in. The
// workspace and the temp folders are writable, and the settings' own
// sandbox section adds to that (sandbox.Settings.Runner); read-only are
// the workspace's state (.orca, .claude, git's configuration and hooks of
// its repositories), the user's orca folder and its trust store, the
// user's Claude Code folder, and targets; hidden are the paths the
// policy's deny rules on reading name. The workspace's command caches
// persist (sandbox.WorkspaceCache).
func (a *App) commandSandbox(cfg Config, pol *policy.Policy, targets []protect.Target) *sandbox.Runner {
	runner := a.settings.Sandbox.Runner(a.root)
	runner.Disabled = runner.Disabled || cfg.NoSandbox
	runner.Env = append(runner.Env, a.settings.EnvList()...) // the settings' env block
	runner.Policy = sandbox.WorkspacePolicy(a.root, a.configDir).Merge(runner.Policy).Merge(sandbox.Policy{Targets: targets})
	if cache := sandbox.WorkspaceCache(a.root); cache != "" && !runner.Disabled {
		// The commands' caches persist, the workspace's own.
		runner.Policy.Writable = append(runner.Policy.Writable, cache)
		runner.Env = sandbox.CacheEnv(runner.Env, cache)
	}
	if dir, err := config.Dir(); err == nil && dir != a.configDir {
		// The trust store is there, whatever folder the App reads.
		runner.Policy.Reserved = append(runner.Policy.Reserved, filepath.Join(dir, "orca"))
	}
	if a.claudeDir != "" {
		// Read-only where a writable folder holds it (a workspace that is
		// the home folder, a sandbox allowWrite).
		runner.Policy.ReadOnly = append(runner.Policy.ReadOnly, a.claudeDir)
	}
	hidden, unenforced := pol.ReadDeniedPaths(a.root)
	runner.Policy.Hidden = append(runner.Policy.Hidden, hidden...)
	if a.mcpAuth != "" {
		// The MCP servers' sign-ins: no command reads them.
		runner.Policy.Hidden = append(runner.Policy.Hidden, a.mcpAuth)
	}
	if len(unenforced) > 0 {
		a.logger.Warn("deny rules on reading that name no single path keep the file tools from these files, not commands (the OS sandbox hides only folders and files named outright)", "rules", unenforced)
	}
	return runner
}

// subagents are the subagents Task offers: the built-in general-purpose
// agent and the definitions in the agents folders (subagent.Discover),
// read through the workspace so that links cannot lead out. A file that
// cannot be used is a warning in the log; a package's older copy of an
// agent, in a subfolder, is a debug line.
func (a *App) subagents(folders tool.Folders) ([]subagent.Definition, error) {
	fs, err := workspace.OpenLocal(a.root)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	defs, problems := subagent.Discover(fs, folders)
	for _, p := range problems {
		if errors.Is(p, subagent.ErrShadowed) {
			a.logger.Debug("subagent definition shadowed", "err", p)
			continue
		}
		a.logger.Warn("subagent definition skipped", "err", p)
	}
	return defs, nil
}

// remoteAgents are the settings' remote A2A agents (a2aAgents) as
// subagents Task delegates to, but those whose names the definition
// files have (have: theirs win).
func (a *App) remoteAgents(have []subagent.Definition) []subagent.Definition {
	var out []subagent.Definition
	for _, r := range a.settings.A2AAgents {
		if slices.ContainsFunc(have, func(d subagent.Definition) bool { return d.Name == r.Name }) {
			a.logger.Warn("the remote agent of the settings is not used: a subagent definition has its name", "agent", r.Name, "file", r.File)
			continue
		}
		out = append(out, subagent.Definition{Name: r.Name, Remote: r.URL, Headers: r.Headers, Timeout: r.Timeout, Source: "settings", Path: r.File,
			Description: r.Description + " (A remote agent at " + r.URL + ": it sees the prompt you give it, not this workspace; give it everything it needs.)"})
	}
	return out
}

// toolProviders are the runtime's tools: Config.ToolProviders, or the
// default tool set (toolset.With: WebSearch on the backend the
// environment configures), and the MCP servers' unless they are off.
func (a *App) toolProviders(cfg Config) []tool.Provider {
	providers := cfg.ToolProviders
	if providers == nil {
		providers = toolset.With(toolset.Options{Web: builtin.WebOptions{Search: a.search}})
		if a.lsp != nil {
			providers = append(providers, lsp.Provider(a.lsp))
		}
	}
	if cfg.NoMCP || len(a.settings.MCPServers) == 0 {
		return providers
	}
	servers := make([]mcp.Server, len(a.settings.MCPServers))
	for i, s := range a.settings.MCPServers {
		// The user's own servers run as the user, as in Claude Code; a
		// project's in the sandbox.
		servers[i] = mcp.Server{Name: s.Name, Type: s.Type, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers, Timeout: s.Timeout,
			Unsandboxed: !s.Project, OAuth: a.oauthOf(s)}
		if cfg.MCPLogin != nil && cfg.MCPLogin.Server == s.Name {
			servers[i].Login = &cfg.MCPLogin.Login
		}
	}
	opts := mcp.Options{Logger: a.logger, OnChange: a.mcpChanged, LogLevel: a.mcpLogAsked(), OnLog: a.mcpLogged, Elicitor: &a.mcpAsk}
	if a.mcpAuth != "" {
		opts.Tokens = mcp.FileTokens{Dir: a.mcpAuth}
	}
	a.mcp = mcp.NewProvider(servers, opts)
	return append(slices.Clone(providers), a.mcp)
}

// mcpAuthDir is where the sign-ins to MCP servers are kept (mcp.FileTokens):
// the user's configuration folder's orca/mcp-auth, made (0700) if missing —
// it is hidden from the OS sandbox, and a folder made later would not be;
// "" without a configuration folder.
func (a *App) mcpAuthDir() string {
	dir := MCPAuthDir(a.configDir)
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		a.logger.Warn("no folder for the MCP servers' sign-ins", "dir", dir, "err", err)
		return ""
	}
	return dir
}

// oauthOf is s's "oauth" as the MCP client takes it; a private key file
// that cannot be read is a warning (the sign-in then fails, saying so).
func (a *App) oauthOf(s config.MCPServer) *mcp.OAuth {
	o := s.OAuth
	if o == nil {
		return nil
	}
	out := &mcp.OAuth{ClientID: o.ClientID, ClientSecret: o.ClientSecret, ClientMetadataURL: o.ClientMetadataURL, CallbackPort: o.CallbackPort,
		Scopes: o.Scopes, AuthServerMetadataURL: o.AuthServerMetadataURL, ClientCredentials: o.ClientCredentials}
	if o.PrivateKeyFile != "" {
		key, err := os.ReadFile(o.PrivateKeyFile)
		if err != nil {
			a.logger.Warn("MCP server's private key not read", "server", s.Name, "err", err)
		}
		out.PrivateKey = key
	}
	return out
}

// MCPAuthDir is the folder of the sign-ins to MCP servers under the
// user's configuration folder configDir ("" for none).
func MCPAuthDir(configDir string) string {
	if configDir == "" {
		return ""
	}
	return protect.MCPAuthDir(configDir)
}

// settingsEnv reads a variable from the environment, else from the
// settings' env blocks (a project's only in a trusted workspace): where
// the user configures what orca's own tools reach (WebSearch's backend).
func (a *App) settingsEnv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return a.settings.Env[k]
	}
}

// changesFiles reports whether a call may change the workspace's files:
// a call of a tool that says what it touches (tool.Accessor) and is not
// read-only — Edit, Write, Bash — not Read, Grep, nor a tool that
// declares nothing (an MCP server's). The middleware that watch changes
// (the checkpoints', the language servers') are for those calls alone
// (middleware.When): the others do not pay for them.
func (a *App) changesFiles(call *tool.Call) bool {
	tl, ok := a.rt.Tools().Lookup(call.Name)
	if !ok {
		return false
	}
	_, says := tl.(tool.Accessor)
	return says && !tool.TraitsOf(tl).ReadOnly
}
