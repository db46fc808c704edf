package skill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/frontmatter"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// Custom slash commands, as Claude Code reads them: a Markdown file in a
// commands folder — the workspace's .orca/commands and .claude/commands,
// the user's <config>/orca/commands and ~/.claude/commands, a plugin's
// commands/ — is the command /<file name> (a plugin's /<plugin>:<name>;
// subfolders only sort them). Its front matter may give a description,
// an argument-hint and allowed-tools; its body is what a turn's input
// "/name arguments" becomes, with $ARGUMENTS replaced by the arguments
// and $1, $2, … by their words (the arguments added at the end when the
// body names none of them).
//
// Claude Code runs the "!`command`" lines of a command's body before it
// sends it; orca does not run them (they are sent as they are written),
// and says so when it reads the file.

// CommandsDir is the workspace's commands folder, orca's; ClaudeCommandsDir
// Claude Code's.
const (
	CommandsDir       = ".orca/commands"
	ClaudeCommandsDir = ".claude/commands"
)

// Command is one custom slash command.
type Command struct {
	// Name is what follows the slash.
	Name string
	// Description and ArgumentHint are the front matter's (the
	// description, else the body's first line).
	Description, ArgumentHint string
	// AllowedTools are granted for the turn that invokes it, unless
	// Ungranted: the command is the project's and the workspace is not
	// trusted (tool.Folders.Untrusted).
	AllowedTools []string
	Ungranted    bool
	// Body is the Markdown after the front matter.
	Body string
	// Source says where it was found, Path is its file.
	Source Source
	Path   string
}

type commandFrontMatter struct {
	Name         string    `yaml:"name"`
	Description  string    `yaml:"description"`
	ArgumentHint yaml.Node `yaml:"argument-hint"`
	AllowedTools yaml.Node `yaml:"allowed-tools"`
}

// ErrMalformedCommand is wrapped by the errors of command files that
// cannot be read as commands.
var ErrMalformedCommand = errors.New("malformed command file")

// hintLine is a front matter's argument-hint line.
var hintLine = regexp.MustCompile(`(?m)^argument-hint:[ \t]*(.*?)[ \t]*$`)

// quoteHint makes the argument-hint of a front matter YAML when it is
// not: Claude Code's own examples write "argument-hint: [pr] [priority]",
// which YAML cannot read, and Claude Code reads as text.
func quoteHint(data []byte) []byte {
	return hintLine.ReplaceAllFunc(data, func(line []byte) []byte {
		v := hintLine.FindSubmatch(line)[1]
		var probe any
		if len(v) == 0 || yaml.Unmarshal(append([]byte("k: "), v...), &probe) == nil {
			return line
		}
		q, _ := yaml.Marshal(string(v))
		return append([]byte("argument-hint: "), bytes.TrimSpace(q)...)
	})
}

// runs matches a line Claude Code would run before sending the command.
var runs = regexp.MustCompile("(?m)^\\s*!`")

// ParseCommand parses a command file named name. A file without front
// matter is all body. Errors wrap ErrMalformedCommand; the warnings say
// what orca does not do as Claude Code does.
func ParseCommand(name string, data []byte) (Command, []string, error) {
	c := Command{Name: name}
	var warns []string
	body := string(bytes.TrimPrefix(data, []byte("\uFEFF")))
	if first, _, _ := strings.Cut(body, "\n"); strings.TrimRight(first, " \t\r") == "---" {
		var fm commandFrontMatter
		b, err := frontmatter.Decode(quoteHint(data), &fm)
		if err != nil {
			return Command{}, nil, fmt.Errorf("%w: %v", ErrMalformedCommand, err)
		}
		body = b
		if n := strings.TrimSpace(fm.Name); n != "" {
			c.Name = n // get-shit-done's gsd:add-tests, in commands/gsd/add-tests.md
		}
		c.Description = strings.TrimSpace(fm.Description)
		if fm.ArgumentHint.Kind == yaml.ScalarNode {
			c.ArgumentHint = strings.TrimSpace(fm.ArgumentHint.Value)
		} else if fm.ArgumentHint.Kind == yaml.SequenceNode {
			var parts []string
			for _, n := range fm.ArgumentHint.Content {
				parts = append(parts, n.Value)
			}
			c.ArgumentHint = strings.Join(parts, " ")
		}
		if c.AllowedTools, err = frontmatter.List(&fm.AllowedTools, "allowed-tools"); err != nil {
			return Command{}, nil, fmt.Errorf("%w: %v", ErrMalformedCommand, err)
		}
	}
	c.Body = strings.TrimSpace(strings.ReplaceAll(body, "\r\n", "\n"))
	if c.Body == "" {
		return Command{}, nil, fmt.Errorf("%w: the command has no body", ErrMalformedCommand)
	}
	if c.Description == "" {
		first, _, _ := strings.Cut(c.Body, "\n")
		c.Description = strings.TrimSpace(strings.TrimLeft(first, "# "))
	}
	if runs.MatchString(c.Body) {
		warns = append(warns, "its !`command` lines are not run: orca sends them as they are written")
	}
	return c, warns, nil
}

