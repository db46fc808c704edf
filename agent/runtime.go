// Package agent assembles runtimes and runs turns.
//
// A Definition says what an agent is (name, system prompt, model, limits,
// tool providers); New, the factory, builds a Runtime from a definition and
// its collaborators (the model client, the workspace); an Executor runs one
// turn of a session on a runtime: prompt and tool definitions to the model,
// every requested tool call through the registry, the observations back,
// until the model answers or the iteration limit is reached. Each tool
// call of a conversation has an id of its own: one a provider sent
// without an id, with an id used before in the conversation, or with one
// other providers refuse (anything but letters, digits, '_' and '-') is
// renamed before it runs (call, call_2, x_2, …).
package agent

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/elicit"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/memory"
	"github.com/orca-agent/orca/middleware"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/queue"
	"github.com/orca-agent/orca/sandbox"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// Defaults applied by New to a Definition's zero fields.
const (
	DefaultMaxIterations = 50
	DefaultMaxTokens     = 8192
	DefaultMaxRetries    = 2
	// DefaultContextWindow is the context window assumed when the
	// definition gives none, in tokens.
	DefaultContextWindow = 200_000
	// DefaultCompactAt is the share of the context window past which the
	// transcript is compacted before the next model call.
	DefaultCompactAt = 0.8
	// DefaultKeepTurns is how many of the newest user turns compaction
	// keeps verbatim.
	DefaultKeepTurns = 2
	// DefaultKeepToolResults is how many of the newest tool results
	// clearing keeps whole, and how many of the newest tool exchanges a
	// summary of the running turn keeps verbatim.
	DefaultKeepToolResults = 6
	// DefaultMaxRevisions caps the POST_VERIFY revisions of one turn.
	DefaultMaxRevisions = 2
	// DefaultMaxContinuations caps how many times STOP (or SUBAGENT_STOP)
	// hooks may send one turn back to work: loops that hooks drive (Claude
	// Code's ralph-wiggum) end themselves, by stop_hook_active or a count
	// of their own; the cap, with the iteration limit and the budgets, is
	// the guard against one that does not.
	DefaultMaxContinuations = 20
	// DefaultMaxParallelTools is how many calls of one response run at
	// once, as Claude Code's default.
	DefaultMaxParallelTools = 10
)

