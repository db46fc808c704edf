package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/subagent"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
)

// DefaultMaxDepth is how deep forks may nest: a fork of a fork of a fork
// is refused with an observation.
const DefaultMaxDepth = 3

// DefaultToolProviders returns the default tool set, in order: Read,
// Write, Edit, Glob, Grep, Bash, TodoWrite, Task, Skill, AgentOutput,
// TaskStop. Task, AgentOutput and TaskStop are the runtime's own (they
// start and manage subagent forks); the others come from tool/builtin and
// skill.
func DefaultToolProviders() []tool.Provider {
	return []tool.Provider{
		builtin.FilesProvider(), builtin.ShellProvider(), builtin.TodoProvider(),
		TaskProvider(), skill.Provider(), BackgroundTaskProvider(),
	}
}

// TaskProvider returns the provider of the Task tool, which starts
// subagent forks (in the foreground, or in the background).
func TaskProvider() tool.Provider { return runtimeProvider{name: "task"} }

// BackgroundTaskProvider returns the provider of AgentOutput and TaskStop,
// which read and stop background tasks, for their owner only.
func BackgroundTaskProvider() tool.Provider { return runtimeProvider{name: "background-tasks"} }

// runtimeProvider marks providers whose tools need the runtime itself;
// New builds them.
type runtimeProvider struct{ name string }

func (p runtimeProvider) Name() string { return p.name }
func (p runtimeProvider) Tools(tool.Env) ([]tool.Tool, error) {
	return nil, fmt.Errorf("the %s provider works only through agent.New", p.name)
}

func (p runtimeProvider) build(rt *Runtime) []tool.Tool {
	if p.name == "task" {
		return []tool.Tool{&taskTool{rt: rt}}
	}
	return []tool.Tool{&outputTool{rt: rt}, &stopTool{rt: rt}}
}

// turnKey carries the calling turn to the runtime's own tools.
type turnKey struct{}

// forkTool is implemented by the runtime's own tools: the pipeline hands
// them the calling turn through their context.
type forkTool interface{ forkTool() }

func callingTurn(ctx context.Context) *turn {
	t, _ := ctx.Value(turnKey{}).(*turn)
	return t
}

