package subagent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orca-agent/orca/tool"
)

// TaskProvider returns the provider of the Task tool, which starts
// subagent forks, in the foreground or in the background. Its description
// lists the runtime's subagents (tool.Env.Subagents).
func TaskProvider() tool.Provider {
	return tool.NewProvider("task", func(env tool.Env) ([]tool.Tool, error) {
		return []tool.Tool{&taskTool{description: taskDescription(env.Subagents)}}, nil
	})
}

// BackgroundProvider returns the provider of AgentOutput and TaskStop,
// which read and stop background tasks, for their owner only.
func BackgroundProvider() tool.Provider {
	return tool.Static("background-tasks", outputTool{}, stopTool{})
}

// forker returns the calling turn's Forker, or the observation saying
// there is none.
func forker(ctx context.Context, name string) (Forker, *tool.Result) {
	f := ForkerFrom(ctx)
	if f == nil {
		r := tool.Errorf("%s runs only inside a turn of an agent runtime", name)
		return nil, &r
	}
	return f, nil
}

// forks are the traits of the three tools: they change no file (a fork's
// own calls go through the policy like the parent's), and they need the
// runtime's Forker.
var forks = tool.Traits{ReadOnly: true, Forks: true}

// with returns the traits t with the aliases names.
func with(t tool.Traits, aliases ...string) tool.Traits {
	t.Aliases = aliases
	return t
}

// The three tools' traits, with Claude Code's names of them as aliases:
// Agent (its current name of Task), TaskOutput and BashOutput, KillShell
// and KillBash.
var (
	taskTraits   = with(forks, "Agent")
	outputTraits = with(forks, "TaskOutput", "BashOutput")
	stopTraits   = with(forks, "KillShell", "KillBash")
)

// taskTool is Task: it runs a subagent fork.
type taskTool struct{ description string }

func (*taskTool) Name() string          { return "Task" }
func (*taskTool) Traits() tool.Traits   { return taskTraits }
func (t *taskTool) Description() string { return t.description }

func taskDescription(agents []tool.Subagent) string {
	var b strings.Builder
	b.WriteString(`Launch a new agent to handle complex, multi-step tasks autonomously.

The agent gets its own context: give it a complete, self-contained prompt, and say what it should report back. Its final answer is returned to you as this tool's result; the user does not see it, so summarise what matters. With run_in_background the task starts and this tool returns a task_id at once: read its output later with AgentOutput, stop it with TaskStop.

Available agent types (subagent_type):
`)
	for _, d := range agents {
		fmt.Fprintf(&b, "- %s: %s%s\n", d.Name, d.Description, toolsNote(d))
	}
	return b.String()
}