// Definition says what an agent is.
type Definition struct {
	// Name names the agent; it is the Component of its model calls.
	// Required.
	Name string
	// SystemPrompt is sent as the system prompt of every model call.
	SystemPrompt string
	// Model is passed to the client as Request.Model.
	Model string
	// ModelAliases say which models the model names of subagent
	// definitions stand for (llm/provider.ModelAliases builds the table):
	// a subagent whose model is a key runs on its value. One whose model
	// is an alias of Claude Code's (subagent.ModelAliases) that the table
	// lacks runs on its parent's model, and the runtime logs a warning;
	// any other name is a model id, sent as written.
	ModelAliases map[string]string
	// MaxIterations caps the model calls of one turn (DefaultMaxIterations
	// if zero).
	MaxIterations int
	// MaxTokens caps the output of one model call (DefaultMaxTokens if zero).
	MaxTokens int
	// MaxRetries caps the retries of a model call that failed with a
	// retryable error (DefaultMaxRetries if zero; negative means none).
	MaxRetries int
	// ToolProviders fill the runtime's registry, in order; none means no
	// tools (toolset.Default() is orca's own set, which app offers).
	ToolProviders []tool.Provider
	// Budget is every session's default budget (a session may override
	// it); zero fields are unlimited.
	Budget budget.Limits
	// Prices price model usage for the cost budget and totals
	// (budget.DefaultPrices if nil).
	Prices budget.Prices
	// ContextWindow is the model's context window in tokens (if zero:
	// the catalog's for Model, else DefaultContextWindow).
	ContextWindow int64
	// Windows are context windows learnt before, by model, in tokens:
	// where a refusal of a prompt as too long showed a model's window to
	// be smaller than the runtime was told (Collaborators.OnWindowLearnt
	// is told of each; app keeps them in the store). Compaction keeps
	// under them from the first call.
	Windows map[string]int64
	// Catalog is what is known of the models (catalog.Default() if nil):
	// their windows, longest answers, and whether they take images and
	// PDFs — media the catalog says a model takes not are described to it
	// instead of sent, and a request showing such media is refused
	// (ErrMediaNotTaken).
	Catalog *catalog.Catalog
	// CompactAt is the share of the context window past which the
	// transcript is compacted automatically (DefaultCompactAt if zero;
	// negative turns automatic compaction off).
	CompactAt float64
	// KeepTurns is how many of the newest user turns compaction keeps
	// verbatim (DefaultKeepTurns if zero).
	KeepTurns int
	// KeepToolResults is how many of the newest tool results stay whole
	// when older ones are cleared, and how many of the newest tool
	// exchanges a summary of the running turn keeps verbatim
	// (DefaultKeepToolResults if zero).
	KeepToolResults int
	// MaxResultChars caps one tool result in the conversation: a longer
	// one is cut to its start and end, and kept whole in a file under
	// .orca/results that the model can Read (if zero: a tenth of the
	// context window, at four characters a token, and at least 2000).
	MaxResultChars int
	// Verify is a command (run like the Bash tool, in the workspace root)
	// that checks a finished turn, e.g. "go test ./...". Empty means no
	// built-in verification.
	Verify string
	// MaxRevisions caps how many consecutive times verification may send
	// a turn back to work (DefaultMaxRevisions if zero).
	MaxRevisions int
	// MaxContinuations caps how many times STOP and SUBAGENT_STOP hooks
	// may send a turn back to work (DefaultMaxContinuations if zero); a
	// hook that asks once more ends the turn with a hook_message event
	// saying so.
	MaxContinuations int
	// MaxDepth caps how deep subagent forks nest (DefaultMaxDepth if zero).
	MaxDepth int
	// MaxParallelTools caps how many calls of one response's read-only
	// tools (tool.Traits: read-only, not forking, not exclusive) run at
	// once (DefaultMaxParallelTools if zero). 1 runs every call after the
	// one before, and asks the model for one call per response
	// (llm.Request.OneToolCall).
	MaxParallelTools int
	// Output, if set, asks every turn for its answer as a JSON value of a
	// schema (see Output; a Request's Output overrides it). Its schema is
	// compiled by New: one that does not compile fails the build.
	Output *Output
	// Subagents are the subagents Task offers; nil means the built-in
	// general-purpose agent alone (subagent.Discover finds the files'
	// too: app offers those).
	Subagents []subagent.Definition
}

