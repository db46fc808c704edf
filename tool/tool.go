// Package tool defines what a tool is to orca: a name, a description, a JSON
// Schema for its input and an Execute method whose failures are observations
// for the model, never failures of the turn.
//
// Tools reach a runtime through providers: each runtime asks its providers
// for tools once, when it is built, and keeps them in its own Registry. The
// registry compiles every schema once and validates every call against it
// before the tool runs; the definitions the model receives are exactly the
// registry's.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/workspace"
)

// Tool is one capability offered to the model. Implementations must be safe
// for concurrent use: several turns may call the same tool at once.
type Tool interface {
	// Name is what the model calls the tool; unique within a registry.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Schema is the JSON Schema of the tool's input object.
	Schema() json.RawMessage
	// Execute runs the call. Its input has already been validated against
	// Schema. A failure is reported as a Result with IsError set; Execute
	// must return promptly once ctx is done.
	Execute(ctx context.Context, call *Call) Result
}

// Call is one invocation of a tool, as the runtime hands it over.
type Call struct {
	// ID is the model's tool use id.
	ID string
	// Name is the tool's name.
	Name string
	// Input is the validated JSON input.
	Input json.RawMessage
	// Scope says on whose behalf the call runs: the runtime, the user's
	// session (also in a subagent fork, which has no session of its own),
	// the turn and the execution making the call. Per-execution tool state
	// (a todo list) is keyed by Scope.StateKey.
	scope.Scope
}

// Result is what the model observes of a call.
type Result struct {
	Content string
	IsError bool
	// Media are images and documents the model is shown besides Content
	// (a screenshot, a PDF read): sent in the tool result where the
	// provider takes them there, and as the provider allows otherwise.
	Media []*llm.Media
	// Response is the tool's structured account of a call, for hooks and
	// programs, never sent to the model; it must encode to a JSON object.
	// The built-in tools give the objects Claude Code's hooks receive as
	// tool_response ({filePath, …} for Write and Edit, {stdout, stderr,
	// interrupted, …} for Bash); a tool without one gives nil, and hooks
	// get Content instead.
	Response any
}

// Errorf returns an error Result with a formatted message.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// Text returns a successful Result.
func Text(s string) Result { return Result{Content: s} }

type callKey struct{}

// WithCall returns a context carrying call; typed tools receive such a
// context so that they can learn their session with CallFrom.
func WithCall(ctx context.Context, call *Call) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

// CallFrom returns the call carried by ctx, or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Granter grants permission rules (policy rules, as written:
// "Bash(git diff:*)", "Read") for the rest of the turn a tool runs in: what
// a skill's allowed-tools lets it use without asking. A grant answers what
// the policy would ask about, as a user's approval would; it never beats a
// deny rule, built-in protection or the sandbox. The runtime hands one to
// the tools whose traits say they fork (Traits.Forks), through their
// context (GranterFrom).
type Granter interface {
	// Grant adds rules; an invalid one is an error naming it, and none
	// is added.
	Grant(rules []string) error
}

type granterKey struct{}

// WithGranter returns a context carrying g.
func WithGranter(ctx context.Context, g Granter) context.Context {
	return context.WithValue(ctx, granterKey{}, g)
}

// GranterFrom returns the Granter carried by ctx, or nil.
func GranterFrom(ctx context.Context) Granter {
	g, _ := ctx.Value(granterKey{}).(Granter)
	return g
}

type grantsKey struct{}

// WithGrants returns a context carrying rules for a fork started with it
// (subagent.Forker.Fork): the fork's turn is granted them, as if its
// Granter had.
func WithGrants(ctx context.Context, rules []string) context.Context {
	return context.WithValue(ctx, grantsKey{}, rules)
}

// GrantsFrom returns the rules WithGrants put in ctx.
func GrantsFrom(ctx context.Context) []string {
	r, _ := ctx.Value(grantsKey{}).([]string)
	return r
}

// Expander has commands the user invokes directly: a turn's input that is
// one of its commands ("/name arguments": a skill, an MCP server's
// prompt) is expanded before the model sees it. The runtime asks its
// expanders in order — tools in registry order, then those handed over
// through Env.OnExpander —; the first that expands the input wins.
type Expander interface {
	// Commands lists the commands, for a UI's help and completion; it
	// may change over a runtime's life (an MCP server's prompt list).
	Commands() []Command
	// Expand returns what the input becomes, or nil when the input is
	// not one of its commands. An error means it is one, and could not be
	// expanded (a server that is down, a required argument missing): the
	// turn fails with it rather than send the command to the model.
	Expand(ctx context.Context, input string) (*Expansion, error)
}

