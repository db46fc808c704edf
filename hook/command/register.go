package command

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/orca-agent/orca/hook"
)

// Spec is one command hook as a settings file declares it.
type Spec struct {
	// Event is the settings event name, such as "PreToolUse"; Hook is the
	// hook it stands for (none for Notification and StopFailure: a
	// Notifier runs them).
	Event string
	Hook  hook.Name
	// Matcher selects the calls the hook runs for (see Command).
	Matcher string
	// Command is run with sh -c in the workspace root.
	Command string
	// Timeout bounds one run (hook.DefaultTimeout if zero).
	Timeout time.Duration
	// File is the settings file it comes from, and Key where in the file:
	// "hooks.PreToolUse[0].hooks[1]".
	File, Key string
	// Project says it comes from a project file.
	Project bool
	// If, when set, is the condition of the settings' "if" key: the hook
	// runs for a tool call only when If reports true for the tool and its
	// arguments (hooks without a tool call run unconditionally).
	If func(hook.ToolCall) bool
	// Env are more NAME=value variables for the command (Command.Env).
	Env []string
	// Type is the kind of hook: "command" (or empty), "http" or "prompt".
	Type string
	// URL, Headers and AllowedEnvVars are an http hook's (see NewHTTP).
	URL            string
	Headers        map[string]string
	AllowedEnvVars []string
	// Prompt and Model are a prompt hook's (see NewPrompt); Model empty
	// means Options.Prompt's.
	Prompt, Model string
	// Async is the entry's "async": true (Command.Async).
	Async bool
}

// Options are what Register needs besides the specs.
type Options struct {
	// Prompt is the model prompt hooks ask; without one they fail (a
	// hook_failed event) and the run goes on.
	Prompt *PromptModel
	// Model, if set, resolves a prompt hook's model name (an alias such
	// as "haiku") to the model id sent.
	Model func(string) string
}

// Name is the name the hook is registered under: the file, then the key
// without "hooks." ("…/settings.json#PreToolUse[0].hooks[1]"), so that
// failures name the entry to fix.
func (s Spec) Name() string {
	return s.File + "#" + strings.TrimPrefix(s.Key, "hooks.")
}

// Register registers the command hooks specs on reg, running in the
// workspace folder: in order (hook i has priority i), named by Spec.Name.
// The command kills itself at its timeout; the registry's timeout
// (hook.Timeout) is a little longer, so that a timed-out command is reaped
// and reported in its own words before the registry gives up on it. It
// returns the function that unregisters them, in reverse order. If one
// cannot be registered, those registered before it are unregistered and
// the error names it.
func Register(reg *hook.Registry, specs []Spec, workspace string) (unregister func(), err error) {
	return RegisterWith(reg, specs, workspace, Options{})
}

// RegisterWith is Register with opts for the hooks that are not commands.
func RegisterWith(reg *hook.Registry, specs []Spec, workspace string, opts Options) (unregister func(), err error) {
	if reg == nil {
		return nil, errors.New("command hooks: Register on a nil hook registry")
	}
	dir, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("command hooks: workspace %s: %w", workspace, err)
	}
	var undo []func()
	unregister = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		undo = nil
	}
	for i, s := range specs {
		if IsNotifierEvent(s.Event) {
			continue // a Notifier's (NewNotifier)
		}
		c, err := build(s, dir, opts)
		if err == nil {
			var u func()
			u, err = reg.Register(c.hook, s.Name(), c, hook.Priority(i), hook.Timeout(c.timeout()+waitDelay+time.Second), hook.MayBlock())
			undo = append(undo, u)
		}
		if err != nil {
			unregister()
			return nil, fmt.Errorf("%s: %s: %w", s.File, s.Key, err)
		}
	}
	return unregister, nil
}

// build makes the handler of s, running in the folder dir.
func build(s Spec, dir string, opts Options) (c *Command, err error) {
	switch s.Type {
	case "http":
		c, err = NewHTTP(s.Event, s.Matcher, s.URL, s.Headers, s.AllowedEnvVars, s.Timeout)
	case "prompt":
		model := s.Model
		if model != "" && opts.Model != nil {
			model = opts.Model(model)
		}
		c, err = NewPrompt(s.Event, s.Matcher, s.Prompt, model, opts.Prompt, s.Timeout)
	case "", "command":
		c, err = New(s.Event, s.Matcher, s.Command, dir, s.Timeout)
	default:
		err = fmt.Errorf("unknown hook type %q", s.Type)
	}
	if err != nil {
		return nil, err
	}
	c.If, c.Env, c.Async = s.If, s.Env, s.Async
	return c, nil
}
