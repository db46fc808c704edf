// Package memory reads the instructions the user and the project keep for
// the agent — memory files (CLAUDE.md, AGENTS.md, ORCA.md), Claude Code's
// rules, the memory files of the workspace's subfolders (Nested) — and
// writes the system prompt they are sent in (SystemPrompt, Environment).
package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/frontmatter"
)

// Memory files are instructions the user and the project keep for the
// agent, sent with the system prompt on every turn, each under the name of
// its file. They are read in this order (later ones come later in the
// prompt, so that the closest to the work has the last word):
//
//	<claude>/CLAUDE.md            the user's, Claude Code's folder
//	<claude>/rules/**/*.md        the user's rules, Claude Code's
//	<config>/orca/ORCA.md         the user's, orca's folder
//	../CLAUDE.md, ../AGENTS.md    in the folders above the workspace, the farthest first
//	AGENTS.md                     the project's (the agents.md convention)
//	CLAUDE.md, .claude/CLAUDE.md  the project's, Claude Code's
//	.claude/rules/**/*.md         the project's rules, Claude Code's
//	.orca/ORCA.md                 the project's, orca's
//	CLAUDE.local.md               the project's, kept out of version control
//
// A rules file (Claude Code's .claude/rules, in alphabetical order of its
// path) whose front matter names "paths" (a glob or a list of them, over
// workspace paths) is not in the prompt: the runtime adds it to the
// observation of the first call that reads or writes a path it matches
// (PathRule, Nested).
//
// Claude Code's (CLAUDE.md, CLAUDE.local.md, .claude/CLAUDE.md, the rules
// and the user's) are left out without Folders.Claude. A line of the form "@path"
// imports that file in its place, as in Claude Code (relative to the file,
// or ~/; five levels deep at most); a project's file may import only files
// inside the workspace, and one above it only files in its own folder, and
// neither is read when it is a link leading out of that folder (nor is a
// project's rules file), so that a cloned repository cannot send the
// user's other files to the model.
const (
	// MaxFile bounds one memory file; a longer one is cut, with a
	// warning.
	MaxFile = 64 << 10
	// maxImportDepth is how deep imports nest, as in Claude Code.
	maxImportDepth = 5
)

// File is one file of the memory, read.
type File struct {
	// Path is the file as shown: workspace-relative, or absolute.
	Path string
	// What says what it is, for the model.
	What string
	// Text is its contents, imports in place.
	Text string
}

// Warning is what went wrong reading a file of the memory: it is not read,
// or not all of it.
type Warning struct {
	File, Message string
}

// String returns the warning as "file: message".
func (w Warning) String() string { return w.File + ": " + w.Message }

// Folders are where the memory is read from.
type Folders struct {
	// Root is the workspace root.
	Root string
	// ConfigDir is the user's configuration folder (its orca/ORCA.md),
	// "" for none.
	ConfigDir string
	// ClaudeDir is the user's Claude Code folder (its CLAUDE.md and
	// rules), "" for none.
	ClaudeDir string
	// Claude reads Claude Code's files: CLAUDE.md, CLAUDE.local.md,
	// .claude/CLAUDE.md, the rules, ClaudeDir's.
	Claude bool
}

