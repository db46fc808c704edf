// Package builtin provides orca's file, shell and todo tools: Read, Write,
// Edit, Glob, Grep, Bash and TodoWrite (package toolset assembles them with
// the skill and subagent tools into the default tool set).
//
// Their names and input schemas are those of Claude Code's tools, because
// models are trained on them. File tools work only through the runtime's
// workspace.FileSystem, so every path a model sends is confined to the
// workspace. Glob and Grep share one walk that skips .git and what
// .gitignore files exclude. Bash runs in the workspace's root folder, in a
// process group of its own that is killed when the command times out, is
// cancelled or returns.
//
// Every failure is an observation for the model (a Result with IsError set)
// that names the input it refuses, and every output that had to be cut says
// so and how to see the rest.
package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/orca-agent/orca/tool"
)

// FilesProvider returns the provider of the file tools Read, Write, Edit,
// Glob and Grep. Its Tools fails when the Env has no FileSystem.
func FilesProvider() tool.Provider {
	return tool.NewProvider("files", func(env tool.Env) ([]tool.Tool, error) {
		if env.FS == nil {
			return nil, errors.New("builtin files: the runtime has no workspace file system")
		}
		return []tool.Tool{
			&readTool{fs: env.FS},
			&writeTool{fs: env.FS},
			&editTool{fs: env.FS},
			&globTool{fs: env.FS, hidden: env.Hidden},
			&grepTool{fs: env.FS, hidden: env.Hidden},
		}, nil
	})
}

// decode unmarshals a call's input into v. The registry has already checked
// the input against the tool's schema; decode still refuses unknown fields,
// for callers that run a tool without a registry.
func decode(name string, input json.RawMessage, v any) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w for %s: %v", tool.ErrInvalidInput, name, err)
	}
	return nil
}

// maxCount bounds a count's size, far past any file's lines or bytes.
const maxCount = 1 << 40

// count is a whole-number argument. The schemas say "number", as Claude
// Code's do, so a model may send 20 or 20.0; both decode, 2.5 does not.
type count int

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	switch {
	case math.Abs(f) > maxCount: // ±Inf too, past a float64's range (err is ErrRange then)
		return fmt.Errorf("%s is out of range (a count is at most %d)", b, int64(maxCount))
	case err != nil:
		return fmt.Errorf("%s is not a number", b)
	case f != math.Trunc(f):
		return fmt.Errorf("%s is not a whole number", b)
	}
	*c = count(f)
	return nil
}

// plural returns "1 line", "3 lines", "2 matches".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") || strings.HasSuffix(word, "s") {
		return strconv.Itoa(n) + " " + word + "es"
	}
	return strconv.Itoa(n) + " " + word + "s"
}
