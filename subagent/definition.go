// Package subagent holds what forks are made of: subagent definitions
// (Markdown files with YAML front matter in .orca/agents/ and the user's
// config folder, plus the built-in general-purpose agent) and the Manager
// of background tasks, whose ownership checks keep one session out of
// another's tasks. The forks themselves run in package agent.
package subagent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/frontmatter"
	"github.com/orca-agent/orca/workspace"
)

// Definition is a subagent: a system prompt, the tools it may use and the
// model it runs on.
type Definition struct {
	Name        string
	Description string
	// Tools are the tool names the subagent may use; nil means all of its
	// parent's.
	Tools []string
	// Model is the model to use; empty means the parent's.
	Model string
	// Prompt is the system prompt.
	Prompt string
	// Source is "builtin", "project" or "user"; Path the file it came from.
	Source, Path string
}

// GeneralPurpose is the built-in subagent, always available.
var GeneralPurpose = Definition{
	Name:        "general-purpose",
	Description: "General-purpose agent for researching complex questions, searching for code, and executing multi-step tasks. When you are searching for a keyword or file and are not confident that you will find the right match in the first few tries, use this agent to perform the search for you.",
	Prompt:      `You are a subagent of a coding agent, working on one task it handed you. Use the tools to do the task completely, then answer with a concise report of what you found or did: the parent agent sees only your final answer, so put everything it needs in it (file paths, findings, what you changed, what remains).`,
	Source:      "builtin",
}

// ErrMalformed is wrapped by the errors of definition files that cannot be
// used.
var ErrMalformed = errors.New("malformed subagent definition")

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Tools       yaml.Node `yaml:"tools"`
	Model       string    `yaml:"model"`
}

// Parse parses a definition file whose base name (without .md) is file.
func Parse(file string, data []byte) (Definition, error) {
	var fm frontMatter
	body, err := frontmatter.Decode(data, &fm)
	if err != nil {
		return Definition{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	d := Definition{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), Model: strings.TrimSpace(fm.Model)}
	if d.Name == "" {
		d.Name = file
	}
	if !validName.MatchString(d.Name) {
		return Definition{}, fmt.Errorf("%w: name %q is not valid (lowercase letters, digits and hyphens, at most 64)", ErrMalformed, d.Name)
	}
	if d.Description == "" {
		return Definition{}, fmt.Errorf("%w: description is missing (it tells the model when to use the subagent)", ErrMalformed)
	}
	if d.Tools, err = frontmatter.List(&fm.Tools, "tools"); err != nil {
		return Definition{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if d.Model == "inherit" {
		d.Model = ""
	}
	d.Prompt = strings.TrimSpace(body)
	if d.Prompt == "" {
		return Definition{}, fmt.Errorf("%w: the body (the subagent's system prompt) is empty", ErrMalformed)
	}
	return d, nil
}

// ProjectDir is where a workspace keeps its subagents.
const ProjectDir = ".orca/agents"

// Discover returns the built-in general-purpose agent, the user's
// subagents (configDir/orca/agents/*.md) and the workspace's
// (.orca/agents/*.md, read through fsys so that links cannot lead out),
// sorted by name; a project definition replaces a user one of the same
// name, and either may replace the built-in. Files that cannot be used are
// reported and skipped.
func Discover(fsys workspace.FileSystem, configDir string) ([]Definition, []error) {
	byName := map[string]Definition{GeneralPurpose.Name: GeneralPurpose}
	var problems []error
	if configDir != "" {
		dir := filepath.Join(configDir, "orca", "agents")
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Errorf("%s: %w", dir, err))
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			data, err := os.ReadFile(p)
			add(byName, &problems, p, "user", e.Name(), data, err)
		}
	}
	if fsys != nil {
		if f, err := fsys.Open(ProjectDir); err == nil {
			var entries []fs.DirEntry
			if rd, ok := f.(fs.ReadDirFile); ok {
				entries, err = rd.ReadDir(-1)
			}
			f.Close()
			if err != nil {
				problems = append(problems, fmt.Errorf("%s: %w", ProjectDir, err))
			}
			slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
			for _, e := range entries {
				if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
					continue
				}
				p := path.Join(ProjectDir, e.Name())
				data, err := fsys.ReadFile(p)
				add(byName, &problems, p, "project", e.Name(), data, err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Errorf("%s: %w", ProjectDir, err))
		}
	}
	out := make([]Definition, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Definition) int { return strings.Compare(a.Name, b.Name) })
	return out, problems
}

func add(byName map[string]Definition, problems *[]error, p, source, file string, data []byte, err error) {
	if err != nil {
		*problems = append(*problems, fmt.Errorf("%s: %w", p, err))
		return
	}
	d, err := Parse(strings.TrimSuffix(file, ".md"), data)
	if err != nil {
		*problems = append(*problems, fmt.Errorf("%s: %w", p, err))
		return
	}
	d.Source, d.Path = source, p
	byName[d.Name] = d
}
