package builtin

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/orca-agent/orca/tool"
)

// What each built-in tool declares (tool.Traits, tool.Access,
// tool.Display): the policy, the runtime and the UIs read these, never the
// tools' names.

// pathArgs are the path fields of the file tools' inputs.
type pathArgs struct {
	FilePath   string  `json:"file_path"`
	Path       string  `json:"path"`
	Pattern    string  `json:"pattern"`
	Glob       string  `json:"glob"`
	Offset     float64 `json:"offset"`
	Limit      float64 `json:"limit"`
	ReplaceAll bool    `json:"replace_all"`
}

func argsOf(input json.RawMessage) pathArgs {
	var a pathArgs
	_ = json.Unmarshal(input, &a) // what does not decode names nothing
	return a
}

// searchRoot is the folder Glob and Grep search: path, or the workspace.
func (a pathArgs) searchRoot() string {
	if a.Path == "" {
		return "."
	}
	return a.Path
}

func (*readTool) Traits() tool.Traits { return tool.Traits{ReadOnly: true, Idempotent: true} }
func (*readTool) Access(in json.RawMessage) tool.Access {
	return tool.Access{Reads: nonEmpty(argsOf(in).FilePath)}
}
func (*readTool) Display(in json.RawMessage) tool.Display {
	a := argsOf(in)
	s := a.FilePath
	if a.Offset != 0 {
		s += " from line " + strconv.Itoa(int(a.Offset))
	}
	if a.Limit != 0 {
		s += " (" + plural(int(a.Limit), "line") + ")"
	}
	return tool.Display{Summary: tool.OneLine(s)}
}

// Write is idempotent: writing the same content again leaves the same file.
func (*writeTool) Traits() tool.Traits { return tool.Traits{Idempotent: true} }
func (*writeTool) Access(in json.RawMessage) tool.Access {
	return tool.Access{Writes: nonEmpty(argsOf(in).FilePath)}
}
func (*writeTool) Display(in json.RawMessage) tool.Display {
	return tool.Display{Summary: tool.OneLine(argsOf(in).FilePath)}
}

func (*editTool) Traits() tool.Traits { return tool.Traits{} }
func (*editTool) Access(in json.RawMessage) tool.Access {
	return tool.Access{Writes: nonEmpty(argsOf(in).FilePath)}
}
func (*editTool) Display(in json.RawMessage) tool.Display {
	a := argsOf(in)
	s := a.FilePath
	if a.ReplaceAll {
		s += " (all occurrences)"
	}
	return tool.Display{Summary: tool.OneLine(s)}
}

func (*globTool) Traits() tool.Traits { return tool.Traits{ReadOnly: true, Idempotent: true} }
func (*globTool) Access(in json.RawMessage) tool.Access {
	return tool.Access{Reads: []string{argsOf(in).searchRoot()}}
}
func (*globTool) Display(in json.RawMessage) tool.Display {
	a := argsOf(in)
	return tool.Display{Summary: tool.OneLine(a.Pattern + searchScope(a))}
}

func (*grepTool) Traits() tool.Traits { return tool.Traits{ReadOnly: true, Idempotent: true} }
func (*grepTool) Access(in json.RawMessage) tool.Access {
	return tool.Access{Reads: []string{argsOf(in).searchRoot()}}
}

// Display quotes the pattern as typed: regular expressions are hard enough
// to read without JSON's escapes.
func (*grepTool) Display(in json.RawMessage) tool.Display {
	a := argsOf(in)
	return tool.Display{Summary: tool.OneLine(`"` + a.Pattern + `"` + searchScope(a))}
}

func searchScope(a pathArgs) string {
	var s string
	if a.Path != "" {
		s += " in " + a.Path
	}
	if a.Glob != "" {
		s += " (" + a.Glob + ")"
	}
	return s
}

func (*bashTool) Traits() tool.Traits { return tool.Traits{Background: true} }
func (*bashTool) Access(in json.RawMessage) tool.Access {
	var a struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(in, &a)
	return tool.Access{Command: a.Command}
}

// CommandInput makes Bash the runtime's command runner (tool.CommandRunner).
func (*bashTool) CommandInput(command, description string) json.RawMessage {
	b, _ := json.Marshal(bashInput{Command: command, Description: description})
	return b
}

// Display shows the command's first line (a lone \r ends a line too).
func (b *bashTool) Display(in json.RawMessage) tool.Display {
	s := strings.TrimSpace(b.Access(in).Command)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	return tool.Display{Summary: s}
}

// TodoWrite changes only orca's bookkeeping (the session's todo list).
func (*todoTool) Traits() tool.Traits {
	return tool.Traits{ReadOnly: true, Idempotent: true, Exclusive: true}
}

// Display shows the list itself, one item a line: ☐ pending, ◐ in
// progress, ☒ completed, and ? for a status that is none of them (the
// call will be refused; the list is shown as the model sent it).
func (*todoTool) Display(in json.RawMessage) tool.Display {
	var list todoInput
	if json.Unmarshal(in, &list) != nil || list.Todos == nil {
		return tool.Display{}
	}
	var b strings.Builder
	for _, t := range list.Todos {
		mark := "?"
		switch t.Status {
		case TodoPending:
			mark = "☐"
		case TodoInProgress:
			mark = "◐"
		case TodoCompleted:
			mark = "☒"
		}
		b.WriteString(mark + " " + t.Content + "\n")
	}
	return tool.Display{Detail: b.String()}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