// child returns the runtime a subagent runs on: the definition's prompt,
// model and tool subset over the parent's collaborators (client,
// workspace, hooks, middleware, bus, policy, approvals, tasks). It is built
// once per subagent and shares the parent's tool values.
func (r *Runtime) child(d subagent.Definition) (*Runtime, error) {
	if c, ok := r.children.Load(d.Name); ok {
		return c.(*Runtime), nil
	}
	def := r.def
	def.Name, def.SystemPrompt, def.Verify = d.Name, d.Prompt, ""
	if d.Model != "" {
		def.Model = d.Model
	}
	c := &Runtime{id: r.id + "/" + d.Name, def: def, client: r.client, fs: r.fs, logger: r.logger,
		hooks: r.hooks, mw: r.mw, bus: r.bus, policy: r.policy, approver: r.approver, approvals: r.approvals,
		tasks: r.tasks, subagents: r.subagents, tools: tool.NewRegistry()}
	for _, tl := range r.tools.Tools() {
		if d.Tools != nil && !contains(d.Tools, tl.Name()) {
			continue
		}
		if err := c.tools.Add(tl); err != nil {
			return nil, err
		}
	}
	actual, _ := r.children.LoadOrStore(d.Name, c)
	return actual.(*Runtime), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// taskTool is Task: it runs a subagent fork.
type taskTool struct{ rt *Runtime }

func (*taskTool) forkTool() {}

// ReadOnly: starting a fork changes nothing by itself; the fork's own tool
// calls go through the policy like the parent's.
func (*taskTool) Traits() tool.Traits { return tool.Traits{ReadOnly: true} }

// Display shows the task's description, its agent and whether it runs in
// the background.
func (*taskTool) Display(input json.RawMessage) tool.Display {
	var in taskInput
	if json.Unmarshal(input, &in) != nil || in.Description == "" {
		return tool.Display{}
	}
	s := in.Description + " (" + cmp.Or(in.SubagentType, subagent.GeneralPurpose.Name)
	if in.RunInBackground {
		s += ", in the background"
	}
	return tool.Display{Summary: s + ")"}
}

// taskIDDisplay shows the task a call of AgentOutput or TaskStop is about.
func taskIDDisplay(input json.RawMessage) tool.Display {
	if id := tool.Fields(input, "task_id"); len(id) > 0 {
		return tool.Display{Summary: id[0]}
	}
	return tool.Display{}
}
func (*taskTool) Name() string { return "Task" }

func (t *taskTool) Description() string {
	var b strings.Builder
	b.WriteString(`Launch a new agent to handle complex, multi-step tasks autonomously.

The agent gets its own context: give it a complete, self-contained prompt, and say what it should report back. Its final answer is returned to you as this tool's result; the user does not see it, so summarise what matters. With run_in_background the task starts and this tool returns a task_id at once: read its output later with AgentOutput, stop it with TaskStop.

Available agent types (subagent_type):
`)
	for _, d := range t.rt.subagents {
		fmt.Fprintf(&b, "- %s: %s", d.Name, d.Description)
		if d.Tools != nil {
			fmt.Fprintf(&b, " (Tools: %s)", strings.Join(d.Tools, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (*taskTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
    "prompt": {"type": "string", "description": "The task for the agent to perform"},
    "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
    "run_in_background": {"type": "boolean", "description": "Start the task in the background and return its task_id at once"}
  },
  "required": ["description", "prompt", "subagent_type"],
  "additionalProperties": false
}`)
}

type taskInput struct {
	Description     string `json:"description"`
	Prompt          string `json:"prompt"`
	SubagentType    string `json:"subagent_type"`
	RunInBackground bool   `json:"run_in_background"`
}

func (t *taskTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	parent := callingTurn(ctx)
	if parent == nil {
		return tool.Errorf("Task runs only inside a turn of an agent runtime")
	}
	var in taskInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("Task: %v", err)
	}
	def, child, prompt, extra, refused := parent.prepareFork(call, in.SubagentType, in.Prompt)
	if refused != nil {
		return *refused
	}
	if in.RunInBackground {
		owner := ownerOf(parent)
		account, limits, spent := parent.req.Account, parent.limits, parent.spent()
		id, err := t.rt.tasks.Start(owner, def.Name, in.Description, func(ctx context.Context) (string, error) {
			res, err := parent.fork(ctx, child, prompt, extra, limits, spent, nil)
			if res != nil && account != nil {
				account(res.Spent, res.Usage)
			}
			return forkAnswer(res, err)
		})
		if err != nil {
			return tool.Errorf("Task: %v", err)
		}
		return tool.Text(fmt.Sprintf("Started background task %s (%s: %s). Read its output with AgentOutput {\"task_id\": %q}; stop it with TaskStop.", id, def.Name, in.Description, id))
	}
	answer, err := parent.foreground(ctx, child, prompt, extra)
	if err != nil {
		return tool.Errorf("Subagent %s did not finish: %v", def.Name, err)
	}
	return tool.Text(answer)
}

// prepareFork finds the subagent, checks the depth limit, runs
// SUBAGENT_START (which may block, rewrite the prompt, add context) and
// returns the child runtime to run it on; or the observation refusing it.
func (t *turn) prepareFork(call *tool.Call, agentType, prompt string) (*subagent.Definition, *Runtime, string, []string, *tool.Result) {
	refuse := func(r tool.Result) (*subagent.Definition, *Runtime, string, []string, *tool.Result) {
		return nil, nil, "", nil, &r
	}
	if agentType == "" {
		agentType = subagent.GeneralPurpose.Name
	}
	var def *subagent.Definition
	names := make([]string, len(t.rt.subagents))
	for i := range t.rt.subagents {
		names[i] = t.rt.subagents[i].Name
		if t.rt.subagents[i].Name == agentType {
			def = &t.rt.subagents[i]
		}
	}
	if def == nil {
		return refuse(tool.Errorf("Task: unknown subagent_type %q; available: %s", agentType, strings.Join(names, ", ")))
	}
	if t.res.Depth+1 > t.rt.def.MaxDepth {
		return refuse(tool.Errorf("Task: not started: forks may nest %d deep and this one would be %d deep; do the task yourself", t.rt.def.MaxDepth, t.res.Depth+1))
	}
	var extra []string
	if t.rt.hooks.Has(hook.SubagentStart) {
		out := t.runHook(&hook.SubagentStartPayload{Common: t.common(), Agent: def.Name, Prompt: prompt})
		if out.Action == hook.Block {
			return refuse(t.blocked(call, "hook:"+out.By, fmt.Sprintf("Subagent %s was not started: blocked by hook %s: %s", def.Name, out.By, out.Reason)))
		}
		prompt, extra = out.Payload.(*hook.SubagentStartPayload).Prompt, out.Context
	}
	child, err := t.rt.child(*def)
	if err != nil {
		return refuse(tool.Errorf("Task: %v", err))
	}
	return def, child, prompt, extra, nil
}

// foreground runs a fork and waits for its answer; its spending is the
// invoking session's.
func (t *turn) foreground(ctx context.Context, child *Runtime, prompt string, extra []string) (string, error) {
	res, err := t.fork(ctx, child, prompt, extra, t.limits, t.spent(), t.req.OnEvent)
	if res != nil {
		t.res.Usage = t.res.Usage.Add(res.Usage)
		t.cost += res.Spent.CostUSD
		t.forkCalls += res.ToolCalls
	}
	return forkAnswer(res, err)
}

// turnForker lets tools that use forks (skills that run as forks) start
// one from the calling turn.
type turnForker struct{ t *turn }

func (f turnForker) Fork(ctx context.Context, agentType, prompt string) (string, error) {
	call := &tool.Call{Name: "Task", Input: json.RawMessage(`{}`)}
	def, child, prompt, extra, refused := f.t.prepareFork(call, agentType, prompt)
	if refused != nil {
		return "", errors.New(refused.Content)
	}
	answer, err := f.t.foreground(ctx, child, prompt, extra)
	if err != nil {
		return "", fmt.Errorf("subagent %s did not finish: %w", def.Name, err)
	}
	return answer, nil
}

// forkAnswer turns a fork's result into its answer, or the reason it has
// none.
func forkAnswer(res *Result, err error) (string, error) {
	switch {
	case res == nil:
		return "", err
	case res.StopReason == StopAnswered:
		return res.Answer, nil
	case res.Err != nil:
		return "", fmt.Errorf("%s: %w", res.StopReason, res.Err)
	case res.BudgetDimension != "":
		return "", fmt.Errorf("the session's %s budget is exhausted", res.BudgetDimension)
	}
	return "", fmt.Errorf("it ended %s", res.StopReason)
}

// ownerOf is who owns background tasks started in t: the user's session of
// the runtime serving it.
func ownerOf(t *turn) string { return t.res.Root() + "\x00" + t.res.SessionID }

// fork runs a subagent execution on child with the parent's identity
// inherited: the user's session, the root runtime, one level deeper.
func (t *turn) fork(ctx context.Context, child *Runtime, prompt string, extra []string, limits budget.Limits, spent budget.Spent, onEvent func(event.Event)) (*Result, error) {
	return t.e.execute(ctx, child, Request{
		SessionID: t.res.SessionID,
		TurnID:    t.res.TurnID,
		Input:     prompt,
		Context:   extra,
		Budget:    &limits,
		Spent:     spent,
		OnEvent:   onEvent,
		Account:   t.req.Account,
	}, t.res.Child(child.id, newID("exec")))
}

// outputTool is AgentOutput: it reads a background task's output.
type outputTool struct{ rt *Runtime }

func (*outputTool) forkTool()                               {}
func (*outputTool) Traits() tool.Traits                     { return tool.Traits{ReadOnly: true} }
func (*outputTool) Display(in json.RawMessage) tool.Display { return taskIDDisplay(in) }
func (*outputTool) Name() string                            { return "AgentOutput" }
func (*outputTool) Description() string {
	return "Reads the status and output of a background task started with Task (run_in_background). With block (the default), waits for the task to finish, at most timeout milliseconds (default 30000)."
}
func (*outputTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "task_id": {"type": "string", "description": "The id Task returned"},
    "block": {"type": "boolean", "description": "Wait for the task to finish (default true)"},
    "timeout": {"type": "number", "minimum": 0, "maximum": 600000, "description": "How long to wait, in milliseconds (default 30000)"}
  },
  "required": ["task_id"],
  "additionalProperties": false
}`)
}

func (o *outputTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	parent := callingTurn(ctx)
	if parent == nil {
		return tool.Errorf("AgentOutput runs only inside a turn of an agent runtime")
	}
	var in struct {
		TaskID  string   `json:"task_id"`
		Block   *bool    `json:"block"`
		Timeout *float64 `json:"timeout"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("AgentOutput: %v", err)
	}
	owner := ownerOf(parent)
	info, ok := o.rt.tasks.Get(owner, in.TaskID)
	if ok && info.Status == subagent.Running && (in.Block == nil || *in.Block) {
		wait := 30 * time.Second
		if in.Timeout != nil {
			wait = time.Duration(*in.Timeout) * time.Millisecond
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		info, ok = o.rt.tasks.Wait(wctx, owner, in.TaskID)
		cancel()
	}
	if !ok {
		return tool.Errorf("AgentOutput: no such task %q", in.TaskID)
	}
	switch info.Status {
	case subagent.Completed:
		return tool.Text(fmt.Sprintf("Task %s (%s) completed:\n\n%s", info.ID, info.Agent, info.Output))
	case subagent.Failed:
		return tool.Errorf("Task %s (%s) failed: %s", info.ID, info.Agent, info.Error)
	case subagent.Stopped:
		return tool.Errorf("Task %s (%s) was stopped.", info.ID, info.Agent)
	}
	return tool.Text(fmt.Sprintf("Task %s (%s) is still running (started %s ago).", info.ID, info.Agent, time.Since(info.Started).Round(time.Second)))
}

// stopTool is TaskStop: it stops a background task.
type stopTool struct{ rt *Runtime }

func (*stopTool) forkTool() {}

// ReadOnly: stopping one's own background task changes no file.
func (*stopTool) Traits() tool.Traits                     { return tool.Traits{ReadOnly: true} }
func (*stopTool) Display(in json.RawMessage) tool.Display { return taskIDDisplay(in) }
func (*stopTool) Name() string                            { return "TaskStop" }
func (*stopTool) Description() string {
	return "Stops a background task started with Task (run_in_background)."
}
func (*stopTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string","description":"The id Task returned"}},"required":["task_id"],"additionalProperties":false}`)
}

func (s *stopTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	parent := callingTurn(ctx)
	if parent == nil {
		return tool.Errorf("TaskStop runs only inside a turn of an agent runtime")
	}
	var in struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("TaskStop: %v", err)
	}
	owner := ownerOf(parent)
	if s.rt.tasks.Stop(owner, in.TaskID) {
		return tool.Text(fmt.Sprintf("Stopped task %s.", in.TaskID))
	}
	if info, ok := s.rt.tasks.Get(owner, in.TaskID); ok {
		return tool.Text(fmt.Sprintf("Task %s had already ended (%s).", in.TaskID, info.Status))
	}
	return tool.Errorf("TaskStop: no such task %q", in.TaskID)
}