// Collaborators are what a runtime works with but does not define.
type Collaborators struct {
	// Client is the model. Required. The runtime never closes it.
	Client llm.Client
	// Fallbacks are the models a call falls over to, in order, when
	// Client fails it with a retryable error after its retries (never
	// once any of the answer was streamed): see Fallback. The runtime's
	// subagents fall over along the same chain, with breakers of their
	// own.
	Fallbacks []Fallback
	// FS is the workspace, owned by the caller: the runtime never closes
	// it. Give either FS or Workspace.
	FS workspace.FileSystem
	// Workspace is a folder the runtime opens as its workspace (and closes
	// with itself).
	Workspace string
	// WorkspaceID names the workspace in the runtime's id (see RuntimeID)
	// instead of its path, so that a workspace moved or copied elsewhere
	// keeps its sessions (app keeps one in .orca/workspace-id). Empty: the
	// workspace root's path.
	WorkspaceID string
	// Logger receives the runtime's logs; slog.Default() if nil.
	Logger *slog.Logger
	// Services are the process-wide hook and middleware registries, event
	// bus, message queues and background tasks, shared by every runtime
	// of the process. The runtime never closes services it was given; nil
	// means services of its own (Runtime.Services), which it closes.
	Services *Services
	// Policy decides which tool calls run, ask or are denied, with its
	// protection complete: the workspace's own state is built in, and what
	// else the caller protects — the user's folders, where links in
	// protected state lead — is the policy's options (policy.WithUserConfigDir,
	// policy.WithClaudeDir, policy.WithTargets; app adds them). Nil allows
	// every call that the built-in protection allows.
	Policy *policy.Policy
	// Approver answers the calls the policy asks about; nil means
	// policy.Headless (every ask is refused, with a reason that says how to
	// allow it).
	Approver policy.Approver
	// Elicitor asks the person the questions MCP servers ask during a
	// tool call (elicit.Request), after the ELICITATION hooks, which may
	// answer first; nil declines them, saying no one can answer in this
	// run (elicit.Headless), unless a hook answers.
	Elicitor elicit.Elicitor
	// Remote runs the tasks of the subagents that are remote A2A agents
	// (subagent.Definition.Remote); nil: such a subagent is refused,
	// saying so.
	Remote subagent.Remote
	// Notifier, when set, is told when a tool call waits for a person's
	// approval: before the approver asks (unless it is policy.Headless,
	// which asks no one, or policy.Parking, which parks), and when the
	// call is parked for someone to decide later (Claude Code's
	// Notification hooks, permission_prompt); and when the model's
	// provider ends the user's turn (its StopFailure hooks).
	Notifier hook.Notifier
	// Approvals keeps "always allow" approvals; nil means a MemoryApprovals
	// of the runtime's own.
	Approvals Approvals
	// Sandbox runs the commands of the runtime's tools (Bash, the
	// verification command) in the OS sandbox, as given: its policy is
	// complete (app builds it: the workspace writable, its state and the
	// user's folders read-only, the targets of links, the caches). Nil
	// means the workspace's own policy (sandbox.WorkspacePolicy(root, ""))
	// alone. Sandbox.Disabled is the explicit opt-out.
	Sandbox *sandbox.Runner
	// Folders are the folders the runtime's tools read beside the
	// workspace (tool.Env.Folders): the user's configuration and Claude
	// Code folders as resolved, the project's .claude, plugins, and
	// whether the workspace is trusted. The zero value reads none of them
	// (app resolves them from its Config).
	Folders tool.Folders
	// NestedMemory are the names of memory files (CLAUDE.md, AGENTS.md)
	// that the runtime adds to a tool call's observation when the call
	// first works in a subfolder of the workspace that has one, as
	// Claude Code does with a subtree's CLAUDE.md; none if empty.
	NestedMemory []string
	// PathRules are instructions for the files some globs match (Claude
	// Code's .claude/rules files with "paths"): the runtime adds a rule
	// to the observation of the first call of an execution that reads or
	// writes a workspace path it matches.
	PathRules []memory.PathRule
	// TranscriptDir, when set, is where the runtime keeps each
	// conversation as a file in Claude Code's transcript shape for hooks
	// to read (hook.Common.TranscriptPath); "" keeps none.
	TranscriptDir string
	// OnWindowLearnt, when set, is told of each context window the
	// runtime (or one of its subagents) learns from a refusal of a prompt
	// as too long — model, window in tokens — to keep it for the next
	// runtime (Definition.Windows). It is called on the turn's goroutine,
	// once per window learnt.
	OnWindowLearnt func(model string, tokens int64)
}

