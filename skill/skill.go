// Package skill gives a runtime Claude Code–style skills: folders holding a
// SKILL.md (YAML front matter naming and describing the skill, a Markdown
// body of instructions) and any files those instructions mention.
//
// Skills are found in four places, in this order (tool.Folders says which
// are read):
//
//	<workspace>/.orca/skills/    the project's
//	<workspace>/.claude/skills/  the project's, Claude Code's folder
//	<config>/orca/skills/        the user's (config is the runtime's configuration folder)
//	<claude>/skills/             the user's Claude Code folder (~/.claude)
//
// Of skills of the same name the first found wins, and the others are
// reported as shadowed. Project files are read through the runtime's
// workspace.FileSystem, so a symlink in .orca/skills cannot lead out of the
// workspace; user files are the user's own and are read with package os.
//
// Files are read as Claude Code reads them: a name that breaks the Agent
// Skills rules (Title Case, spaces) or differs from its folder, a
// description over 1,024 characters, a missing description (the body's
// first paragraph is used) and an unknown context are warnings
// (Skill.Warnings), and the skill loads. Its "disable-model-invocation:
// true" hides it from the model: only the user invokes it, with
// "/name arguments" as a turn's input (Expand). Its "allowed-tools" are
// granted, as allow rules, while it runs: for the rest of the turn that
// loaded it inline, or to its fork.
//
// Provider contributes one tool, Skill, whose description lists the skills
// found when the runtime was built and whose call loads one of them inline:
// the model receives the instructions as the call's observation. An
// InvocationPolicy decides whether a skill may be loaded; a denial is an
// observation, never a failed turn.
//
// A malformed SKILL.md never breaks a runtime: Discover reports it, with
// the file and the problem, and skips it.
package skill

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/orca-agent/orca/frontmatter"
	"github.com/orca-agent/orca/internal/names"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

// FileName is the name of the file that makes a folder a skill.
const FileName = "SKILL.md"

// ProjectDir is the folder, relative to the workspace root, whose
// subfolders are the project's skills.
const ProjectDir = ".orca/skills"

// ClaudeProjectDir is Claude Code's folder of the project's skills,
// relative to the workspace root.
const ClaudeProjectDir = ".claude/skills"

// Limits on a skill's front matter and file, as Claude Code sets them.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
	// MaxFileSize bounds a SKILL.md: its body is sent to the model whole.
	MaxFileSize = 1 << 20
)

// ErrMalformed is wrapped by every error that rejects a SKILL.md for its
// contents: no front matter, bad YAML, no description and no body to take
// one from, a name that cannot be made a skill name. The skill is skipped.
var ErrMalformed = errors.New("malformed " + FileName)

// ErrShadowed is wrapped by the warning that a skill is hidden by one of
// the same name found first (a project skill hides a user skill).
var ErrShadowed = errors.New("skill shadowed")

// ErrNonstandard is wrapped by the warnings of a SKILL.md that breaks the
// Agent Skills rules in a way Claude Code tolerates: the skill loads.
var ErrNonstandard = errors.New("nonstandard " + FileName)

// ErrUngranted is wrapped by the warning that a project's skill or
// command says allowed-tools in a workspace that is not trusted
// (tool.Folders.Untrusted): it loads, and grants nothing.
var ErrUngranted = errors.New("allowed-tools not granted: the workspace is not trusted")

