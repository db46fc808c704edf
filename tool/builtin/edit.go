package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

const (
	editSnippetContext = 3  // lines shown around an edit
	editSnippetMax     = 40 // lines of snippet, at most
)

type editTool struct{ fs workspace.FileSystem }

func (*editTool) Name() string { return "Edit" }

func (*editTool) Description() string {
	return `Performs exact string replacements in files.

Usage:
- You must use your Read tool at least once in the conversation before editing. This tool will error if you attempt an edit without the exact text of the file.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. The line number prefix format is: spaces + line number + tab. Everything after that tab is the actual file content to match. Never include any part of the line number prefix in the old_string or new_string.
- file_path is an absolute path inside the workspace or a path relative to the workspace root.
- ALWAYS prefer editing existing files. NEVER write new files unless explicitly required.
- The edit will FAIL if old_string is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use replace_all to change every instance of old_string.
- Use replace_all for replacing and renaming strings across the file. This parameter is useful if you want to rename a variable for instance.
- Line endings are kept: in a file with CRLF line endings, old_string and new_string may use plain newlines.`
}

func (*editTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The absolute path to the file to modify (or a path relative to the workspace root)"
    },
    "old_string": {
      "type": "string",
      "description": "The text to replace"
    },
    "new_string": {
      "type": "string",
      "description": "The text to replace it with (must be different from old_string)"
    },
    "replace_all": {
      "type": "boolean",
      "default": false,
      "description": "Replace all occurrences of old_string (default false)"
    }
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`)
}

type editInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func (t *editTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in editInput
	if err := decode("Edit", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	switch {
	case in.FilePath == "":
		return tool.Errorf("Edit: file_path is empty")
	case in.OldString == "":
		return tool.Errorf("Edit %s: old_string is empty; give the exact text to replace (use Write to create a file or replace all of it)", in.FilePath)
	case in.OldString == in.NewString:
		return tool.Errorf("Edit %s: old_string and new_string are the same; there is nothing to change", in.FilePath)
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("Edit %s: %v", in.FilePath, err)
	}
	fi, err := t.fs.Stat(in.FilePath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tool.Errorf("file not found: %s (use Write to create a new file)", in.FilePath)
		}
		return fileError(in.FilePath, err)
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory, not a file", in.FilePath)
	}
	if !fi.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file (%v)", in.FilePath, fi.Mode().Type())
	}
	data, err := t.fs.ReadFile(in.FilePath)
	if err != nil {
		return fileError(in.FilePath, err)
	}
	content := string(data)

	old, repl := in.OldString, in.NewString
	n := 0
	if usesCRLF(content) {
		// Models usually send "\n"; match and write the file's "\r\n".
		old, repl = toCRLF(old), toCRLF(repl)
		n = strings.Count(content, old)
	}
	if n == 0 {
		old, repl = in.OldString, in.NewString
		n = strings.Count(content, old)
	}
	switch {
	case n == 0:
		return tool.Errorf("Edit %s: old_string was not found in the file; it must match the file exactly, including whitespace and indentation (Read the file to see its current text)", in.FilePath)
	case n > 1 && !in.ReplaceAll:
		return tool.Errorf("Edit %s: old_string matches %d times; add surrounding context to make it unique, or set replace_all to true to replace every occurrence", in.FilePath, n)
	}
	at := strings.Index(content, old)
	var updated string
	if in.ReplaceAll {
		updated = strings.ReplaceAll(content, old, repl)
	} else {
		updated = content[:at] + repl + content[at+len(old):]
	}
	if err := t.fs.WriteFile(in.FilePath, []byte(updated), fi.Mode().Perm()); err != nil {
		return fileError(in.FilePath, err)
	}
	msg := fmt.Sprintf("Edited %s: replaced %s.", in.FilePath, plural(n, "occurrence"))
	if n == 1 {
		msg += " The edited part of the file now reads:\n" + snippet(updated, at, at+len(repl))
	}
	return tool.Result{Content: msg, Response: &editResponse{
		FilePath: absPath(t.fs, in.FilePath), OldString: in.OldString, NewString: in.NewString,
		OriginalFile: content, StructuredPatch: []any{}, ReplaceAll: in.ReplaceAll,
	}}
}

// usesCRLF reports whether the file's first line ends with "\r\n".
func usesCRLF(s string) bool {
	i := strings.IndexByte(s, '\n')
	return i > 0 && s[i-1] == '\r'
}

// toCRLF turns every line ending of s into "\r\n".
func toCRLF(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// snippet renders, in Read's format, the lines of s that hold the bytes
// [from, to) with a few lines of context around them.
func snippet(s string, from, to int) string {
	begin := strings.LastIndexByte(s[:from], '\n') + 1 // start of from's line
	for i := 0; i < editSnippetContext && begin > 0; i++ {
		begin = strings.LastIndexByte(s[:begin-1], '\n') + 1
	}
	p := from
	if to > from {
		p = to - 1 // the last byte of the edit
	}
	end := len(s)
	if j := strings.IndexByte(s[p:], '\n'); j >= 0 {
		end = p + j // the line ending of the edit's last line
	}
	for i := 0; i < editSnippetContext && end < len(s); i++ {
		j := strings.IndexByte(s[end+1:], '\n')
		if j < 0 {
			end = len(s)
			break
		}
		end += 1 + j
	}
	lines := strings.Split(strings.TrimSuffix(s[begin:end], "\n"), "\n")
	first := strings.Count(s[:begin], "\n") + 1
	var b strings.Builder
	for i, line := range lines {
		if i == editSnippetMax {
			fmt.Fprintf(&b, "[… %s more]\n", plural(len(lines)-i, "line"))
			break
		}
		text, _ := clipLine([]byte(strings.TrimSuffix(line, "\r")), true, readMaxLineChars)
		fmt.Fprintf(&b, "%6d\t%s\n", first+i, text)
	}
	return b.String()
}