// Runtime is an assembled agent: definition, tool registry and
// collaborators. It serves any number of sessions and concurrent turns; it
// does not change after New returns.
type Runtime struct {
	// offer caches the definitions offered to the model (offered).
	offer atomic.Pointer[offer]

	id     string
	def    Definition
	client llm.Client
	// chain is the fallback chain after client (Collaborators.Fallbacks),
	// and breakers the circuit breakers of client and of each of them.
	chain    []Fallback
	breakers []breaker
	// output is the definition's Output, compiled.
	output *output
	fs     workspace.FileSystem
	tools  *tool.Registry
	// expanders have the commands the user invokes directly
	// (tool.Expander): tools in registry order, then those the providers
	// handed over (tool.Env.OnExpander).
	expanders []tool.Expander
	logger    *slog.Logger
	hooks     *hook.Registry
	mw        *middleware.Registry
	bus       *event.Bus
	queues    *queue.Manager
	policy    *policy.Policy
	// guard is the policy of calls that write or run commands when policy
	// is nil: bypass mode, which denies only what built-in protection
	// refuses.
	guard     *policy.Policy
	approver  policy.Approver
	elicitor  elicit.Elicitor
	notifier  hook.Notifier
	approvals Approvals
	svc       *Services
	tasks     *subagent.Manager
	subagents []subagent.Definition
	remote    subagent.Remote
	children  sync.Map // subagent name → *Runtime
	// transcripts keeps the conversations hooks read (nil: none).
	transcripts *transcripts
	// windows are the context windows learnt, shared with the runtime's
	// subagents.
	windows *windows
	// models caches the catalog's entries by model name (nil for a model
	// it lacks).
	modelsMu sync.RWMutex
	models   map[string]*catalog.Model
	// noMedia are the models that refused a request showing them media
	// (model name → true): they are sent their descriptions instead;
	// mediaRefused, whether there is one (model calls look no further
	// without).
	noMedia      sync.Map
	mediaRefused atomic.Bool
	// nested loads the subfolders' memory files (nil: none).
	nested  *memory.Nested
	closers []io.Closer // what New created, closed in reverse order

	closeOnce sync.Once
	closeErr  error
}

