package skill_test

import (
	"errors"
	"testing"

	"github.com/orca-agent/orca/skill"
)

// FuzzParse reads SKILL.md files and slash-command files as others write
// them: a file parses (with warnings, perhaps) or is an error wrapping
// the package's ErrMalformed, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"---\nname: pdf\ndescription: Work with PDF files.\n---\n# PDF\nUse it.\n",
		"---\nname: x\ndescription: d\nallowed-tools: Read, Grep, Bash(git:*)\ncontext: fork\nagent: Explore\n---\nbody",
		"---\nname: x\ndescription: d\nallowed-tools:\n  - Read\n  - [nested]\nmetadata: {a: 1}\n---\n",
		"---\ndescription: \"unterminated\n---\n", "---\n---\n", "---\n", "no front matter", "\uFEFF---\nname: bom\ndescription: d\n---\n",
		"---\nname: x\ndescription: d\nargument-hint: [file]\nmodel: haiku\ndisable-model-invocation: true\n---\nRun !`git status` on $ARGUMENTS and $1",
		"---\nname: &a x\ndescription: *a\n---\n", "---\n: : :\n---\n", "---\nname: x\ndescription: d\nsafe: maybe\n---\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if _, err := skill.Parse("x", []byte(data)); err != nil && !errors.Is(err, skill.ErrMalformed) {
			t.Errorf("Parse: %v does not wrap ErrMalformed", err)
		}
		if _, _, err := skill.ParseCommand("x", []byte(data)); err != nil && !errors.Is(err, skill.ErrMalformedCommand) {
			t.Errorf("ParseCommand: %v does not wrap ErrMalformedCommand", err)
		}
	})
}
