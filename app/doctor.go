package app

import (
	"cmp"
	"errors"
	"os"

	"github.com/orca-agent/orca/config"
	"github.com/orca-agent/orca/lsp"
	"github.com/orca-agent/orca/memory"
	"github.com/orca-agent/orca/sandbox"
)

// Diagnosis is what Open would use in a workspace, and what it would
// refuse or leave out — read without opening anything: no store, no
// session, no server, no command.
type Diagnosis struct {
	// Workspace is the folder, absolute, its links resolved.
	Workspace string
	// Trusted says the workspace's own settings apply in full.
	Trusted bool
	// Settings are the settings files read, in order.
	Settings []string
	// Memory are the memory files the system prompt holds.
	Memory []string
	// Provider and Model are the model chosen; ModelProblem says why no
	// model can be used as configured ("" if one can).
	Provider, Model, ModelProblem string
	// Sandbox says why commands cannot run in the OS sandbox here ("" if
	// they can); NoSandbox that the settings turned it off.
	Sandbox   string
	NoSandbox bool
	// MCPServers are the MCP servers that would start, by name.
	MCPServers []string
	// LanguageServers are the language servers a run would start on first
	// use (LanguageServers), unless it runs with none.
	LanguageServers []lsp.Server
	// Warnings are what the configuration asks for and does not get.
	Warnings []config.Warning
	// Ignored are the settings keys only Claude Code reads, by file.
	Ignored []config.IgnoredKeys
}

// Diagnose says what Open(cfg) would use, as Diagnosis says; an error
// only for a workspace or settings file it cannot read at all (the
// *ConfigError Open would return).
func Diagnose(cfg Config) (*Diagnosis, error) {
	root, err := CheckWorkspace(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	configDir, claudeDir := cfg.userDirs()
	s, warns, err := config.Load(config.LoadOptions{Workspace: root, ConfigDir: cmp.Or(configDir, "-"), ClaudeDir: cmp.Or(claudeDir, "-"),
		NoClaude: cfg.NoClaude, TrustOverride: cfg.Trust, PluginDirs: cfg.PluginDirs})
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	d := &Diagnosis{Workspace: root, Settings: s.Sources, Warnings: warns, Ignored: s.Ignored,
		Trusted: cfg.Trust || configDir != "" && config.NewTrustStore(configDir).Trusted(root)}
	if !cfg.NoMemory {
		files, _, mw := memory.Read(cfg.memoryFolders(root, configDir, claudeDir))
		for _, m := range files {
			d.Memory = append(d.Memory, m.Path)
		}
		d.Warnings = append(d.Warnings, configWarnings(mw)...)
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if m, err := chooseModel(&cfg, s, root, getenv); err != nil {
		d.ModelProblem = err.Error()
		var ce *ConfigError
		if !errors.As(err, &ce) {
			d.ModelProblem = "the model cannot be used: " + err.Error()
		}
	} else {
		d.Provider, d.Model = m.cfg.Provider, m.cfg.Model
	}
	d.NoSandbox = cfg.NoSandbox || s.Sandbox.Runner(root).Disabled
	if err := sandbox.Available(); err != nil && !d.NoSandbox {
		d.Sandbox = err.Error()
	}
	for _, m := range s.MCPServers {
		d.MCPServers = append(d.MCPServers, m.Name)
	}
	d.LanguageServers = LanguageServers(s, lookPathIn(getenv("PATH")))
	return d, nil
}
