// Package subagent holds what forks are made of: subagent definitions
// (Markdown files with YAML front matter in .orca/agents/, .claude/agents/
// and the user's folders, plus the built-in general-purpose agent) and the Manager
// of background tasks, whose ownership checks keep one session out of
// another's tasks. The forks themselves run in package agent.
package subagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/frontmatter"
	"github.com/orca-agent/orca/internal/names"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// Definition is a subagent: a system prompt, the tools it may use and the
// model it runs on.
type Definition struct {
	Name        string
	Description string
	// Tools are the tool names the subagent may use, of its parent's: nil
	// (no tools key in the file, or tools: with no value) means all of
	// them; an empty list that is not nil (tools: [] or tools: "") means
	// none.
	Tools []string
	// DisallowedTools are tool names the subagent may not use, taken away
	// from Tools (or from all of its parent's when Tools is nil): the
	// file's disallowedTools.
	DisallowedTools []string
	// Model is the model to use, as the file names it: a model id or an
	// alias (ModelAliases), which the runtime resolves; empty (no model
	// key, or inherit) means the parent's.
	Model string
	// Prompt is the system prompt.
	Prompt string
	// Source is "builtin", "project" or "user"; Path the file it came from.
	Source, Path string
	// Remote is the base URL of an A2A agent (where its card is, at
	// /.well-known/agent-card.json) for a subagent that runs elsewhere:
	// Task sends it the prompt, as a task, and answers with the task's
	// answer (a Remote runs it). Empty: a fork of the runtime.
	Remote string
	// Headers are sent with every request to Remote (its API key).
	Headers map[string]string
	// Timeout bounds a remote subagent's task (DefaultRemoteTimeout if
	// zero).
	Timeout time.Duration
}

// DefaultRemoteTimeout bounds a remote subagent's task.
const DefaultRemoteTimeout = 10 * time.Minute

// Remote runs the tasks of remote subagents (Definition.Remote).
type Remote interface {
	// Ask sends prompt to the remote agent of def, as a new task, and
	// returns its answer; progress is told what the agent reports as it
	// works. An agent that fails, refuses, asks for input or outlasts
	// def.Timeout is an error saying so.
	Ask(ctx context.Context, def Definition, prompt string, progress func(string)) (string, error)
}

// GeneralPurpose is the built-in subagent, always available.
var GeneralPurpose = Definition{
	Name:        "general-purpose",
	Description: "General-purpose agent for researching complex questions, searching for code, and executing multi-step tasks. When you are searching for a keyword or file and are not confident that you will find the right match in the first few tries, use this agent to perform the search for you.",
	Prompt:      `You are a subagent of a coding agent, working on one task it handed you. Use the tools to do the task completely, then answer with a concise report of what you found or did: the parent agent sees only your final answer, so put everything it needs in it (file paths, findings, what you changed, what remains).`,
	Source:      "builtin",
}

// ModelAliases returns the model aliases of Claude Code's subagent files
// (model: sonnet): the model families, each standing for a model of the
// provider the subagent runs on (llm/provider.ModelAliases).
func ModelAliases() []string { return []string{"sonnet", "opus", "haiku"} }

// ErrMalformed is wrapped by the errors of definition files that cannot be
// used.
var ErrMalformed = errors.New("malformed subagent definition")

// Allows reports whether the subagent may use the tool that goes by the
// names given (its name, then its aliases, tool.Traits.Names): a
// definition's "tools" and "disallowedTools" may name it by any of them
// (Claude Code's agent files name Task "Agent").
func (d *Definition) Allows(names ...string) bool {
	return (d.Tools == nil || listed(d.Tools, names)) && !listed(d.DisallowedTools, names)
}

// listed reports whether list names a tool that goes by names: by one of
// them, or, for an MCP tool, by its server (mcp__github) or a wildcard
// over its name (mcp__context7__*, as get-shit-done-cc's agents list them).
func listed(list, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool {
		return slices.ContainsFunc(list, func(e string) bool {
			switch {
			case e == n:
				return true
			case !strings.HasPrefix(e, "mcp__") || !strings.HasPrefix(n, "mcp__"):
				return false
			case strings.Contains(e, "*"):
				m, _ := path.Match(e, n)
				return m
			}
			return !strings.Contains(e[len("mcp__"):], "__") && strings.HasPrefix(n, e+"__") // the server's every tool
		})
	})
}

