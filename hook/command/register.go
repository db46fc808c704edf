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
	// hook it stands for.
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
		c, err := New(s.Event, s.Matcher, s.Command, dir, s.Timeout)
		if err == nil {
			c.If, c.Env = s.If, s.Env
			var u func()
			u, err = reg.Register(c.hook, s.Name(), c, hook.Priority(i), hook.Timeout(c.timeout()+waitDelay+time.Second))
			undo = append(undo, u)
		}
		if err != nil {
			unregister()
			return nil, fmt.Errorf("%s: %s: %w", s.File, s.Key, err)
		}
	}
	return unregister, nil
}
