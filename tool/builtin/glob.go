package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

const globMaxResults = 100

type globTool struct {
	fs     workspace.FileSystem
	hidden func(string) bool
}

func (*globTool) Name() string { return "Glob" }

func (*globTool) Description() string {
	return `- Fast file pattern matching tool that works with any codebase size
- Supports glob patterns like "**/*.js" or "src/**/*.ts" (** matches any number of folders, {a,b} matches either)
- Returns matching file paths, relative to the workspace root, sorted by modification time (newest first)
- Files ignored by .gitignore and the .git folder are left out
- At most 100 paths are returned; the output says when there were more
- Use this tool when you need to find files by name patterns
- When you are doing an open ended search that may require multiple rounds of globbing and grepping, it is better to run the searches in parallel`
}

func (*globTool) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {
      "type": "string",
      "description": "The glob pattern to match files against"
    },
    "path": {
      "type": "string",
      "description": "The directory to search in. If not specified, the workspace root will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter \"undefined\" or \"null\" - simply omit it for the default behavior. Must be a valid directory path if provided."
    }
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

type globMatch struct {
	path  string
	mtime time.Time
}

func (t *globTool) Execute(ctx context.Context, call *tool.Call) tool.Result {
	var in globInput
	if err := decode("Glob", call.Input, &in); err != nil {
		return tool.Errorf("%v", err)
	}
	if in.Pattern == "" {
		return tool.Errorf("Glob: pattern is empty")
	}
	base := in.Path
	if base == "" {
		base = "."
	}
	baseRel, err := t.fs.Resolve(base)
	if err != nil {
		return tool.Errorf("Glob path %s: %v", base, err)
	}
	// Only the fixed folder prefix of the pattern needs walking: "src" for
	// "src/**/*.go". An absolute pattern is rooted where it says.
	pattern := filepath.ToSlash(in.Pattern)
	prefix, rest := doublestar.SplitPattern(pattern)
	if !doublestar.ValidatePattern(rest) {
		return tool.Errorf("Glob: invalid pattern %q", in.Pattern)
	}
	dirRel := baseRel
	if path.IsAbs(pattern) {
		dirRel, err = t.fs.Resolve(filepath.FromSlash(prefix))
	} else if prefix != "." {
		dirRel, err = t.fs.Resolve(path.Join(baseRel, prefix))
	}
	if err != nil {
		return tool.Errorf("Glob pattern %q: %v", in.Pattern, err)
	}
	fi, err := t.fs.Stat(dirRel)
	switch {
	case err != nil && dirRel == baseRel && errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("Glob path %s: directory not found", base)
	case err != nil && dirRel == baseRel:
		return fileError(base, err)
	case err != nil && errors.Is(err, workspace.ErrOutside):
		return tool.Errorf("Glob pattern %q: %v", in.Pattern, err)
	case err != nil, dirRel != baseRel && !fi.IsDir():
		return tool.Text("No files found")
	case !fi.IsDir():
		return tool.Errorf("Glob path %s is not a directory", base)
	}

	// Without "**" (or braces, which may hide a slash) a pattern matches
	// at one depth only, and deeper folders need no walking.
	depth := -1
	if !strings.Contains(rest, "**") && !strings.Contains(rest, "{") {
		depth = strings.Count(rest, "/") + 1
	}
	var (
		mu      sync.Mutex
		matches []globMatch
	)
	err = walkVisible(ctx, t.fs, dirRel, t.hidden, func(p string, d fs.DirEntry) error {
		rel := p
		if dirRel != "." {
			rel = p[len(dirRel)+1:]
		}
		if d.IsDir() {
			if depth > 0 && strings.Count(rel, "/")+1 >= depth {
				return fs.SkipDir
			}
			return nil
		}
		if !doublestar.MatchUnvalidated(rest, rel) {
			return nil
		}
		var mtime time.Time
		if info, err := d.Info(); err == nil {
			mtime = info.ModTime()
		}
		mu.Lock()
		matches = append(matches, globMatch{p, mtime})
		mu.Unlock()
		return nil
	})
	if err != nil {
		return tool.Errorf("Glob %q in %s: %v", in.Pattern, base, err)
	}
	if len(matches) == 0 {
		return tool.Text("No files found")
	}
	slices.SortFunc(matches, func(a, b globMatch) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	})
	var out strings.Builder
	resp := &globResponse{NumFiles: len(matches), Truncated: len(matches) > globMaxResults}
	for i, m := range matches {
		if i == globMaxResults {
			fmt.Fprintf(&out, "(Results are truncated: showing the %d most recently modified of %d files. Use a more specific path or pattern.)\n", globMaxResults, len(matches))
			break
		}
		out.WriteString(m.path)
		out.WriteByte('\n')
		resp.Filenames = append(resp.Filenames, m.path)
	}
	return tool.Result{Content: strings.TrimSuffix(out.String(), "\n"), Response: resp}
}