// Error is a problem Discover met with one file or folder.
type Error struct {
	// Path is the file or folder concerned, written as Skill.Dir is.
	Path string
	// Err is the problem; it wraps ErrMalformed, ErrShadowed,
	// ErrNonstandard, or the
	// error of the read that failed (workspace.ErrOutside for a symlink
	// that leads out of the workspace).
	Err error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

// Source says where a skill was found.
type Source uint8

// The places skills are found, the first winning over the second.
const (
	Project Source = iota + 1 // <workspace>/.orca/skills or .claude/skills
	User                      // <config>/orca/skills or <claude>/skills
	Plugin                    // a Claude Code plugin's skills folder
)

func (s Source) String() string {
	switch s {
	case Project:
		return "project"
	case User:
		return "user"
	case Plugin:
		return "plugin"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Skill is one skill, as its SKILL.md describes it.
type Skill struct {
	// Name is the skill's name, which is also its folder's name.
	Name string
	// Description tells the model what the skill does and when to use it.
	Description string
	// AllowedTools are the tools (or tool patterns, "Bash(git:*)") the
	// skill's front matter says it uses, in the order given.
	AllowedTools []string
	// Safe is the front matter's "safe: true": the author says loading the
	// skill needs no approval. RuleBased policies may trust it.
	Safe bool
	// Fork is the front matter's "context: fork": the skill runs as a
	// subagent fork (of Agent, general-purpose if empty) that gets the
	// instructions as its task, and its answer is the tool's result.
	Fork  bool
	Agent string
	// DisableModelInvocation is the front matter's
	// "disable-model-invocation: true": the model is not told of the
	// skill and may not load it; the user invokes it ("/name" as a turn's
	// input, see Expand).
	DisableModelInvocation bool
	// Warnings say where the file breaks the Agent Skills rules in ways
	// that are tolerated, as Claude Code tolerates them.
	Warnings []string
	// Instructions is the Markdown body after the front matter.
	Instructions string
	// Source says where the skill was found.
	Source Source
	// Ungranted says its AllowedTools are not granted: the skill is the
	// project's and the workspace is not trusted (tool.Folders.Untrusted).
	Ungranted bool
	// Dir is the skill's folder: a slash-separated path relative to the
	// workspace root when the folder lies inside the workspace, else an
	// absolute OS path. Files the instructions mention are relative to it.
	Dir string
}

// grants returns the rules invoking s grants: none when Ungranted.
func (s *Skill) grants() []string {
	if s.Ungranted {
		return nil
	}
	return s.AllowedTools
}

// clone returns s with a slice of its own.
func (s Skill) clone() Skill {
	s.AllowedTools = slices.Clone(s.AllowedTools)
	s.Warnings = slices.Clone(s.Warnings)
	return s
}

// frontMatter is what orca reads of a SKILL.md's YAML; other keys are
// ignored, as Claude Code ignores keys it does not know.
type frontMatter struct {
	Name         string    `yaml:"name"`
	Description  string    `yaml:"description"`
	AllowedTools yaml.Node `yaml:"allowed-tools"`
	Safe         bool      `yaml:"safe"`
	Context      string    `yaml:"context"`
	Agent        string    `yaml:"agent"`
	NoModel      bool      `yaml:"disable-model-invocation"`
}

// Parse parses the contents of a SKILL.md found in the folder named folder
// (its base name). The result has no Source or Dir. Errors wrap
// ErrMalformed; what is tolerated is in Skill.Warnings.
func Parse(folder string, data []byte) (Skill, error) {
	var fm frontMatter
	body, err := frontmatter.Decode(data, &fm)
	if err != nil {
		return Skill{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	s := Skill{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), Safe: fm.Safe, Agent: strings.TrimSpace(fm.Agent),
		DisableModelInvocation: fm.NoModel}
	warn := func(format string, args ...any) { s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...)) }
	switch c := strings.TrimSpace(fm.Context); c {
	case "", "inline":
	case "fork":
		s.Fork = true
	default:
		warn("context %q is not inline or fork: the skill loads inline", c)
	}
	switch {
	case s.Name == "" && names.Lower(folder):
		s.Name = folder
	case s.Name == "":
		if s.Name = slug(folder); s.Name == "" {
			return Skill{}, fmt.Errorf("%w: the folder name %q cannot be made a skill name (lowercase letters, digits and hyphens, at most %d)", ErrMalformed, folder, MaxNameLen)
		}
		warn("the folder name %q is not a valid skill name (lowercase letters, digits and hyphens, at most %d): the skill is called %q", folder, MaxNameLen, s.Name)
	case !names.Lower(s.Name):
		// Claude Code's plugins name skills in Title Case: the folder is
		// the name to call them by.
		given := s.Name
		if s.Name = folder; !names.Lower(folder) {
			s.Name = slug(given)
		}
		if s.Name == "" {
			return Skill{}, fmt.Errorf("%w: name %q cannot be made a skill name (lowercase letters, digits and hyphens, at most %d)", ErrMalformed, given, MaxNameLen)
		}
		warn("name %q is not a valid skill name (lowercase letters, digits and hyphens, at most %d): the skill is called %q", given, MaxNameLen, s.Name)
	case s.Name != folder:
		warn("name %q differs from its folder's name %q", s.Name, folder)
	}
	s.Instructions = strings.TrimRight(strings.TrimLeft(body, "\n"), " \t\n")
	if s.Description == "" {
		para, _, _ := strings.Cut(s.Instructions, "\n\n")
		s.Description = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(para), "# "))
		if s.Description == "" {
			return Skill{}, fmt.Errorf("%w: description is missing (it tells the model when to use the skill), and the body has none to take", ErrMalformed)
		}
		warn("description is missing: the first paragraph of the body is used")
	}
	if n := utf8.RuneCountInString(s.Description); n > MaxDescriptionLen {
		warn("description is %d characters long, more than the %d the Agent Skills rules allow", n, MaxDescriptionLen)
	}
	if s.AllowedTools, err = frontmatter.List(&fm.AllowedTools, "allowed-tools"); err != nil {
		return Skill{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return s, nil
}

// slug makes s a valid skill name, or "": lower case, every run of other
// characters a hyphen.
func slug(s string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
		default:
			hyphen = true
		}
	}
	out := b.String()
	if len(out) > MaxNameLen {
		out = strings.TrimRight(out[:MaxNameLen], "-")
	}
	return out
}