// SplitCommand splits a turn's input that invokes a command, "/name
// arguments", into the name and the arguments (after the first space or
// line break); ok is false for input that does not start with a slash.
func SplitCommand(input string) (name, args string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(input), "/")
	if !ok {
		return "", "", false
	}
	name, args, _ = strings.Cut(rest, " ")
	if nl := strings.IndexByte(name, '\n'); nl >= 0 {
		name, args = name[:nl], rest[nl+1:]
	}
	return name, args, true
}

// A Command is one of an Expander's commands.
type Command struct {
	// Name is what follows the slash: "pdf", "mcp__docs__review".
	Name string
	// Description says what it does, Args what it takes ("<file> [focus]"),
	// for a help listing; either may be empty.
	Description, Args string
}

// An Expansion is what a command becomes.
type Expansion struct {
	// Text replaces the turn's input.
	Text string
	// Grants are the permission rules it grants for the turn (see
	// Granter).
	Grants []string
}

// Env is what a provider may give its tools: the runtime's collaborators.
type Env struct {
	// RuntimeID is the id of the runtime being built.
	RuntimeID string
	// FS is the runtime's workspace.
	FS workspace.FileSystem
	// Logger is the runtime's logger; never nil.
	Logger *slog.Logger
	// Folders are where the user's and the project's configuration beyond
	// the workspace's .orca is read from.
	Folders
	// Subagents are the subagents the runtime's forks can run, for tools
	// that offer them (Task lists them to the model).
	Subagents []Subagent
	// Sandbox runs the commands tools start on the model's behalf (Bash):
	// the runtime's, with its workspace writable and orca's own state
	// read-only. Nil means a runner of the tool's own making.
	Sandbox *sandbox.Runner
	// Hidden reports whether a workspace path (slash-separated, relative)
	// is one the tools that list and search may not show: a deny rule on
	// reading covers it. Nil: none is.
	Hidden func(rel string) bool
	// Registry is the registry being filled: a provider whose tools change
	// after the build (an MCP server's list) adds and removes its own
	// there later. Nil for a provider asked outside a runtime.
	Registry *Registry
	// OnClose hands the runtime something to close when it closes,
	// before its tools (a provider's server connections). Nil outside a
	// runtime: the provider's caller closes what it made.
	OnClose func(io.Closer)
	// OnExpander hands the runtime commands the user invokes directly
	// that are no tool's (an MCP server's prompts). Nil outside a runtime.
	OnExpander func(Expander)
}

// Folders are where a runtime reads configuration — skills, subagents —
// besides the workspace's own .orca folder.
type Folders struct {
	// ConfigDir is the user's configuration folder (the parent of its
	// orca folder: user skills, subagents, settings, trust), or "" for
	// none.
	ConfigDir string
	// ClaudeDir is the user's Claude Code folder (~/.claude: its skills
	// and agents folders), or "" for none.
	ClaudeDir string
	// Claude: the project's Claude Code folder, .claude (its skills and
	// agents folders), is read too.
	Claude bool
	// Plugins are Claude Code plugin folders whose skills and agents
	// folders are read too, their names prefixed with the plugin's
	// ("plugin:skill"), as Claude Code names them.
	Plugins []PluginFolder
	// Untrusted: the workspace is not trusted, so what its own files
	// would grant (the allowed-tools of its skills and slash commands) is
	// not granted; they load all the same.
	Untrusted bool
}

// PluginFolder is a plugin's name and folder.
type PluginFolder struct {
	Name, Dir string
}

// Subagent describes a subagent a fork can run.
type Subagent struct {
	Name, Description string
	// Tools are the names of the tools it may use: nil means all, an
	// empty list that is not nil none.
	Tools []string
	// DisallowedTools are names of tools it may not use, taken away from
	// Tools (or from all).
	DisallowedTools []string
}

// Provider contributes tools to a runtime. Tools is called once per runtime,
// so state a provider's tools keep (a todo list) belongs to one runtime. A
// tool that implements io.Closer is closed when its runtime closes.
type Provider interface {
	Name() string
	Tools(env Env) ([]Tool, error)
}

// NewProvider returns a Provider named name whose Tools calls fn.
func NewProvider(name string, fn func(env Env) ([]Tool, error)) Provider {
	return providerFunc{name: name, fn: fn}
}

type providerFunc struct {
	name string
	fn   func(Env) ([]Tool, error)
}

func (p providerFunc) Name() string                  { return p.name }
func (p providerFunc) Tools(env Env) ([]Tool, error) { return p.fn(env) }

// Static returns a provider that contributes the given tools to every
// runtime. The same tool values are shared by every runtime built with it.
func Static(name string, tools ...Tool) Provider {
	return NewProvider(name, func(Env) ([]Tool, error) { return tools, nil })
}
