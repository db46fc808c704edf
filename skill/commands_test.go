package skill_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// commandsOf builds the skill provider's commands for a workspace and a
// user folder, as a runtime does.
func commandsOf(t *testing.T, ws string, in tool.Folders, hidden func(string) bool) tool.Expander {
	t.Helper()
	fsys, err := workspace.OpenLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	var x tool.Expander
	env := tool.Env{FS: fsys, Folders: in, Logger: slog.New(slog.DiscardHandler), Hidden: hidden, OnExpander: func(e tool.Expander) { x = e }}
	if _, err := skill.Provider().Tools(env); err != nil {
		t.Fatal(err)
	}
	if x == nil {
		t.Fatal("no commands handed over")
	}
	return x
}

// Commands of every folder, named by their file (or their front matter's
// name; a plugin's with its prefix), first found first; $ARGUMENTS and
// $1… replaced, or the arguments added; allowed-tools granted; the
// workspace files they reference attached, but never one outside the
// workspace or one a deny rule hides.
func TestCommands(t *testing.T) {
	ws, user, plugin, outside := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write(t, ws, ".claude/commands/review.md", "---\ndescription: Review a change\nargument-hint: <pr> [focus]\nallowed-tools: Bash(git diff:*), Read\n---\nReview PR #$1 with a focus on $2.\nAll: $ARGUMENTS\n")
	write(t, ws, ".claude/commands/frontend/component.md", "Make a component called $ARGUMENTS.\n\nFollow @docs/style.md and @"+filepath.Join(outside, "secret.txt")+" and @.env and @../escape.txt\n")
	write(t, ws, ".claude/commands/gsd/add-tests.md", "---\nname: gsd:add-tests\ndescription: Tests for a phase\n---\nPhase: $ARGUMENTS\n@"+filepath.Join(ws, "docs", "style.md")+"\n")
	write(t, ws, ".orca/commands/review.md", "orca's own review, found first\n")
	write(t, ws, ".claude/commands/plain.md", "# Plain\nDo the plain thing.\n")
	write(t, ws, ".claude/commands/runs.md", "Status:\n!`git status`\n")
	write(t, ws, ".claude/commands/empty.md", "---\ndescription: nothing\n---\n")
	write(t, ws, "docs/style.md", "Use tabs.\n")
	write(t, ws, ".env", "TOKEN=abc\n")
	write(t, outside, "secret.txt", "do not attach\n")
	write(t, filepath.Dir(ws), "escape.txt", "nor this\n")
	write(t, user, ".claude/commands/mine.md", "The user's: $ARGUMENTS")
	write(t, plugin, "commands/deploy.md", "Deploy to $1.")

	x := commandsOf(t, ws, tool.Folders{Claude: true, ClaudeDir: filepath.Join(user, ".claude"), Plugins: []tool.PluginFolder{{Name: "ops", Dir: plugin}}},
		func(rel string) bool { return rel == ".env" })
	var names []string
	for _, c := range x.Commands() {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "component gsd:add-tests mine ops:deploy plain review runs" {
		t.Errorf("commands %q", got)
	}
	expand := func(in string) string {
		t.Helper()
		ex, err := x.Expand(context.Background(), in)
		if err != nil || ex == nil {
			t.Fatalf("Expand(%q) = %+v, %v", in, ex, err)
		}
		return ex.Text
	}
	if got := expand("/review 42"); got != "orca's own review, found first\n\nARGUMENTS: 42" {
		t.Errorf("review: %q", got)
	}
	got := expand("/component Button")
	if !strings.HasPrefix(got, "Make a component called Button.") || !strings.Contains(got, "<file path=\"docs/style.md\">\nUse tabs.\n</file>") ||
		strings.Contains(got, "do not attach") || strings.Contains(got, "TOKEN") || strings.Contains(got, "nor this") {
		t.Errorf("component: %q", got)
	}
	if got := expand("/gsd:add-tests 12 focus on pricing"); !strings.HasPrefix(got, "Phase: 12 focus on pricing\n") || !strings.Contains(got, "Use tabs.") {
		t.Errorf("gsd:add-tests: %q", got)
	}
	if got := expand("/ops:deploy staging now"); got != "Deploy to staging." {
		t.Errorf("ops:deploy: %q", got)
	}
	if got := expand("/mine"); got != "The user's: " {
		t.Errorf("mine: %q", got)
	}
	if got := expand("/runs"); got != "Status:\n!`git status`" {
		t.Errorf("runs: %q", got)
	}
	for _, in := range []string{"/nope", "review", "/empty", "hello /review"} {
		if ex, err := x.Expand(context.Background(), in); ex != nil || err != nil {
			t.Errorf("Expand(%q) = %+v, %v", in, ex, err)
		}
	}
}

// The Claude Code command's front matter: its grants, its hint.
func TestParseCommand(t *testing.T) {
	c, warns, err := skill.ParseCommand("review", []byte("---\ndescription: Review\nargument-hint: [pr-number] [priority]\nallowed-tools: Bash(git diff:*), Read\n---\nReview $1.\n!`git diff`\n"))
	if err != nil || c.Description != "Review" || c.ArgumentHint != "[pr-number] [priority]" || strings.Join(c.AllowedTools, "|") != "Bash(git diff:*)|Read" || len(warns) != 1 {
		t.Errorf("%+v, %v, %v", c, warns, err)
	}
	if _, _, err := skill.ParseCommand("x", []byte("---\ndescription: [unclosed\n---\nbody\n")); err == nil {
		t.Error("malformed front matter parsed")
	}
}

// In a workspace that is not trusted, the project's commands and skills
// load but grant nothing, with a warning naming each; the user's and the
// plugins' still grant.
func TestUntrustedProjectGrants(t *testing.T) {
	ws, user := t.TempDir(), t.TempDir()
	write(t, ws, ".claude/commands/build.md", "---\nallowed-tools: Bash\n---\nBuild.\n")
	write(t, ws, ".orca/skills/deploy/SKILL.md", "---\nname: deploy\ndescription: Deploys.\nallowed-tools: Bash\n---\nDeploy.\n")
	write(t, user, ".claude/commands/mine.md", "---\nallowed-tools: Read\n---\nMine.\n")
	in := tool.Folders{Claude: true, ClaudeDir: filepath.Join(user, ".claude"), Untrusted: true}
	fsys, err := workspace.OpenLocal(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	cmds, problems := skill.DiscoverCommands(fsys, in)
	skills, skillProblems := skill.Discover(fsys, in)
	var warned []string
	for _, p := range append(problems, skillProblems...) {
		if errors.Is(p, skill.ErrUngranted) {
			warned = append(warned, p.Error())
		}
	}
	if len(warned) != 2 || !strings.Contains(warned[0], ".claude/commands/build.md") || !strings.Contains(warned[1], ".orca/skills/deploy") {
		t.Errorf("warnings %q", warned)
	}
	if len(cmds) != 2 || !cmds[0].Ungranted || cmds[1].Ungranted || len(skills) != 1 || !skills[0].Ungranted {
		t.Errorf("commands %+v, skills %+v", cmds, skills)
	}
	x := commandsOf(t, ws, in, nil)
	for name, want := range map[string]int{"/build": 0, "/mine": 1} {
		if ex, err := x.Expand(context.Background(), name); err != nil || ex == nil || len(ex.Grants) != want {
			t.Errorf("Expand(%s) = %+v, %v", name, ex, err)
		}
	}
}