// New is the factory: it builds a runtime from def and c. Every tool
// provider runs once, in order; a provider error, an invalid tool or a
// duplicate tool name fails the build (and releases what was created).
func New(def Definition, c Collaborators) (_ *Runtime, err error) {
	if def.Name == "" {
		return nil, errors.New("agent: definition has no name")
	}
	if c.Client == nil {
		return nil, fmt.Errorf("agent %q: no model client", def.Name)
	}
	if def.MaxIterations < 0 {
		return nil, fmt.Errorf("agent %q: max iterations %d is negative", def.Name, def.MaxIterations)
	}
	if def.MaxIterations == 0 {
		def.MaxIterations = DefaultMaxIterations
	}
	if def.Catalog == nil {
		def.Catalog = catalog.Default()
	}
	info, _ := def.Catalog.Lookup("", def.Model)
	if def.MaxTokens == 0 {
		// No longer than the model answers (the API refuses more).
		def.MaxTokens = DefaultMaxTokens
		if info.MaxOutput > 0 {
			def.MaxTokens = min(def.MaxTokens, int(info.MaxOutput))
		}
	}
	if def.MaxRetries == 0 {
		def.MaxRetries = DefaultMaxRetries
	} else if def.MaxRetries < 0 {
		def.MaxRetries = 0
	}
	if def.ContextWindow <= 0 {
		def.ContextWindow = cmp.Or(info.ContextWindow, DefaultContextWindow)
	}
	if def.CompactAt == 0 {
		def.CompactAt = DefaultCompactAt
	}
	if def.MaxDepth <= 0 {
		def.MaxDepth = DefaultMaxDepth
	}
	if def.MaxRevisions <= 0 {
		def.MaxRevisions = DefaultMaxRevisions
	}
	if def.MaxContinuations <= 0 {
		def.MaxContinuations = DefaultMaxContinuations
	}
	if def.MaxParallelTools <= 0 {
		def.MaxParallelTools = DefaultMaxParallelTools
	}
	if def.KeepTurns <= 0 {
		def.KeepTurns = DefaultKeepTurns
	}
	if def.KeepToolResults <= 0 {
		def.KeepToolResults = DefaultKeepToolResults
	}
	if def.MaxResultChars <= 0 {
		def.MaxResultChars = max(int(def.ContextWindow*4/10), 2000)
	}
	if def.Prices == nil {
		def.Prices = budget.DefaultPrices
	}
	for i, f := range c.Fallbacks {
		if f.Client == nil || f.Model == "" {
			return nil, fmt.Errorf("agent %q: fallback %d has no client or no model", def.Name, i)
		}
	}
	rt := &Runtime{def: def, client: c.Client, chain: slices.Clone(c.Fallbacks), windows: newWindows(def.Windows, c.OnWindowLearnt), logger: c.Logger, approver: c.Approver, elicitor: c.Elicitor, remote: c.Remote, notifier: c.Notifier, svc: c.Services, transcripts: newTranscripts(c.TranscriptDir), nested: memory.NewNested(c.NestedMemory, c.PathRules)}
	if len(rt.chain) > 0 {
		rt.breakers = make([]breaker, len(rt.chain)+1)
	}
	if def.Output != nil {
		o, err := compileOutput(def.Output, c.Client)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		rt.output = o
	}
	if rt.approver == nil {
		rt.approver = policy.Headless{}
	}
	rt.approvals = c.Approvals
	if rt.approvals == nil {
		rt.approvals = &MemoryApprovals{}
	}
	if rt.logger == nil {
		rt.logger = slog.Default()
	}
	if rt.svc == nil {
		// Hooks registered on the runtime's own services fire: leaving
		// Services out must not turn every hook off.
		rt.svc = NewServices(rt.logger)
		rt.closers = append(rt.closers, rt.svc)
	}
	s := rt.svc
	rt.hooks, rt.mw, rt.bus, rt.queues, rt.tasks = s.Hooks, s.Middleware, s.Bus, s.Queues, s.Tasks
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	switch {
	case c.FS != nil && c.Workspace != "":
		return nil, fmt.Errorf("agent %q: give a workspace folder or a file system, not both", def.Name)
	case c.FS != nil:
		rt.fs = c.FS
	case c.Workspace != "":
		// Every write asks the policy again where it really lands, in one
		// operation with the write: a link swapped after the tool's call
		// was decided cannot lead it into protected state.
		local, err := workspace.OpenLocal(c.Workspace, workspace.WriteGuard(rt.writeRefused))
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
		rt.fs = local
		rt.closers = append(rt.closers, local)
	default:
		return nil, fmt.Errorf("agent %q: no workspace", def.Name)
	}
	rt.id = RuntimeID(def.Name, cmp.Or(c.WorkspaceID, rt.fs.Root()))
	rt.tools = tool.NewRegistry()
	rt.closers = append(rt.closers, rt.tools)
	env := tool.Env{RuntimeID: rt.id, FS: rt.fs, Logger: rt.logger.With("runtime", rt.id), Folders: c.Folders}
	for _, dir := range []string{c.Folders.ConfigDir, c.Folders.ClaudeDir} {
		if dir == "-" {
			return nil, fmt.Errorf("agent %q: folder %q: Folders are given resolved (empty means none)", def.Name, dir)
		}
	}
	if rt.policy = c.Policy; rt.policy == nil {
		// Without a policy every call is allowed but what built-in
		// protection refuses: writes and commands go through a bypass-mode
		// policy, which refuses only that.
		if rt.guard, err = policy.New(policy.ModeBypass, policy.Rules{}); err != nil {
			return nil, fmt.Errorf("agent %q: %w", def.Name, err)
		}
	}
	if rt.tasks == nil {
		// Services without a task manager: the runtime has its own, and
		// closes it.
		rt.tasks = subagent.NewManager()
		rt.closers = append(rt.closers, closerFunc(rt.tasks.Close))
	}
	rt.subagents = def.Subagents
	if rt.subagents == nil {
		rt.subagents = []subagent.Definition{subagent.GeneralPurpose}
	}
	for _, d := range rt.subagents {
		env.Subagents = append(env.Subagents, tool.Subagent{Name: d.Name, Description: d.Description, Tools: d.Tools, DisallowedTools: d.DisallowedTools})
	}
	if root := rt.fs.Root(); root != "" {
		runner := sandbox.Runner{Policy: sandbox.WorkspacePolicy(root, "")}
		if c.Sandbox != nil {
			runner = *c.Sandbox
		}
		env.Sandbox = &runner
	}
	if rt.policy != nil && rt.policy.DeniesReads() {
		p, fs := rt.policy, rt.fs
		env.Hidden = func(rel string) bool { return p.ReadDenied(fs, rel) }
	}
	env.Registry = rt.tools
	env.OnClose = func(c io.Closer) { rt.closers = append(rt.closers, c) }
	var handed []tool.Expander
	env.OnExpander = func(x tool.Expander) {
		if x != nil {
			handed = append(handed, x)
		}
	}
	for _, p := range def.ToolProviders {
		if p == nil {
			return nil, fmt.Errorf("agent %q: nil tool provider", def.Name)
		}
		ts, err := p.Tools(env)
		if err != nil {
			return nil, fmt.Errorf("agent %q: tool provider %q: %w", def.Name, p.Name(), err)
		}
		for _, t := range ts {
			if err := rt.tools.Add(t); err != nil {
				return nil, fmt.Errorf("agent %q: tool provider %q: %w", def.Name, p.Name(), err)
			}
			if x, ok := t.(tool.Expander); ok {
				rt.expanders = append(rt.expanders, x)
			}
		}
	}
	rt.expanders = append(rt.expanders, handed...)
	if def.Verify != "" {
		if _, ok := rt.tools.CommandRunner(); !ok {
			return nil, fmt.Errorf("agent %q: verification command %q needs a tool that runs commands (tool.CommandRunner, such as Bash), which no provider registered", def.Name, def.Verify)
		}
	}
	return rt, nil
}