// DiscoverCommands finds the commands of the workspace (fsys; nil for
// none), of the user and of the plugins in, in that order: of two of one
// name the first is kept (ErrShadowed). The errors are *Error values: a
// file that cannot be read or is malformed, skipped; warnings.
func DiscoverCommands(fsys workspace.FileSystem, in tool.Folders) ([]Command, []error) {
	var levels []level
	var root string
	if fsys != nil {
		root = fsys.Root()
		levels = append(levels, projectLevel(fsys, CommandsDir))
		if in.Claude {
			levels = append(levels, projectLevel(fsys, ClaudeCommandsDir))
		}
	}
	if in.ConfigDir != "" {
		levels = append(levels, userLevel(filepath.Join(in.ConfigDir, "orca", "commands"), root))
	}
	if in.ClaudeDir != "" {
		levels = append(levels, userLevel(filepath.Join(in.ClaudeDir, "commands"), root))
	}
	for _, p := range in.Plugins {
		l := userLevel(filepath.Join(p.Dir, "commands"), root)
		l.source, l.prefix = Plugin, p.Name+":"
		levels = append(levels, l)
	}
	var (
		out      []Command
		problems []error
	)
	for _, l := range levels {
		n := len(out)
		scanCommands(l, l.dir, 0, &out, &problems)
		if in.Untrusted && l.source == Project {
			for i := range out[n:] {
				if c := &out[n+i]; len(c.AllowedTools) > 0 {
					c.Ungranted = true
					problems = append(problems, &Error{Path: c.Path, Err: fmt.Errorf("%w (%s)", ErrUngranted, strings.Join(c.AllowedTools, ", "))})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out, problems
}

// scanCommands reads the .md files of dir and, three folders deep, of
// its subfolders.
func scanCommands(l level, dir string, depth int, out *[]Command, problems *[]error) {
	entries, err := l.readDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		*problems = append(*problems, &Error{Path: l.show(dir), Err: err})
		return
	}
	for _, e := range entries {
		p := l.join(dir, e.Name())
		fi, err := l.stat(p)
		if err != nil {
			continue // a dangling link
		}
		if fi.IsDir() {
			if depth < 3 {
				scanCommands(l, p, depth+1, out, problems)
			}
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || name == "" || !fi.Mode().IsRegular() {
			continue
		}
		shown := l.show(p)
		if fi.Size() > MaxFileSize {
			*problems = append(*problems, &Error{Path: shown, Err: fmt.Errorf("%w: %d bytes, at most %d are allowed", ErrMalformedCommand, fi.Size(), MaxFileSize)})
			continue
		}
		data, err := l.readFile(p)
		if err != nil {
			*problems = append(*problems, &Error{Path: shown, Err: err})
			continue
		}
		c, warns, err := ParseCommand(name, data)
		if err != nil {
			*problems = append(*problems, &Error{Path: shown, Err: err})
			continue
		}
		if l.prefix != "" && !strings.HasPrefix(c.Name, l.prefix) {
			c.Name = l.prefix + c.Name
		}
		if strings.ContainsFunc(c.Name, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) {
			*problems = append(*problems, &Error{Path: shown, Err: fmt.Errorf("%w: a command's name has no spaces", ErrMalformedCommand)})
			continue
		}
		c.Source, c.Path = l.source, shown
		if i := slices.IndexFunc(*out, func(o Command) bool { return o.Name == c.Name }); i >= 0 {
			*problems = append(*problems, &Error{Path: shown, Err: fmt.Errorf("%w: the command /%s of %s is used instead", ErrShadowed, c.Name, (*out)[i].Path)})
			continue
		}
		for _, w := range warns {
			*problems = append(*problems, &Error{Path: shown, Err: fmt.Errorf("%w: %s", ErrNonstandard, w)})
		}
		*out = append(*out, c)
	}
}

// commands are the custom slash commands of a runtime, a tool.Expander:
// fsys reads the files they reference (@path), hidden says which of those
// a deny rule keeps from the model.
type commands struct {
	list   []Command
	fsys   workspace.FileSystem
	hidden func(rel string) bool
}

// Commands implements tool.Expander.
func (cs commands) Commands() []tool.Command {
	out := make([]tool.Command, len(cs.list))
	for i, c := range cs.list {
		out[i] = tool.Command{Name: c.Name, Description: c.Description, Args: c.ArgumentHint}
	}
	return out
}

var positional = regexp.MustCompile(`\$(ARGUMENTS|[1-9][0-9]*)`)

// Expand implements tool.Expander: "/name arguments" becomes the body,
// its $ARGUMENTS and $1… replaced, and the grant of its allowed-tools.
func (cs commands) Expand(_ context.Context, input string) (*tool.Expansion, error) {
	name, args, ok := tool.SplitCommand(input)
	if !ok {
		return nil, nil
	}
	i := slices.IndexFunc(cs.list, func(c Command) bool { return c.Name == name })
	if i < 0 {
		return nil, nil
	}
	c := cs.list[i]
	args = strings.TrimSpace(args)
	words := strings.Fields(args)
	named := false
	text := positional.ReplaceAllStringFunc(c.Body, func(m string) string {
		named = true
		if m == "$ARGUMENTS" {
			return args
		}
		n, _ := strconv.Atoi(m[1:])
		if n <= len(words) {
			return words[n-1]
		}
		return ""
	})
	if !named && args != "" {
		text += "\n\nARGUMENTS: " + args
	}
	var grants []string
	if !c.Ungranted {
		grants = slices.Clone(c.AllowedTools)
	}
	return &tool.Expansion{Text: text + cs.attach(text), Grants: grants}, nil
}

var fileRef = regexp.MustCompile(`(?m)(?:^|[\s(])@([^\s)]+)`)

// maxAttached bounds the bytes of the files a command's references attach.
const maxAttached = 256 << 10

// attach returns the contents of the workspace files text references
// (@path, relative to the workspace or absolute inside it), as Claude
// Code attaches them — read through the workspace, so confined to it, and
// never one a deny rule on reading hides. Other references stay as they
// are written: the model may read them with its tools, as the policy
// lets it.
func (cs commands) attach(text string) string {
	if cs.fsys == nil {
		return ""
	}
	var b strings.Builder
	seen := map[string]bool{}
	left := maxAttached
	for _, m := range fileRef.FindAllStringSubmatch(text, -1) {
		ref := strings.TrimRight(m[1], ".,;:")
		rel := ref
		if filepath.IsAbs(ref) {
			r, err := filepath.Rel(cs.fsys.Root(), ref)
			if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				continue
			}
			rel = filepath.ToSlash(r)
		}
		if seen[rel] || cs.hidden != nil && cs.hidden(rel) {
			continue
		}
		seen[rel] = true
		fi, err := cs.fsys.Stat(rel)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(left) {
			continue
		}
		data, err := cs.fsys.ReadFile(rel)
		if err != nil {
			continue
		}
		left -= len(data)
		fmt.Fprintf(&b, "\n\n<file path=%q>\n%s\n</file>", ref, strings.TrimRight(string(data), "\n"))
	}
	return b.String()
}