// Read reads the memory files of the workspace root and the user's
// folders, returning them in order, the rules that apply to some files
// only, and what went wrong, as warnings.
func Read(f Folders) ([]File, []PathRule, []Warning) {
	root, configDir, claudeDir, claude := f.Root, f.ConfigDir, f.ClaudeDir, f.Claude
	var out []File
	var scoped []PathRule
	var warns []Warning
	rules := func(dir, what, confine string) {
		always, sc, ws := readRules(root, dir, what, confine)
		out, scoped, warns = append(out, always...), append(scoped, sc...), append(warns, ws...)
	}
	add := func(abs, what, confine string) {
		text, ws := readMemoryFile(abs, confine)
		warns = append(warns, ws...)
		if strings.TrimSpace(text) == "" {
			return
		}
		shown := abs
		if rel, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(rel) {
			shown = filepath.ToSlash(rel)
		}
		out = append(out, File{Path: shown, What: what, Text: text})
	}
	if claude && claudeDir != "" {
		add(filepath.Join(claudeDir, "CLAUDE.md"), "the user's instructions for every project (Claude Code's)", "")
		rules(filepath.Join(claudeDir, "rules"), "a rule of the user's for every project (Claude Code's)", "")
	}
	if configDir != "" {
		add(filepath.Join(configDir, "orca", "ORCA.md"), "the user's instructions for every project", "")
	}
	var above []string
	for d := filepath.Dir(root); d != filepath.Dir(d); d = filepath.Dir(d) {
		above = append(above, d)
	}
	for i := len(above) - 1; i >= 0; i-- {
		if claude {
			add(filepath.Join(above[i], "CLAUDE.md"), "instructions of a folder that holds the project", above[i])
		}
		add(filepath.Join(above[i], "AGENTS.md"), "instructions of a folder that holds the project", above[i])
	}
	add(filepath.Join(root, "AGENTS.md"), "the project's instructions", root)
	if claude {
		add(filepath.Join(root, "CLAUDE.md"), "the project's instructions", root)
		add(filepath.Join(root, ".claude", "CLAUDE.md"), "the project's instructions", root)
		rules(filepath.Join(root, ".claude", "rules"), "a rule of the project's", root)
	}
	add(filepath.Join(root, ".orca", "ORCA.md"), "the project's instructions", root)
	if claude {
		add(filepath.Join(root, "CLAUDE.local.md"), "the user's own instructions for this project", root)
	}
	return out, scoped, warns
}

// ruleFront is the front matter of a rules file.
type ruleFront struct {
	Paths yaml.Node `yaml:"paths"`
}

// readRules reads the rules files under dir (*.md, in its subfolders too,
// in order of their paths): those with "paths" as PathRules, the
// others as memory files. A file that cannot be used, or that leads out
// of the folder confine ("": anywhere), is a warning.
func readRules(root, dir, what, confine string) ([]File, []PathRule, []Warning) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	var warns []Warning
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		warns = append(warns, Warning{File: dir, Message: fmt.Sprintf("rules not read: %v", unwrapPath(err))})
	}
	slices.Sort(files)
	var always []File
	var scoped []PathRule
	for _, abs := range files {
		shown := abs
		if rel, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(rel) {
			shown = filepath.ToSlash(rel)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("rules file not read: %v", unwrapPath(err))})
			continue
		}
		if confine != "" && !inside(confine, abs) {
			warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("rules file not read: it is a link that leads out of %s", confine)})
			continue
		}
		if len(data) > MaxFile {
			warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("rules file of %d bytes: only its first %d are sent to the model", len(data), MaxFile)})
			data = data[:MaxFile]
		}
		var fm ruleFront
		body := string(data)
		if first, _, _ := strings.Cut(strings.TrimPrefix(body, "\uFEFF"), "\n"); strings.TrimSpace(first) == "---" {
			// Front matter is optional in a rules file.
			if body, err = frontmatter.Decode(data, &fm); err != nil {
				warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("rules file not used: %v", err)})
				continue
			}
		}
		if strings.TrimSpace(body) == "" {
			continue
		}
		var paths []string
		switch fm.Paths.Kind {
		case 0:
		case yaml.ScalarNode:
			paths = []string{fm.Paths.Value}
		case yaml.SequenceNode:
			for _, n := range fm.Paths.Content {
				if n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) != "" {
					paths = append(paths, n.Value)
				}
			}
		}
		for _, g := range paths {
			if !doublestar.ValidatePattern(strings.TrimPrefix(g, "./")) {
				warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("paths: %q is not a valid glob", g)})
			}
		}
		switch {
		case fm.Paths.Kind != 0 && len(paths) == 0:
			warns = append(warns, Warning{File: abs, Message: "paths: want a glob or a list of globs; the rule is not used"})
		case len(paths) > 0:
			scoped = append(scoped, PathRule{File: shown, Paths: paths, Text: body})
		default:
			always = append(always, File{Path: shown, What: what, Text: body})
		}
	}
	return always, scoped, warns
}

// importRef is a file reference in a memory file: "@path", at the start
// of a line or after a space.
var importRef = regexp.MustCompile(`(?:^|\s)@([^\s` + "`" + `]+)`)