type frontMatter struct {
	Name            string    `yaml:"name"`
	Description     string    `yaml:"description"`
	Tools           yaml.Node `yaml:"tools"`
	DisallowedTools yaml.Node `yaml:"disallowedTools"`
	Model           string    `yaml:"model"`
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
	if !names.Slug(d.Name) {
		return Definition{}, fmt.Errorf("%w: name %q is not valid (lowercase letters, digits and hyphens, at most 64)", ErrMalformed, d.Name)
	}
	if d.Description == "" {
		return Definition{}, fmt.Errorf("%w: description is missing (it tells the model when to use the subagent)", ErrMalformed)
	}
	if d.Tools, err = frontmatter.List(&fm.Tools, "tools"); err != nil {
		return Definition{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if d.DisallowedTools, err = frontmatter.List(&fm.DisallowedTools, "disallowedTools"); err != nil {
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

// maxAgentDepth is how many folders deep below an agents folder Discover
// looks for definitions.
const maxAgentDepth = 3

// ClaudeProjectDir is Claude Code's folder of a workspace's subagents.
const ClaudeProjectDir = ".claude/agents"

// Discover returns the built-in general-purpose agent and the subagents
// (*.md) of the places in says, sorted by name. They are read in this
// order, a definition replacing an earlier one of the same name (the
// built-in too):
//
//	<plugin>/agents        Claude Code plugins' (in.Plugins), as plugin:name
//	<claude>/agents        the user's Claude Code folder (in.ClaudeDir)
//	<config>/orca/agents   the user's (in.ConfigDir)
//	.claude/agents         the workspace's, Claude Code's folder (in.Claude)
//	.orca/agents           the workspace's
//
// so that a project's definition wins over a user's. The workspace's
// files are read through fsys, so that links cannot lead out. Subfolders
// are read too (core/coder.md), maxAgentDepth deep, as Claude Code finds
// definitions there; in one agents folder the shallowest of a name wins
// (then the first by path) and the others are reported (ErrShadowed); a
// link to a folder is not followed. Files that cannot be used are reported and skipped.
func Discover(fsys workspace.FileSystem, in tool.Folders) ([]Definition, []error) {
	byName := map[string]Definition{GeneralPurpose.Name: GeneralPurpose}
	var problems []error
	// Definitions may sit in subfolders of an agents folder (core/coder.md),
	// as Claude Code finds them; maxAgentDepth folders deep at most.
	// found is a definition file of one agents folder, depth folders below
	// it; read shallowest first, then by path.
	type found struct {
		path  string
		name  string
		depth int
	}
	byDepth := func(files []found) {
		slices.SortStableFunc(files, func(a, b found) int {
			return cmp.Or(cmp.Compare(a.depth, b.depth), strings.Compare(a.path, b.path))
		})
	}
	var userAs func(dir, source, prefix string)
	var walkUser func(dir string, depth int, out *[]found)
	walkUser = func(dir string, depth int, out *[]found) {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Errorf("%s: %w", dir, err))
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir() && depth < maxAgentDepth && !strings.HasPrefix(e.Name(), "."):
				walkUser(p, depth+1, out)
			case !e.IsDir() && strings.HasSuffix(e.Name(), ".md"):
				*out = append(*out, found{p, e.Name(), depth})
			}
		}
	}
	user := func(dir string) { userAs(dir, "user", "") }
	userAs = func(dir, source, prefix string) {
		var files []found
		walkUser(dir, 0, &files)
		byDepth(files)
		seen := map[string]string{}
		for _, f := range files {
			data, err := os.ReadFile(f.path)
			add(byName, seen, &problems, f.path, source, f.name, data, err, prefix)
		}
	}
	var walkProject func(dir string, depth int, out *[]found)
	walkProject = func(dir string, depth int, out *[]found) {
		f, err := fsys.Open(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", dir, err))
			return
		}
		var entries []fs.DirEntry
		if rd, ok := f.(fs.ReadDirFile); ok {
			entries, err = rd.ReadDir(-1)
		}
		f.Close()
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", dir, err))
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			switch {
			case e.IsDir() && depth < maxAgentDepth && !strings.HasPrefix(e.Name(), "."):
				walkProject(p, depth+1, out)
			case !e.IsDir() && strings.HasSuffix(e.Name(), ".md"):
				*out = append(*out, found{p, e.Name(), depth})
			}
		}
	}
	project := func(dir string) {
		var files []found
		walkProject(dir, 0, &files)
		byDepth(files)
		seen := map[string]string{}
		for _, f := range files {
			data, err := fsys.ReadFile(f.path)
			add(byName, seen, &problems, f.path, "project", f.name, data, err, "")
		}
	}
	for _, p := range in.Plugins {
		userAs(filepath.Join(p.Dir, "agents"), "plugin", p.Name+":")
	}
	if in.ClaudeDir != "" {
		user(filepath.Join(in.ClaudeDir, "agents"))
	}
	if in.ConfigDir != "" {
		user(filepath.Join(in.ConfigDir, "orca", "agents"))
	}
	if fsys != nil {
		if in.Claude {
			project(ClaudeProjectDir)
		}
		project(ProjectDir)
	}
	out := make([]Definition, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Definition) int { return strings.Compare(a.Name, b.Name) })
	return out, problems
}

// add adds the definition in file p; seen holds the names one agents
// folder already defined (the first, shallowest, of a name in a folder
// wins; a later folder replaces it).
func add(byName map[string]Definition, seen map[string]string, problems *[]error, p, source, file string, data []byte, err error, prefix string) {
	if err != nil {
		*problems = append(*problems, fmt.Errorf("%s: %w", p, err))
		return
	}
	d, err := Parse(strings.TrimSuffix(file, ".md"), data)
	if err != nil {
		*problems = append(*problems, fmt.Errorf("%s: %w", p, err))
		return
	}
	if first, ok := seen[d.Name]; ok {
		*problems = append(*problems, fmt.Errorf("%s: %w: %s defines %q already", p, ErrShadowed, first, d.Name))
		return
	}
	seen[d.Name] = p
	d.Name = prefix + d.Name // a plugin's agents are named plugin:agent
	d.Source, d.Path = source, p
	byName[d.Name] = d
}

// ErrShadowed is wrapped by the problem of a definition whose name one
// nearer the top of the same agents folder took.
var ErrShadowed = errors.New("shadowed subagent definition")