// Discover finds the skills of the workspace fsys and of the user, in
// the places in sets (see the package documentation), sorted by name. A
// nil fsys skips the project's places, an empty in.ConfigDir or
// in.ClaudeDir the user's.
//
// The errors are *Error values, one per problem: a SKILL.md that is
// malformed (ErrMalformed) or cannot be read, and is skipped; a skill
// hidden by one of the same name found first (ErrShadowed) and a
// nonstandard one that loads all the same (ErrNonstandard), warnings. A
// folder without a SKILL.md is not a skill and not a problem.
func Discover(fsys workspace.FileSystem, in tool.Folders) ([]Skill, []error) {
	var problems []error
	var root string
	var levels []level
	if fsys != nil {
		root = fsys.Root()
		levels = append(levels, projectLevel(fsys, ProjectDir))
		if in.Claude {
			levels = append(levels, projectLevel(fsys, ClaudeProjectDir))
		}
	}
	if in.ConfigDir != "" {
		levels = append(levels, userLevel(filepath.Join(in.ConfigDir, "orca", "skills"), root))
	}
	if in.ClaudeDir != "" {
		levels = append(levels, userLevel(filepath.Join(in.ClaudeDir, "skills"), root))
	}
	for _, p := range in.Plugins {
		l := userLevel(filepath.Join(p.Dir, "skills"), root)
		l.source, l.prefix = Plugin, p.Name+":"
		levels = append(levels, l)
	}
	var skills []Skill
	for _, l := range levels {
		for _, s := range scan(l, &problems) {
			s.Name = l.prefix + s.Name
			file := joinDir(s.Dir, FileName)
			if i := slices.IndexFunc(skills, func(p Skill) bool { return p.Name == s.Name }); i >= 0 {
				problems = append(problems, &Error{Path: file,
					Err: fmt.Errorf("%w: the %s skill %q at %s is used instead", ErrShadowed, skills[i].Source, s.Name, skills[i].Dir)})
				continue
			}
			for _, w := range s.Warnings {
				problems = append(problems, &Error{Path: file, Err: fmt.Errorf("%w: %s", ErrNonstandard, w)})
			}
			if in.Untrusted && l.source == Project && len(s.AllowedTools) > 0 {
				s.Ungranted = true
				problems = append(problems, &Error{Path: file, Err: fmt.Errorf("%w (%s)", ErrUngranted, strings.Join(s.AllowedTools, ", "))})
			}
			skills = append(skills, s)
		}
	}
	slices.SortFunc(skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return skills, problems
}

// level is one place skills are found, with the file operations for it.
type level struct {
	source Source
	// prefix comes before its skills' names (a plugin's "name:").
	prefix   string
	dir      string                      // the skills folder
	join     func(elem ...string) string // path.Join or filepath.Join
	show     func(dir string) string     // dir as Skill.Dir says it
	readDir  func(string) ([]fs.DirEntry, error)
	stat     func(string) (fs.FileInfo, error)
	readFile func(string) ([]byte, error)
}

func projectLevel(fsys workspace.FileSystem, dir string) level {
	return level{
		source:   Project,
		dir:      dir,
		join:     path.Join,
		show:     func(dir string) string { return dir },
		readDir:  func(dir string) ([]fs.DirEntry, error) { return readDir(fsys, dir) },
		stat:     fsys.Stat,
		readFile: fsys.ReadFile,
	}
}

func userLevel(dir, root string) level {
	return level{
		source: User,
		dir:    dir,
		join:   filepath.Join,
		show: func(dir string) string {
			if root != "" {
				if rel, err := filepath.Rel(root, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
					return filepath.ToSlash(rel)
				}
			}
			return dir
		},
		readDir:  os.ReadDir,
		stat:     os.Stat,
		readFile: os.ReadFile,
	}
}

// joinDir joins a Skill.Dir and a file name in the style of the Dir.
func joinDir(dir, name string) string {
	if filepath.IsAbs(dir) {
		return filepath.Join(dir, name)
	}
	return path.Join(dir, name)
}

// scan returns the skills of one level, adding its problems to problems.
func scan(l level, problems *[]error) []Skill {
	entries, err := l.readDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		*problems = append(*problems, &Error{Path: l.show(l.dir), Err: err})
		return nil
	}
	var out []Skill
	for _, e := range entries {
		// A symlink may name a folder; stat decides, through the level's
		// own confinement.
		if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		dir := l.join(l.dir, e.Name())
		s, err := load(l, dir, e.Name())
		if err != nil {
			*problems = append(*problems, err)
			continue
		}
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// load reads the skill in dir. It returns nil, nil when dir is not a skill
// folder (no SKILL.md, or a symlink to something else).
func load(l level, dir, folder string) (*Skill, error) {
	shown := l.show(dir)
	fi, err := l.stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a dangling symlink
	}
	if err != nil {
		return nil, &Error{Path: shown, Err: err}
	}
	if !fi.IsDir() {
		return nil, nil
	}
	file := l.join(dir, FileName)
	fileShown := joinDir(shown, FileName)
	fi, err = l.stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Path: fileShown, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Path: fileShown, Err: fmt.Errorf("not a regular file (%v)", fi.Mode().Type())}
	}
	if fi.Size() > MaxFileSize {
		return nil, &Error{Path: fileShown, Err: fmt.Errorf("%w: %d bytes, at most %d are allowed", ErrMalformed, fi.Size(), MaxFileSize)}
	}
	data, err := l.readFile(file)
	if err != nil {
		return nil, &Error{Path: fileShown, Err: err}
	}
	s, err := Parse(folder, data)
	if err != nil {
		return nil, &Error{Path: fileShown, Err: err}
	}
	s.Source, s.Dir = l.source, shown
	return &s, nil
}

// readDir lists dir through fsys: with fs.ReadDirFile when its files offer
// it (the local workspace's do), else with a walk that does not descend.
func readDir(fsys workspace.FileSystem, dir string) ([]fs.DirEntry, error) {
	f, err := fsys.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if d, ok := f.(fs.ReadDirFile); ok {
		return d.ReadDir(-1)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	return walkDir(fsys, dir)
}

func walkDir(fsys workspace.FileSystem, dir string) ([]fs.DirEntry, error) {
	rel, err := fsys.Resolve(dir)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []fs.DirEntry
	err = fsys.Walk(context.Background(), dir, func(p string, d fs.DirEntry) error {
		if path.Dir(p) != rel {
			return nil
		}
		mu.Lock()
		out = append(out, d)
		mu.Unlock()
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, err
}
