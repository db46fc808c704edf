// Package toolset is orca's default tool set, in one place: the file,
// shell, todo and web tools of tool/builtin, the Skill tool of package skill,
// and the subagent tools of package subagent.
package toolset

import (
	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
)

// Default returns the providers of the default tool set, which contribute,
// in this order: Read, Write, Edit, Glob, Grep, Bash, TodoWrite,
// WebFetch, WebSearch, Task, Skill, AgentOutput and TaskStop. A runtime
// built with no tool providers gets these (agent.Definition.ToolProviders);
// append to them to add tools of your own. WebSearch is off (its calls say
// how to turn it on): With gives it a backend.
func Default() []tool.Provider { return With(Options{}) }

// Options configure the default tool set.
type Options struct {
	// Web configures WebFetch and WebSearch (its Search: the backend the
	// user configured, web.FromEnv).
	Web builtin.WebOptions
}

// With returns the default tool set, configured by o.
func With(o Options) []tool.Provider {
	return []tool.Provider{
		builtin.FilesProvider(), builtin.ShellProvider(), builtin.TodoProvider(), builtin.WebProvider(o.Web),
		subagent.TaskProvider(), skill.Provider(), subagent.BackgroundProvider(),
	}
}