// RuntimeID is the id of the runtime of agent over workspace (a
// WorkspaceID, or the workspace root's path): the same for every process,
// so that sessions resume, and different for another agent or workspace,
// which never reach them.
func RuntimeID(agent, workspace string) string {
	h := sha256.New()
	for _, s := range []string{agent, workspace} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return agent + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// ID returns the runtime's deterministic id.
func (r *Runtime) ID() string { return r.id }

// Notify tells the runtime's Notifier (Collaborators.Notifier), if it has
// one, that the user is needed in session for what typ says (such as
// hook.NotifyIdle) — for what happens outside a turn: the chat waiting
// for the next prompt. The runtime sends its own (NotifyPermission).
func (r *Runtime) Notify(session, typ, message string) {
	if r.notifier == nil {
		return
	}
	c := r.common(scope.Scope{RuntimeID: r.id, SessionID: session})
	if ts := r.transcripts; ts != nil {
		c.TranscriptPath = ts.lastPath(session)
	}
	r.notifier.Notify(hook.Notification{Common: c, Type: typ, Message: message, Title: "orca"})
}

// common is the part of hook payloads (and notifications) that the
// runtime knows of a run in s: its scope, the workspace and the permission
// mode.
func (r *Runtime) common(s scope.Scope) hook.Common {
	c := hook.Common{Scope: s, Cwd: r.fs.Root()}
	if r.policy != nil {
		c.PermissionMode = string(r.policy.Mode)
	}
	return c
}

// Definition returns the definition with defaults applied.
func (r *Runtime) Definition() Definition { return r.def }

// Client returns the model client.
func (r *Runtime) Client() llm.Client { return r.client }

// FS returns the workspace.
func (r *Runtime) FS() workspace.FileSystem { return r.fs }

// Tools returns the runtime's tool registry.
func (r *Runtime) Tools() *tool.Registry { return r.tools }

// Logger returns the runtime's logger.
func (r *Runtime) Logger() *slog.Logger { return r.logger }

// Services returns the services the runtime uses: those it was given, or
// its own.
func (r *Runtime) Services() *Services { return r.svc }

// Hooks returns the hook registry the runtime runs (its services').
func (r *Runtime) Hooks() *hook.Registry { return r.hooks }

// Middleware returns the middleware registry the runtime runs (its
// services').
func (r *Runtime) Middleware() *middleware.Registry { return r.mw }

// Policy returns the runtime's permission policy, or nil (allow all).
func (r *Runtime) Policy() *policy.Policy { return r.policy }

// Bus returns the event bus the runtime publishes to (its services').
func (r *Runtime) Bus() *event.Bus { return r.bus }

// Queues returns the message queues the executor drains (its services').
func (r *Runtime) Queues() *queue.Manager { return r.queues }

// Tasks returns the manager of the runtime's background tasks (its
// services'): subagents started with Task, commands started with Bash's
// run_in_background. They outlive the sessions' handles; the runtime's
// Close stops what still runs.
func (r *Runtime) Tasks() *subagent.Manager { return r.tasks }

// Commands lists the commands the user may invoke as a turn's input
// ("/name arguments": skills, MCP servers' prompts), in the order the
// runtime tries them; of two of one name, the first is the one run.
func (r *Runtime) Commands() []tool.Command {
	var out []tool.Command
	seen := map[string]bool{}
	for _, x := range r.expanders {
		for _, c := range x.Commands() {
			if !seen[c.Name] {
				seen[c.Name] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Close releases what New created — the tools' resources, a workspace
// opened from a folder, services of its own — in reverse order, and
// nothing else: the client, an injected file system and injected services
// stay open. Close is idempotent.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		var errs []error
		for i := len(r.closers) - 1; i >= 0; i-- {
			if err := r.closers[i].Close(); err != nil {
				errs = append(errs, err)
			}
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// NewQueueMetrics returns the queue-metrics interceptor for agent runs over
// the queues m (see queue.Metrics): wrap the executor with it using
// intercept.Wrap.
func NewQueueMetrics(m *queue.Manager, logger *slog.Logger) *queue.Metrics[*Runtime, Request, *Result] {
	return queue.NewMetrics[*Runtime, Request, *Result](m, func(r Request) string { return r.SessionID }, logger)
}

// writeRefused is the workspace's write guard: it refuses a write whose
// real target protection or a deny rule covers.
func (rt *Runtime) writeRefused(rel string) error {
	// Asked as a write of any tool: protection and Edit deny rules apply.
	req := policy.Request{ToolName: policy.EditRule, FS: rt.fs, Access: tool.Access{Writes: []string{rel}}}
	for _, p := range []*policy.Policy{rt.guard, rt.policy} {
		if p == nil {
			continue
		}
		if v := p.Decide(req); v.Decision == policy.Deny && !strings.HasPrefix(v.Rule, "mode:") {
			return fmt.Errorf("%w: %s", workspace.ErrProtected, v.Reason)
		}
	}
	return nil
}

// offer is the tool definitions the model is offered, made from the
// registry's definitions from.
type offer struct {
	from, defs []llm.ToolDefinition
}

// offered returns the definitions of the tools the model is offered: the
// registry's, but for those a deny rule names outright (policy.DeniesTool:
// "deny": ["Bash"] takes Bash away, as in Claude Code, rather than letting
// the model call it to be refused). It is computed again only when the
// registry's tools change.
func (rt *Runtime) offered() []llm.ToolDefinition {
	defs := rt.tools.Definitions()
	if rt.policy == nil || len(defs) == 0 {
		return defs
	}
	if o := rt.offer.Load(); o != nil && len(o.from) == len(defs) && &o.from[0] == &defs[0] {
		return o.defs
	}
	kept := make([]llm.ToolDefinition, 0, len(defs))
	for _, d := range defs {
		var aliases []string
		if tl, ok := rt.tools.Lookup(d.Name); ok {
			aliases = tool.TraitsOf(tl).Aliases
		}
		if !rt.policy.DeniesTool(d.Name, aliases) {
			kept = append(kept, d)
		}
	}
	if len(kept) == len(defs) {
		kept = defs // the registry's own slice: the cache guard sees it unchanged
	}
	rt.offer.Store(&offer{from: defs, defs: kept})
	return kept
}

// modelInfo returns what the catalog says of model (the zero Model, which
// takes everything, for a model it lacks).
func (rt *Runtime) modelInfo(model string) catalog.Model {
	rt.modelsMu.RLock()
	m, ok := rt.models[model]
	rt.modelsMu.RUnlock()
	if !ok {
		if info, found := rt.def.Catalog.Lookup("", model); found {
			m = &info
		}
		rt.modelsMu.Lock()
		if rt.models == nil {
			rt.models = map[string]*catalog.Model{}
		}
		rt.models[model] = m
		rt.modelsMu.Unlock()
	}
	if m == nil {
		return catalog.Model{}
	}
	return *m
}

// windows are the context windows, by model, that refusals of prompts as
// too long showed to be smaller than the definition's, in tokens (learnt:
// there is one). A map of string keys, not a sync.Map: a model call's
// lookup allocates nothing.
type windows struct {
	mu      sync.RWMutex
	m       map[string]int64
	learnt  atomic.Bool
	onLearn func(model string, tokens int64)
}

func newWindows(known map[string]int64, onLearn func(string, int64)) *windows {
	w := &windows{onLearn: onLearn}
	for model, tokens := range known {
		if model != "" && tokens > 0 {
			if w.m == nil {
				w.m = map[string]int64{}
			}
			w.m[model] = tokens
		}
	}
	w.learnt.Store(w.m != nil)
	return w
}

// window returns the window learnt for model, if any.
func (rt *Runtime) window(model string) (int64, bool) {
	ws := rt.windows
	if !ws.learnt.Load() {
		return 0, false
	}
	ws.mu.RLock()
	defer ws.mu.RUnlock()
	w, ok := ws.m[model]
	return w, ok
}

// learn keeps w as model's window, and tells OnWindowLearnt.
func (rt *Runtime) learn(model string, w int64) {
	ws := rt.windows
	ws.mu.Lock()
	if ws.m == nil {
		ws.m = map[string]int64{}
	}
	ws.m[model] = w
	ws.mu.Unlock()
	ws.learnt.Store(true)
	if ws.onLearn != nil {
		ws.onLearn(model, w)
	}
}

// Fallback is a model a call falls over to (Collaborators.Fallbacks):
// when the model before it in the chain fails a call with a retryable
// error (rate limited, overloaded, a server's failure) after the call's
// retries, and before any of the answer was streamed, the call goes to
// Model through Client, rebuilt for it: the conversation's reasoning
// blocks (another provider's) left out, images and PDFs the catalog says
// it takes not described. The model that failed is then passed over for
// a while — 30 seconds, doubling while it keeps failing, at most 10
// minutes — and tried again after it (a circuit breaker); its next
// success closes it. Cost is priced by the model that served each call.
type Fallback struct {
	Client llm.Client
	// Model is the model the calls ask for (required).
	Model string
	// Provider names its provider when it is not the runtime's own
	// (llm.Metadata.Provider of its calls: spans name it).
	Provider string
}

// breaker is a model's circuit breaker in the fallback chain.
type breaker struct {
	mu        sync.Mutex
	openUntil time.Time
	wait      time.Duration
}

// open reports whether calls pass the model over at now.
func (b *breaker) open(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return now.Before(b.openUntil)
}

// failed opens the breaker: the model failed a call at now.
func (b *breaker) failed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wait = min(max(b.wait*2, 30*time.Second), 10*time.Minute)
	b.openUntil = now.Add(b.wait)
}

// served closes the breaker: the model answered.
func (b *breaker) served() {
	b.mu.Lock()
	if b.wait != 0 {
		b.wait, b.openUntil = 0, time.Time{}
	}
	b.mu.Unlock()
}
