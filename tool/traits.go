package tool

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Traits are what a tool declares about itself. The policy, the runtime
// and the UIs decide from traits and from the Access and Display of each
// call, never from a tool's name, so a custom tool that declares the same
// traits as a built-in one is treated the same way.
//
// The zero value is the cautious default: the tool may change anything,
// and running a call twice may do it twice.
type Traits struct {
	// ReadOnly: the tool changes nothing outside orca's own bookkeeping
	// (the todo list, the background task list). In the permission modes
	// that ask before changes (default, plan) read-only tools run unasked.
	ReadOnly bool
	// Network: the tool reaches out of the machine (WebFetch: the web).
	// A read-only one is still asked about in the modes that ask (default,
	// accept-edits, plan; dont-ask refuses it), unless a rule allows the
	// call: what it reads is not the user's, and where it goes says
	// something. Plan mode asks about it rather than refusing it, as it
	// only reads.
	Network bool
	// Idempotent: running a call again with the same input has no effect
	// beyond the first run, so a call cut off by a crash may be run again.
	Idempotent bool
	// Forks: the tool starts or manages subagent forks; the runtime hands
	// it a subagent.Forker through its context.
	Forks bool
	// Background: the tool may start work that outlives its call; the
	// runtime hands it a Background through its context.
	Background bool
	// Elicits: a call of the tool may ask the person a question while it
	// runs (an MCP server's elicitation); the runtime hands it the turn's
	// elicit.Elicitor through its context (elicit.From).
	Elicits bool
	// Reports: a call of the tool says how far it has come (Report); the
	// runtime hands it a reporter through its context while someone
	// watches the turn's events (the other calls carry none: no cost).
	Reports bool
	// AsksModel: a call of the tool may ask a model a question of its own
	// (WebFetch's prompt); the runtime hands it an Asker through its
	// context (AskerFrom), and counts what the question spends.
	AsksModel bool
	// ChecksRules: a call of the tool may reach further than its input
	// says, and asks the permission rules first (WebFetch, redirected to
	// another host); the runtime hands it a Permitter through its context
	// (PermitterFrom).
	ChecksRules bool
	// Exclusive: a call of the tool runs alone, never beside the other
	// calls of the same response, even when the tool is ReadOnly: it keeps
	// state of its own whose order matters (TodoWrite's list). The runtime
	// runs the calls of read-only tools that neither fork nor are
	// exclusive at once (agent.Definition.MaxParallelTools).
	Exclusive bool
	// Aliases are other names the tool goes by where its users come from:
	// Claude Code's names for the same tool (Task is Claude Code's Agent,
	// AgentOutput its TaskOutput and BashOutput). A hook matcher, a
	// permission rule or a subagent's tool list naming an alias names the
	// tool, and the model's call of an alias is the tool's call, under the
	// tool's name (Registry.Resolve): what the model was taught elsewhere
	// keeps working. The model is offered the tool by its name only.
	Aliases []string
}

// Names returns name and then the aliases tr declares: what a rule, a
// matcher or a tool list may call the tool.
func (tr Traits) Names(name string) []string {
	return append([]string{name}, tr.Aliases...)
}

// Access is what one call touches, read from its input. Paths are as the
// model gave them (workspace-relative or absolute); the policy resolves
// them against the workspace.
type Access struct {
	// Reads are the paths the call reads, lists or searches.
	Reads []string
	// Writes are the paths the call creates, changes or deletes.
	Writes []string
	// Command is the shell command line the call runs, if it runs one.
	Command string
}

// Display is how a UI shows one call.
type Display struct {
	// Summary says in one line what the call does, after the tool's name:
	// "calc.go from line 10", "go test ./...". Empty (with an empty
	// Detail): the UI shows the arguments. What the model sent may hold
	// line breaks: OneLine keeps it on one.
	Summary string
	// Detail is shown under that line when the call starts (a plan's
	// checklist); empty for most tools. A tool that sets it shows what the
	// call does there, so a UI may leave out its successful output.
	Detail string
}

// OneLine returns s on one line, as a Display's Summary is: a line break
// in what the model sent (a path, a pattern, arguments) shows as \n or
// \r, as Go and JSON write it.
func OneLine(s string) string { return oneLine.Replace(s) }

var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// The optional methods a Tool implements to declare its traits.
type (
	// Traited is implemented by tools that declare Traits.
	Traited interface{ Traits() Traits }
	// Accessor is implemented by tools that say which paths and command
	// a call touches.
	Accessor interface {
		Access(input json.RawMessage) Access
	}
	// Displayer is implemented by tools that say how a call is shown.
	Displayer interface {
		Display(input json.RawMessage) Display
	}
)

// CommandRunner is implemented by tools that run shell commands in the
// workspace (Bash). The runtime's built-in verification runs its command
// as a call of the registry's runner (Registry.CommandRunner), so that it
// gets the tool's process handling: its own process group, a timeout, an
// output cap.
type CommandRunner interface {
	Tool
	// CommandInput returns the input of a call that runs command,
	// described as description.
	CommandInput(command, description string) json.RawMessage
}

// TraitsOf returns what t declares (the zero Traits if nothing).
func TraitsOf(t Tool) Traits {
	if x, ok := t.(Traited); ok {
		return x.Traits()
	}
	return Traits{}
}

// AccessOf returns what a call of t with input touches, as t declares it;
// the zero Access (no path, no command) for a tool that declares nothing.
func AccessOf(t Tool, input json.RawMessage) Access {
	if x, ok := t.(Accessor); ok {
		return x.Access(input)
	}
	return Access{}
}

// DisplayOf returns how a call of t with input is shown, as t declares it;
// the zero Display for a tool that declares nothing (UIs then show the
// arguments: CompactArgs).
func DisplayOf(t Tool, input json.RawMessage) Display {
	if x, ok := t.(Displayer); ok {
		return x.Display(input)
	}
	return Display{}
}

// CompactArgs returns input as compact JSON for one line of a UI, "" for
// an empty object or for input that is not JSON.
func CompactArgs(input json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, input) != nil || b.String() == "{}" {
		return ""
	}
	return b.String()
}

// Fields returns the non-empty string values of the named fields of a
// JSON object, in the order named (a field that is missing, not a string
// or not an object's is left out).
func Fields(input json.RawMessage, names ...string) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		var s string
		if json.Unmarshal(m[n], &s) == nil && s != "" {
			out = append(out, s)
		}
	}
	return out
}
