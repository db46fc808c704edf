package subagent_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/subagent"
)

// FuzzParse reads subagent definition files as others write them (the
// vendored Claude Code agents are the seeds): a file parses or is an
// error wrapping ErrMalformed, never a panic.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "claude-agents", "*.md"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	for _, s := range []string{
		"---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep\nmodel: sonnet\n---\nYou review.",
		"---\nname: x\ndescription: d\ntools: [Read, {a: b}]\ndisallowedTools: Bash\n---\n",
		"---\nname: X Y\ndescription: d\n---\n", "---\nname: x\n---\n", "---\n---\n", "", "---\nname: [x]\ndescription: {d: 1}\n---\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if _, err := subagent.Parse("x", []byte(data)); err != nil && !errors.Is(err, subagent.ErrMalformed) {
			t.Errorf("Parse: %v does not wrap ErrMalformed", err)
		}
	})
}
