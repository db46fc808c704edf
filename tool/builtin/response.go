package builtin

import (
	"path/filepath"

	"github.com/orca-agent/orca/workspace"
)

// The structured responses of the built-in tools (tool.Result.Response):
// the objects Claude Code's PostToolUse hooks read as tool_response, with
// its field names, so that a hook that reads
// .tool_response.filePath or .tool_response.stdout works unchanged.
// Fields orca cannot fill truthfully are left out rather than faked.

// writeResponse is Write's: type is "create" or "update".
type writeResponse struct {
	Type            string `json:"type"`
	FilePath        string `json:"filePath"`
	Content         string `json:"content"`
	StructuredPatch []any  `json:"structuredPatch"`
}

// editResponse is Edit's; originalFile is the file before the edit.
type editResponse struct {
	FilePath        string `json:"filePath"`
	OldString       string `json:"oldString"`
	NewString       string `json:"newString"`
	OriginalFile    string `json:"originalFile"`
	StructuredPatch []any  `json:"structuredPatch"`
	UserModified    bool   `json:"userModified"`
	ReplaceAll      bool   `json:"replaceAll"`
}

// readResponse is Read's: the lines shown, without their numbers (a line
// longer than Read shows is cut as shown).
type readResponse struct {
	Type string   `json:"type"`
	File readFile `json:"file"`
}

type readFile struct {
	FilePath   string `json:"filePath"`
	Content    string `json:"content"`
	NumLines   int    `json:"numLines"`
	StartLine  int    `json:"startLine"`
	TotalLines int    `json:"totalLines"`
}

// readMediaResponse is Read's of an image or a PDF: Claude Code's shape
// (type "image" or "pdf"), the file described, never its bytes.
type readMediaResponse struct {
	Type string    `json:"type"`
	File readMedia `json:"file"`
}

type readMedia struct {
	FilePath     string `json:"filePath"`
	MediaType    string `json:"type"`
	OriginalSize int64  `json:"originalSize"`
	Size         int64  `json:"size"`
	Digest       string `json:"digest"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	// A PDF's: how many pages it has, and those shown ("2-3, 7"; all when
	// empty).
	PageCount int    `json:"pageCount,omitempty"`
	Pages     string `json:"pages,omitempty"`
}

// bashResponse is Bash's. The command's stdout and stderr reach orca
// through one pipe, which keeps their order; both are in stdout.
type bashResponse struct {
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	Interrupted bool   `json:"interrupted"`
	IsImage     bool   `json:"isImage"`
}

// globResponse is Glob's.
type globResponse struct {
	Filenames []string `json:"filenames"`
	NumFiles  int      `json:"numFiles"`
	Truncated bool     `json:"truncated"`
}

// grepResponse is Grep's: the output as the model saw it.
type grepResponse struct {
	Mode    string `json:"mode"`
	Content string `json:"content"`
}

// absPath returns p as an absolute path: relative paths are the
// workspace's.
func absPath(fsys workspace.FileSystem, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(fsys.Root(), p)
}
