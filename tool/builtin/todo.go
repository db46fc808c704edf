package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/orca-agent/orca/tool"
)

// TodoStatus is the state of one todo item.
type TodoStatus string

// The states a todo item can be in.
const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todo is one item of a session's todo list, as TodoWrite receives it.
type Todo struct {
	// Content says what is to be done, in the imperative ("Run the tests").
	Content string `json:"content"`
	// Status is the item's state.
	Status TodoStatus `json:"status"`
	// ActiveForm says it while it is being done ("Running the tests").
	ActiveForm string `json:"activeForm"`
}

// TodoProvider returns the provider of the TodoWrite tool. Each runtime
// gets its own tool, holding one todo list per session of that runtime.
func TodoProvider() tool.Provider {
	return tool.NewProvider("todo", func(tool.Env) ([]tool.Tool, error) {
		return []tool.Tool{&todoTool{lists: make(map[string][]Todo)}}, nil
	})
}

// Todos returns a copy of the todo list that the TodoWrite tool t holds for
// the session sessionID. It reports false if t is not a TodoWrite tool of
// this package or the session has written no list.
func Todos(t tool.Tool, sessionID string) ([]Todo, bool) {
	tt, ok := t.(*todoTool)
	if !ok {
		return nil, false
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	list, ok := tt.lists[sessionID]
	return slices.Clone(list), ok
}

type todoTool struct {
	mu    sync.Mutex
	lists map[string][]Todo // by session id
}

func (*todoTool) Name() string { return "TodoWrite" }

func (*todoTool) Description() string {
	return `Use this tool to create and manage a structured task list for your current session. This helps you track progress, organize complex tasks, and demonstrate thoroughness to the user.

## When to use this tool
Use this tool proactively in these scenarios:
1. Complex multi-step tasks - when a task requires 3 or more distinct steps or actions
2. Non-trivial and complex tasks - tasks that require careful planning or multiple operations
3. User explicitly requests a todo list
4. User provides multiple tasks (numbered or comma-separated)
5. After receiving new instructions - immediately capture user requirements as todos
6. When you start working on a task - mark it as in_progress BEFORE beginning work. Ideally you should only have one todo as in_progress at a time
7. After completing a task - mark it as completed and add any new follow-up tasks discovered during implementation

## When NOT to use this tool
Skip using this tool when there is only a single, straightforward task, the task is trivial, or it is purely conversational or informational.

## Task states and management
- pending: task not yet started; in_progress: currently working on (limit to ONE task at a time); completed: task finished successfully
- Each task has two forms: content, the imperative form describing what needs to be done (e.g. "Run tests"), and activeForm, the present continuous form shown during execution (e.g. "Running tests")
- Mark tasks complete IMMEDIATELY after finishing; never mark a task completed if tests are failing, the implementation is partial or errors are unresolved
- Remove tasks that are no longer relevant from the list entirely

Each call replaces the whole list with the todos you send.`
}

func (*todoTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The updated todo list",
      "items": {
        "type": "object",
        "properties": {
          "content": {
            "type": "string",
            "minLength": 1
          },
          "status": {
            "type": "string",
            "enum": ["pending", "in_progress", "completed"]
          },
          "activeForm": {
            "type": "string",
            "minLength": 1
          }
        },
        "required": ["content", "status", "activeForm"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`)
}

type todoInput struct {
	Todos []Todo `json:"todos"`
}

func (t *todoTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in todoInput
	if err := decode("TodoWrite", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	key := call.StateKey()
	if key == "" {
		return tool.Errorf("TodoWrite: the call has no session id; a todo list belongs to a session")
	}
	var done, active, pending int
	for i, td := range in.Todos {
		if strings.TrimSpace(td.Content) == "" || strings.TrimSpace(td.ActiveForm) == "" {
			return tool.Errorf("TodoWrite: todo %d (%q) needs a non-empty content and activeForm", i+1, td.Content)
		}
		switch td.Status {
		case TodoCompleted:
			done++
		case TodoInProgress:
			active++
		case TodoPending:
			pending++
		default:
			return tool.Errorf("TodoWrite: todo %d (%q) has status %q; use pending, in_progress or completed", i+1, td.Content, td.Status)
		}
	}
	list := slices.Clone(in.Todos)
	t.mu.Lock()
	t.lists[key] = list
	t.mu.Unlock()

	var b strings.Builder
	for _, td := range list {
		mark := "[ ]"
		switch td.Status {
		case TodoCompleted:
			mark = "[x]"
		case TodoInProgress:
			mark = "[>]"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, td.Content)
	}
	if len(list) == 0 {
		b.WriteString("The todo list is now empty.")
	} else {
		fmt.Fprintf(&b, "\n%s: %d completed, %d in progress, %d pending.", plural(len(list), "todo"), done, active, pending)
	}
	if active > 1 {
		b.WriteString(" Keep one todo in progress at a time.")
	}
	b.WriteString("\nTodos have been updated. Keep using the todo list to track your progress, and proceed with the current task.")
	return tool.Text(b.String())
}
