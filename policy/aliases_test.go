package policy

import (
	"testing"

	"github.com/orca-agent/orca/tool"
)

// A rule may name a tool by an alias it declares, as Claude Code's
// settings name Task "Agent": "Agent(Explore)" denies the Explore
// subagent and nothing else, "Agent" allows the tool; an alias of one
// tool does not reach another.
func TestRulesNameAliases(t *testing.T) {
	task := func(kv ...string) Request {
		return Request{ToolName: "Task", Input: input(t, kv...), Traits: tool.Traits{Aliases: []string{"Agent"}}}
	}
	p := mustNew(t, ModeDefault, []string{"Agent"}, []string{"Agent(Explore)"}, nil)
	if v := p.Decide(task("subagent_type", "Explore", "prompt", "look")); v.Decision != Deny || v.Rule != "Agent(Explore)" {
		t.Errorf("Task(Explore) = %s by %q, want denied by Agent(Explore)", v.Decision, v.Rule)
	}
	if v := p.Decide(task("subagent_type", "general-purpose", "prompt", "look")); v.Decision != Allow || v.Rule != "Agent" {
		t.Errorf("Task(general-purpose) = %s by %q, want allowed by Agent", v.Decision, v.Rule)
	}
	if v := mustNew(t, ModeDefault, nil, []string{"Task(Explore)"}, nil).Decide(task("subagent_type", "Explore")); v.Decision != Deny {
		t.Errorf("Task(Explore) under the rule Task(Explore) = %s by %q", v.Decision, v.Rule)
	}
	other := Request{ToolName: "Deploy", Input: input(t, "subagent_type", "Explore"), Traits: tool.Traits{Aliases: []string{"Ship"}}}
	if v := p.Decide(other); v.Decision != Ask {
		t.Errorf("Deploy = %s by %q, want the mode's ask", v.Decision, v.Rule)
	}
}
