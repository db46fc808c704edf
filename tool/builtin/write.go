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

type writeTool struct{ fs workspace.FileSystem }

func (*writeTool) Name() string { return "Write" }

func (*writeTool) Description() string {
	return `Writes a file to the workspace.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- file_path is an absolute path inside the workspace or a path relative to the workspace root. Missing parent folders are created.
- If this is an existing file, you MUST use the Read tool first to read the file's contents.
- ALWAYS prefer editing existing files with the Edit tool. NEVER write new files unless explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation files if explicitly requested by the user.`
}

func (*writeTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The absolute path to the file to write (or a path relative to the workspace root)"
    },
    "content": {
      "type": "string",
      "description": "The content to write to the file"
    }
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`)
}

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

func (t *writeTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in writeInput
	if err := decode("Write", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	if in.FilePath == "" {
		return tool.Errorf("Write: file_path is empty")
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("Write %s: %v", in.FilePath, err)
	}
	verb := "Overwrote"
	fi, err := t.fs.Stat(in.FilePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		verb = "Created"
	case err != nil:
		return fileError(in.FilePath, err)
	case fi.IsDir():
		return tool.Errorf("%s is a directory; Write needs a file path", in.FilePath)
	}
	if err := t.fs.WriteFile(in.FilePath, []byte(in.Content), 0o644); err != nil {
		return fileError(in.FilePath, err)
	}
	typ := "update"
	if verb == "Created" {
		typ = "create"
	}
	return tool.Result{
		Content:  fmt.Sprintf("%s %s (%s, %s).", verb, in.FilePath, plural(len(in.Content), "byte"), plural(countLines(in.Content), "line")),
		Response: &writeResponse{Type: typ, FilePath: absPath(t.fs, in.FilePath), Content: in.Content, StructuredPatch: []any{}},
	}
}

// countLines counts lines as an editor does: a final line without a line
// ending counts, an empty file has none.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
