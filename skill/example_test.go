package skill_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// A project skill in .orca/skills, loaded by the model through the Skill
// tool, under a policy that allows only the skills it names.
func ExampleProvider() {
	dir, _ := os.MkdirTemp("", "orca-example")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, ".orca", "skills", "greet"), 0o755)
	os.WriteFile(filepath.Join(dir, ".orca", "skills", "greet", "SKILL.md"), []byte(`---
name: greet
description: Greets someone by name. Use when asked to greet.
---
Say "Hello, $ARGUMENTS!" and nothing else.
`), 0o644)
	fsys, _ := workspace.OpenLocal(dir)
	defer fsys.Close()

	p := skill.Provider(
		skill.WithConfigDir(""), // no user skills
		skill.WithPolicy(skill.RuleBased{Allow: []string{"greet"}}),
	)
	tools, err := p.Tools(tool.Env{RuntimeID: "rt-1", FS: fsys, Logger: slog.Default()})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := tool.NewRegistry()
	reg.Add(tools[0])

	res := reg.Call(context.Background(), &tool.Call{
		Name:  "Skill",
		Input: []byte(`{"skill": "greet", "args": "Ada"}`), Scope: scope.Scope{SessionID: "session-1"},
	})
	fmt.Println(res.Content)
	// Output:
	// Loaded the project skill "greet". Follow its instructions below.
	// Base directory for this skill: .orca/skills/greet
	// (This path is relative to the workspace root; paths in the instructions are relative to this folder.)
	// Arguments: Ada
	//
	// Say "Hello, Ada!" and nothing else.
}

// Discover is what a command listing the skills uses.
func ExampleDiscover() {
	dir, _ := os.MkdirTemp("", "orca-example")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, ".orca", "skills", "lint"), 0o755)
	os.WriteFile(filepath.Join(dir, ".orca", "skills", "lint", "SKILL.md"), []byte("---\ndescription: Runs the linters.\n---\nRun make lint.\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".orca", "skills", "broken"), 0o755)
	os.WriteFile(filepath.Join(dir, ".orca", "skills", "broken", "SKILL.md"), []byte("Run things.\n"), 0o644)
	fsys, _ := workspace.OpenLocal(dir)
	defer fsys.Close()

	skills, problems := skill.Discover(fsys, tool.Folders{})
	for _, s := range skills {
		fmt.Printf("%s (%s, %s): %s\n", s.Name, s.Source, s.Dir, s.Description)
	}
	for _, p := range problems {
		fmt.Println("skipped:", p)
	}
	// Output:
	// lint (project, .orca/skills/lint): Runs the linters.
	// skipped: .orca/skills/broken/SKILL.md: malformed SKILL.md: it must begin with a --- line opening YAML front matter
}