// readMemoryFile reads one memory file and its imports. A file that does
// not exist gives "". Imports must lie in the folder confine ("": anywhere).
// A line that is only "@path" becomes the file's contents; a reference
// within a line stays, and the file's contents follow the line. A
// reference to no file ("@someone") is text.
func readMemoryFile(abs, confine string) (string, []Warning) {
	var warns []Warning
	seen := map[string]bool{}
	var read func(abs string, depth int) string
	read = func(abs string, depth int) string {
		if seen[abs] {
			return ""
		}
		seen[abs] = true
		data, err := os.ReadFile(abs)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) || depth > 0 {
				warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("memory file not read: %v", unwrapPath(err))})
			}
			return ""
		}
		if depth == 0 && confine != "" && !inside(confine, abs) {
			// A link in the project that leads out of it: a cloned
			// repository's CLAUDE.md -> ~/.ssh/id_rsa.
			warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("memory file not read: it is a link that leads out of %s", confine)})
			return ""
		}
		if len(data) > MaxFile {
			warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("memory file of %d bytes: only its first %d are sent to the model", len(data), MaxFile)})
			data = data[:MaxFile]
		}
		var out []string
		fence := false
		for _, line := range strings.Split(string(data), "\n") {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				fence = !fence
			}
			if fence {
				out = append(out, line)
				continue
			}
			alone := strings.HasPrefix(strings.TrimSpace(line), "@") && len(strings.Fields(line)) == 1
			var imported []string
			for _, m := range importRef.FindAllStringSubmatch(stripCode(line), -1) {
				ref := strings.TrimRight(m[1], ".,;:)")
				target := ref
				switch {
				case strings.HasPrefix(target, "~/"):
					home, err := os.UserHomeDir()
					if err != nil {
						continue
					}
					target = filepath.Join(home, target[2:])
				case !filepath.IsAbs(target):
					target = filepath.Join(filepath.Dir(abs), filepath.FromSlash(target))
				}
				if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
					if alone {
						warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("import @%s not read: there is no such file", ref)})
					}
					continue
				}
				if confine != "" && !inside(confine, target) {
					warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("import @%s not read: this memory file may import only files in %s", ref, confine)})
					continue
				}
				if depth+1 > maxImportDepth {
					warns = append(warns, Warning{File: abs, Message: fmt.Sprintf("import @%s not read: imports nest %d deep at most", ref, maxImportDepth)})
					continue
				}
				if text := strings.TrimRight(read(target, depth+1), "\n"); text != "" {
					imported = append(imported, text)
				}
			}
			if !alone || len(imported) == 0 {
				out = append(out, line)
			}
			out = append(out, imported...)
		}
		return strings.Join(out, "\n")
	}
	return read(abs, 0), warns
}

// stripCode blanks the inline code spans of a line: a reference in
// backquotes is text.
func stripCode(line string) string {
	b := []byte(line)
	in := false
	for i, c := range b {
		if c == '`' {
			in = !in
			continue
		}
		if in {
			b[i] = ' '
		}
	}
	return string(b)
}

// inside reports whether p lies in root once the links of both are
// resolved (a link in the workspace may not lead an import out of it).
func inside(root, p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = filepath.Clean(p)
	}
	rel, err := filepath.Rel(root, real)
	return err == nil && filepath.IsLocal(rel)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Environment is the section of the system prompt that says where the
// agent works.
func Environment(root string, now time.Time) string {
	git := "no"
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
		git = "yes"
	}
	return fmt.Sprintf(`# Environment
Working folder: %s (the workspace: the tools work here)
Is a git repository: %s
Platform: %s/%s
Today's date: %s`, root, git, runtime.GOOS, runtime.GOARCH, now.Format("2006-01-02"))
}

// SystemPrompt is base followed by the environment section env (none if
// "") and the memory files.
func SystemPrompt(base, env string, memory []File) string {
	var b strings.Builder
	b.WriteString(base)
	sep := func() {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
	}
	if env != "" {
		sep()
		b.WriteString(env)
	}
	if len(memory) > 0 {
		sep()
		b.WriteString("# Memory files\nThe user's and the project's instructions, from these files. Follow them: they take precedence over your defaults.")
		for _, m := range memory {
			fmt.Fprintf(&b, "\n\n<memory file=%q what=%q>\n%s\n</memory>", m.Path, m.What, strings.TrimSpace(m.Text))
		}
	}
	return b.String()
}