// toolsNote says which tools a subagent has, unless it has all of its
// parent's: " (Tools: Read, Grep)", " (Tools: none)", " (Tools: all but
// Write, Edit)".
func toolsNote(d tool.Subagent) string {
	if d.Tools == nil {
		if len(d.DisallowedTools) == 0 {
			return ""
		}
		return " (Tools: all but " + strings.Join(d.DisallowedTools, ", ") + ")"
	}
	var names []string
	for _, n := range d.Tools {
		if !slices.Contains(d.DisallowedTools, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return " (Tools: none)"
	}
	return " (Tools: " + strings.Join(names, ", ") + ")"
}

func (*taskTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
    "prompt": {"type": "string", "description": "The task for the agent to perform"},
    "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
    "run_in_background": {"type": "boolean", "description": "Start the task in the background and return its task_id at once"},
    "output_schema": {"type": "object", "description": "A JSON Schema of an object (\"type\": \"object\"): the agent must answer with a JSON value of it, checked before it is returned to you"}
  },
  "required": ["description", "prompt", "subagent_type"],
  "additionalProperties": false
}`)
}

type taskInput struct {
	Description     string          `json:"description"`
	Prompt          string          `json:"prompt"`
	SubagentType    string          `json:"subagent_type"`
	RunInBackground bool            `json:"run_in_background"`
	OutputSchema    json.RawMessage `json:"output_schema"`
}

// Display shows the task's description, its agent and whether it runs in
// the background.
func (*taskTool) Display(input json.RawMessage) tool.Display {
	var in taskInput
	if json.Unmarshal(input, &in) != nil || in.Description == "" {
		return tool.Display{}
	}
	s := in.Description + " (" + cmp.Or(in.SubagentType, GeneralPurpose.Name)
	if in.RunInBackground {
		s += ", in the background"
	}
	return tool.Display{Summary: tool.OneLine(s + ")")}
}

func (t *taskTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	f, refused := forker(ctx, "Task")
	if refused != nil {
		return *refused
	}
	var in taskInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("Task: %v", err)
	}
	if len(in.OutputSchema) > 0 {
		ctx = WithOutputSchema(ctx, in.OutputSchema)
	}
	fork, err := f.Fork(ctx, in.SubagentType, in.Prompt, in.RunInBackground)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	if in.RunInBackground {
		id, err := f.Tasks().Start(Owner(call.Scope), fork.Agent, in.Description, fork.Run)
		if err != nil {
			return tool.Errorf("Task: %v", err)
		}
		return tool.Text(fmt.Sprintf("Started background task %s (%s: %s). Read its output with AgentOutput {\"task_id\": %q}; stop it with TaskStop.", id, fork.Agent, in.Description, id))
	}
	answer, err := fork.Run(ctx)
	if err != nil {
		return tool.Errorf("Subagent %s did not finish: %v", fork.Agent, err)
	}
	return tool.Text(answer)
}

// taskIDDisplay shows the task a call of AgentOutput or TaskStop is about.
func taskIDDisplay(input json.RawMessage) tool.Display {
	if id := tool.Fields(input, "task_id", "shell_id"); len(id) > 0 {
		return tool.Display{Summary: tool.OneLine(id[0])}
	}
	return tool.Display{}
}

// outputTool is AgentOutput: it reads a background task's output.
type outputTool struct{}

func (outputTool) Name() string                            { return "AgentOutput" }
func (outputTool) Traits() tool.Traits                     { return outputTraits }
func (outputTool) Display(in json.RawMessage) tool.Display { return taskIDDisplay(in) }
func (outputTool) Description() string {
	return "Reads the status and output of a background task: a subagent started with Task, or a command started with Bash, with run_in_background. A command's output is shown as far as it has written it, running or not. With block (the default), waits for the task to finish, at most timeout milliseconds (default 30000); block false reads it at once."
}
func (outputTool) Schema() json.RawMessage {
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

func (outputTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	f, refused := forker(ctx, "AgentOutput")
	if refused != nil {
		return *refused
	}
	var in struct {
		TaskID  string   `json:"task_id"`
		Block   *bool    `json:"block"`
		Timeout *float64 `json:"timeout"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("AgentOutput: %v", err)
	}
	tasks, owner := f.Tasks(), Owner(call.Scope)
	info, ok := tasks.Get(owner, in.TaskID)
	if ok && info.Status == Running && (in.Block == nil || *in.Block) {
		wait := 30 * time.Second
		if in.Timeout != nil {
			wait = time.Duration(*in.Timeout) * time.Millisecond
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		info, ok = tasks.Wait(wctx, owner, in.TaskID)
		cancel()
	}
	if !ok {
		return tool.Errorf("AgentOutput: no such task %q", in.TaskID)
	}
	what := info.Agent
	if info.Streams && info.Description != "" {
		what += ": " + info.Description
	}
	output := ""
	if info.Streams {
		output = "\n\nOutput:\n" + cmp.Or(info.Output, "(no output)")
	}
	switch info.Status {
	case Completed:
		if info.Streams {
			return tool.Text(fmt.Sprintf("Task %s (%s) completed.%s", info.ID, what, output))
		}
		return tool.Text(fmt.Sprintf("Task %s (%s) completed:\n\n%s", info.ID, what, info.Output))
	case Failed:
		return tool.Errorf("Task %s (%s) failed: %s%s", info.ID, what, info.Error, output)
	case Stopped:
		return tool.Errorf("Task %s (%s) was stopped.%s", info.ID, what, output)
	}
	return tool.Text(fmt.Sprintf("Task %s (%s) is still running (started %s ago).%s", info.ID, what, time.Since(info.Started).Round(time.Second), output))
}

// stopTool is TaskStop: it stops a background task.
type stopTool struct{}

func (stopTool) Name() string                            { return "TaskStop" }
func (stopTool) Traits() tool.Traits                     { return stopTraits }
func (stopTool) Display(in json.RawMessage) tool.Display { return taskIDDisplay(in) }
func (stopTool) Description() string {
	return "Stops a background task started with Task or Bash (run_in_background): a command is killed with every process it started."
}
func (stopTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"string","description":"The id Task returned"},` +
		`"shell_id":{"type":"string","description":"Deprecated: use task_id"}},"additionalProperties":false}`)
}

func (stopTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	f, refused := forker(ctx, "TaskStop")
	if refused != nil {
		return *refused
	}
	var in struct {
		TaskID  string `json:"task_id"`
		ShellID string `json:"shell_id"` // what Claude Code's KillShell took
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("TaskStop: %v", err)
	}
	switch {
	case in.TaskID == "" && in.ShellID == "":
		return tool.Errorf("TaskStop: task_id is missing: give the id of the task to stop")
	case in.TaskID == "":
		in.TaskID = in.ShellID
	case in.ShellID != "" && in.ShellID != in.TaskID:
		return tool.Errorf("TaskStop: task_id %q and shell_id %q name two tasks: give task_id alone", in.TaskID, in.ShellID)
	}
	tasks, owner := f.Tasks(), Owner(call.Scope)
	if tasks.Stop(owner, in.TaskID) {
		return tool.Text(fmt.Sprintf("Stopped task %s.", in.TaskID))
	}
	if info, ok := tasks.Get(owner, in.TaskID); ok {
		return tool.Text(fmt.Sprintf("Task %s had already ended (%s).", in.TaskID, info.Status))
	}
	return tool.Errorf("TaskStop: no such task %q", in.TaskID)
}
