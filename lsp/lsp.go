// Package lsp runs language servers for the agent: after the file tools
// (or a command) change a file, the server's new diagnostics of it join
// the call's observation, and the LSP tool asks a server for a symbol's
// definition, its references, its hover and the symbols of a file or the
// workspace.
//
// A Set holds a workspace's servers (Server: Claude Code's .lsp.json
// entry; Detected: gopls, typescript-language-server, pyright and
// rust-analyzer where installed). Each starts on first use, through the
// sandbox.Runner of the workspace's commands, and is restarted, with
// backoff, when it crashes or stops answering. Nothing a server does
// holds a turn up for long: a change's diagnostics are waited for a few
// seconds (Options.Wait), and those that come later join the next
// change's observation; a request is cancelled after Options.Timeout.
package lsp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/orca-agent/orca/internal/names"
)

// Server is a language server orca may start: Claude Code's .lsp.json
// entry (its command, args, env, extensionToLanguage,
// initializationOptions, settings, startupTimeout, maxRestarts).
type Server struct {
	// Name names the server (the entry's key: "gopls").
	Name string
	// Command and Args start it; it speaks LSP on its standard streams.
	Command string
	Args    []string
	// Env are variables added to the sandbox's environment.
	Env map[string]string
	// Languages maps the extensions of the files it serves (".go") to
	// the language ids it is told ("go").
	Languages map[string]string
	// InitializationOptions are sent in its initialize request.
	InitializationOptions json.RawMessage
	// Settings are what it is answered when it asks for its configuration
	// (workspace/configuration, by section: "python.analysis" is
	// Settings' python object's analysis), and sent at start.
	Settings json.RawMessage
	// StartupTimeout bounds its initialization and the wait for its first
	// diagnostics, while it loads the workspace (DefaultStartupTimeout if
	// zero).
	StartupTimeout time.Duration
	// MaxRestarts is how many times in a row it is restarted after it
	// failed (DefaultMaxRestarts if zero; a negative value: never).
	MaxRestarts int
}

// DefaultStartupTimeout is how long a server is given to start and to
// check the first file it is given.
const DefaultStartupTimeout = 20 * time.Second

// DefaultMaxRestarts is how many times in a row a failing server is
// restarted.
const DefaultMaxRestarts = 5

// Check reports what is wrong with s, naming it.
func (s *Server) Check() error {
	if !names.Token(s.Name) {
		return fmt.Errorf("language server %q: a name is 1 to 64 letters, digits, '_' and '-'", s.Name)
	}
	if strings.TrimSpace(s.Command) == "" {
		return fmt.Errorf("language server %s: no command", s.Name)
	}
	if len(s.Languages) == 0 {
		return fmt.Errorf("language server %s: no extensionToLanguage: name the extensions of the files it serves, such as {\".go\": \"go\"}", s.Name)
	}
	for ext, id := range s.Languages {
		if !strings.HasPrefix(ext, ".") || len(ext) < 2 || strings.ContainsAny(ext, "/\\") {
			return fmt.Errorf("language server %s: extension %q: an extension starts with a dot, such as \".go\"", s.Name, ext)
		}
		if id == "" {
			return fmt.Errorf("language server %s: extension %s has no language id", s.Name, ext)
		}
	}
	if len(s.Settings) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(s.Settings, &obj) != nil {
			return fmt.Errorf("language server %s: settings is not a JSON object", s.Name)
		}
	}
	return nil
}

// setting is the settings' section (dotted) as JSON, null if absent.
func (s *Server) setting(section string) json.RawMessage {
	null := json.RawMessage("null")
	if len(s.Settings) == 0 {
		return null
	}
	v := s.Settings
	if section == "" {
		return v
	}
	for _, part := range strings.Split(section, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return null
		}
		var ok bool
		if v, ok = obj[part]; !ok {
			return null
		}
	}
	return v
}

// Known are the servers orca starts without configuration where their
// command is installed: gopls for Go, typescript-language-server for
// TypeScript and JavaScript, pyright (or basedpyright) for Python,
// rust-analyzer for Rust.
func Known() []Server {
	ts := map[string]string{".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript", ".cts": "typescript",
		".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript"}
	py := map[string]string{".py": "python", ".pyi": "python"}
	return []Server{
		// gopls's workspace symbols: the workspace's packages, not every
		// dependency's.
		{Name: "gopls", Command: "gopls", Languages: map[string]string{".go": "go"}, Settings: json.RawMessage(`{"gopls": {"symbolScope": "workspace"}}`)},
		{Name: "typescript-language-server", Command: "typescript-language-server", Args: []string{"--stdio"}, Languages: ts},
		{Name: "pyright", Command: "pyright-langserver", Args: []string{"--stdio"}, Languages: py},
		{Name: "basedpyright", Command: "basedpyright-langserver", Args: []string{"--stdio"}, Languages: py},
		{Name: "rust-analyzer", Command: "rust-analyzer", Languages: map[string]string{".rs": "rust"}},
	}
}

// Detected returns the Known servers whose command lookPath finds
// (exec.LookPath if nil), with the path it found, one per language:
// pyright before basedpyright.
func Detected(lookPath func(string) (string, error)) []Server {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var out []Server
	taken := map[string]bool{}
	for _, s := range Known() {
		path, err := lookPath(s.Command)
		if err != nil {
			continue
		}
		s.Command = path
		clash := false
		for ext := range s.Languages {
			clash = clash || taken[ext]
		}
		if clash {
			continue
		}
		for ext := range s.Languages {
			taken[ext] = true
		}
		out = append(out, s)
	}
	return out
}

// ExitError is the error of a server that is not running: it exited, or
// was killed after it stopped answering.
type ExitError struct {
	Server string
	Err    error
}

func (e *ExitError) Error() string { return "language server " + e.Server + " " + e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }

// ErrNoServer: no language server serves the file's language.
var ErrNoServer = errors.New("no language server for this file")
