package skill_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/skill"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

func TestMain(m *testing.M) {
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}

// write creates dir/rel with content, making folders.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

// openWorkspace opens dir as a workspace closed at the end of the test.
func openWorkspace(t *testing.T, dir string) *workspace.Local {
	t.Helper()
	fsys, err := workspace.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys
}

func skillMD(name, description, body string) string {
	var b strings.Builder
	b.WriteString("---\n")
	if name != "" {
		b.WriteString("name: " + name + "\n")
	}
	b.WriteString("description: " + description + "\n---\n" + body)
	return b.String()
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, folder, data string
		want               skill.Skill
	}{
		{"plain", "pdf", "---\nname: pdf\ndescription: Fills PDF forms.\n---\n# PDF\n\nSee forms.md.\n",
			skill.Skill{Name: "pdf", Description: "Fills PDF forms.", Instructions: "# PDF\n\nSee forms.md."}},
		{"CRLF", "pdf", "---\r\nname: pdf\r\ndescription: Fills PDF forms.\r\n---\r\nline one\r\nline two\r\n",
			skill.Skill{Name: "pdf", Description: "Fills PDF forms.", Instructions: "line one\nline two"}},
		{"BOM", "pdf", "\uFEFF---\nname: pdf\ndescription: d\n---\nbody",
			skill.Skill{Name: "pdf", Description: "d", Instructions: "body"}},
		{"BOM and CRLF, fence with trailing blanks", "pdf", "\uFEFF--- \r\ndescription: d\r\n---\t\r\nbody",
			skill.Skill{Name: "pdf", Description: "d", Instructions: "body"}},
		{"--- in the body", "notes", "---\ndescription: d\n---\nabove\n---\nbelow\n---\n",
			skill.Skill{Name: "notes", Description: "d", Instructions: "above\n---\nbelow\n---"}},
		{"closing fence at end of file", "x", "---\ndescription: d\n---",
			skill.Skill{Name: "x", Description: "d"}},
		{"name defaults to the folder", "git-commit", "---\ndescription: Writes commits.\n---\nbody",
			skill.Skill{Name: "git-commit", Description: "Writes commits.", Instructions: "body"}},
		{"multi-line description, unknown keys ignored", "x", "---\nname: x\ndescription: >\n  Does a\n  thing.\nlicense: MIT\nmetadata:\n  version: 2\n---\n",
			skill.Skill{Name: "x", Description: "Does a thing."}},
		{"allowed-tools as a comma-separated string", "x", "---\ndescription: d\nallowed-tools: Read, Grep,Glob\n---\n",
			skill.Skill{Name: "x", Description: "d", AllowedTools: []string{"Read", "Grep", "Glob"}}},
		{"allowed-tools as a list", "x", "---\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git add:*)\n---\n",
			skill.Skill{Name: "x", Description: "d", AllowedTools: []string{"Read", "Bash(git add:*)"}}},
		{"allowed-tools space-separated with patterns", "x", "---\ndescription: d\nallowed-tools: Bash(git log:*) Read\n---\n",
			skill.Skill{Name: "x", Description: "d", AllowedTools: []string{"Bash(git log:*)", "Read"}}},
		{"allowed-tools empty", "x", "---\ndescription: d\nallowed-tools:\n---\n",
			skill.Skill{Name: "x", Description: "d"}},
		{"safe", "x", "---\ndescription: d\nsafe: true\n---\n",
			skill.Skill{Name: "x", Description: "d", Safe: true}},
		{"description of 1024 characters", "x", "---\ndescription: " + strings.Repeat("é", 1024) + "\n---\n",
			skill.Skill{Name: "x", Description: strings.Repeat("é", 1024)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := skill.Parse(tc.folder, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want.Name || got.Description != tc.want.Description || got.Instructions != tc.want.Instructions ||
				got.Safe != tc.want.Safe || !slices.Equal(got.AllowedTools, tc.want.AllowedTools) {
				t.Errorf("Parse = %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, folder, data, problem string
	}{
		{"empty file", "x", "", "must begin with a --- line"},
		{"no front matter", "x", "# Title\n\ndescription: d\n", "must begin with a --- line"},
		{"four dashes are not a fence", "x", "----\ndescription: d\n----\n", "must begin with a --- line"},
		{"missing closing fence", "x", "---\ndescription: d\nbody\n", "never closed"},
		{"missing closing fence with CRLF", "x", "---\r\ndescription: d\r\n", "never closed"},
		{"bad YAML", "x", "---\ndescription: \"unterminated\n---\n", "not valid YAML"},
		{"bad YAML, named by its line in the file", "x", "---\ndescription: x\n  bad: [\n---\n", "line 3: mapping values are not allowed"},
		{"tab indentation", "x", "---\ndescription: d\n\tname: x\n---\n", "not valid YAML"},
		{"front matter not a mapping", "x", "---\n- a\n- b\n---\n", "not valid YAML"},
		{"duplicate key", "x", "---\ndescription: a\ndescription: b\n---\n", "not valid YAML"},
		{"description a list", "x", "---\ndescription: [a, b]\n---\n", "not valid YAML"},
		{"blank description and no body", "x", "---\ndescription: \"   \"\n---\n", "description is missing"},
		{"no description, no name, a folder of punctuation", "___", "---\n---\nbody\n", `folder name "___" cannot be made a skill name`},
		{"allowed-tools a mapping", "x", "---\ndescription: d\nallowed-tools:\n  Read: yes\n---\n", "allowed-tools (line 4)"},
		{"allowed-tools with a nested list", "x", "---\ndescription: d\nallowed-tools:\n  - [Read]\n---\n", "allowed-tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := skill.Parse(tc.folder, []byte(tc.data))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", s)
			}
			if !errors.Is(err, skill.ErrMalformed) {
				t.Errorf("error does not wrap ErrMalformed: %v", err)
			}
			if !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("error %q does not say %q", err, tc.problem)
			}
		})
	}
}

// Claude Code loads what breaks the Agent Skills rules in these ways (its
// plugins' Title Case names, Anthropic's claude-api skill's 1,068-character
// description): so does orca, with a warning.
func TestParseTolerates(t *testing.T) {
	long := strings.Repeat("a", 1068)
	for _, tc := range []struct {
		name, folder, data  string
		want, desc, warning string
	}{
		{"missing description: the body's first paragraph", "x", "---\nname: x\n---\n# Title\n\nbody\n", "x", "Title", "description is missing"},
		{"empty front matter", "x", "---\n---\nbody\n", "x", "body", "description is missing"},
		{"description too long", "x", "---\ndescription: " + long + "\n---\n", "x", long, "1068 characters long"},
		{"Title Case name: the folder's", "hook-development", "---\nname: Hook Development\ndescription: d\n---\n", "hook-development", "d", `name "Hook Development" is not a valid skill name`},
		{"upper-case name and folder: a slug", "PDF", "---\nname: PDF\ndescription: d\n---\n", "pdf", "d", `name "PDF" is not a valid skill name`},
		{"name too long: cut", strings.Repeat("a", 65), "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", strings.Repeat("a", 64), "d", "is not a valid skill name"},
		{"name differs from the folder: the name's", "pdf", "---\nname: docx\ndescription: d\n---\n", "docx", "d", `differs from its folder's name "pdf"`},
		{"folder is not a valid name", "My_Skill", "---\ndescription: d\n---\n", "my-skill", "d", `folder name "My_Skill" is not a valid skill name`},
		{"unknown context: inline", "x", "---\ndescription: d\ncontext: sandbox\n---\n", "x", "d", `context "sandbox" is not inline or fork`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := skill.Parse(tc.folder, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tc.want || s.Description != tc.desc {
				t.Errorf("name %q, description %q; want %q, %q", s.Name, s.Description, tc.want, tc.desc)
			}
			if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], tc.warning) {
				t.Errorf("warnings %q, want one saying %q", s.Warnings, tc.warning)
			}
		})
	}
}

// names returns the skills' names with their sources, "pdf/project".
func names(skills []skill.Skill) []string {
	var out []string
	for _, s := range skills {
		out = append(out, s.Name+"/"+s.Source.String())
	}
	return out
}

// problemAt returns the problem reported for path, or nil.
func problemAt(problems []error, path string) *skill.Error {
	for _, p := range problems {
		var e *skill.Error
		if errors.As(p, &e) && e.Path == path {
			return e
		}
	}
	return nil
}

func TestDiscoverProjectAndUser(t *testing.T) {
	root, config := t.TempDir(), t.TempDir()
	write(t, root, ".orca/skills/pdf/SKILL.md", skillMD("pdf", "Project PDF skill.", "project body"))
	write(t, root, ".orca/skills/pdf/forms.md", "resource")
	write(t, root, ".orca/skills/review/SKILL.md", skillMD("", "Reviews code.", "review body"))
	write(t, root, ".orca/skills/README.md", "not a skill")
	write(t, root, ".orca/skills/empty/notes.txt", "a folder without SKILL.md")
	write(t, config, "orca/skills/pdf/SKILL.md", skillMD("pdf", "User PDF skill.", "user body"))
	write(t, config, "orca/skills/commit/SKILL.md", skillMD("commit", "Writes commits.", "commit body"))
	fsys := openWorkspace(t, root)

	skills, problems := skill.Discover(fsys, tool.Folders{ConfigDir: config})
	if want := []string{"commit/user", "pdf/project", "review/project"}; !slices.Equal(names(skills), want) {
		t.Fatalf("skills = %v, want %v", names(skills), want)
	}
	byName := map[string]skill.Skill{}
	for _, s := range skills {
		byName[s.Name] = s
	}
	if s := byName["pdf"]; s.Description != "Project PDF skill." || s.Instructions != "project body" || s.Dir != ".orca/skills/pdf" {
		t.Errorf("pdf = %+v, want the project's, in .orca/skills/pdf", s)
	}
	if s := byName["commit"]; s.Dir != filepath.Join(config, "orca", "skills", "commit") || s.Instructions != "commit body" {
		t.Errorf("commit = %+v, want the user's, with an absolute folder", s)
	}
	if len(problems) != 1 {
		t.Fatalf("problems = %v, want the one shadow warning", problems)
	}
	userPDF := filepath.Join(config, "orca", "skills", "pdf", "SKILL.md")
	e := problemAt(problems, userPDF)
	if e == nil || !errors.Is(e, skill.ErrShadowed) || !strings.Contains(e.Error(), ".orca/skills/pdf") {
		t.Errorf("problems = %v, want %s shadowed by .orca/skills/pdf", problems, userPDF)
	}
}

func TestDiscoverNothing(t *testing.T) {
	fsys := openWorkspace(t, t.TempDir())
	skills, problems := skill.Discover(fsys, tool.Folders{ConfigDir: t.TempDir()})
	if len(skills) != 0 || len(problems) != 0 {
		t.Errorf("empty workspace and config: skills %v, problems %v", skills, problems)
	}
	skills, problems = skill.Discover(nil, tool.Folders{})
	if len(skills) != 0 || len(problems) != 0 {
		t.Errorf("no workspace, no config: skills %v, problems %v", skills, problems)
	}
}

func TestDiscoverReportsAndSkipsMalformed(t *testing.T) {
	root, config := t.TempDir(), t.TempDir()
	write(t, root, ".orca/skills/good/SKILL.md", skillMD("good", "Works.", "ok"))
	write(t, root, ".orca/skills/nofm/SKILL.md", "# just markdown\n")
	write(t, root, ".orca/skills/badyaml/SKILL.md", "---\ndescription: [unclosed\n---\n")
	write(t, root, ".orca/skills/nodesc/SKILL.md", "---\nname: nodesc\n---\nbody")
	write(t, root, ".orca/skills/badname/SKILL.md", skillMD("other", "d", ""))
	write(t, root, ".orca/skills/big/SKILL.md", skillMD("big", "d", strings.Repeat("x", skill.MaxFileSize)))
	if err := os.MkdirAll(filepath.Join(root, ".orca/skills/dir/SKILL.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, config, "orca/skills/Bad Name/SKILL.md", "---\ndescription: d\n---\n")
	fsys := openWorkspace(t, root)

	skills, problems := skill.Discover(fsys, tool.Folders{ConfigDir: config})
	// Nonstandard ones load, with a warning.
	if want := []string{"bad-name/user", "good/project", "nodesc/project", "other/project"}; !slices.Equal(names(skills), want) {
		t.Errorf("skills = %v, want %v", names(skills), want)
	}
	for path, problem := range map[string]string{
		".orca/skills/nofm/SKILL.md":                                    "must begin with a --- line",
		".orca/skills/badyaml/SKILL.md":                                 "not valid YAML",
		".orca/skills/nodesc/SKILL.md":                                  "nonstandard SKILL.md: description is missing",
		".orca/skills/badname/SKILL.md":                                 `nonstandard SKILL.md: name "other" differs from its folder's name "badname"`,
		".orca/skills/big/SKILL.md":                                     "bytes, at most",
		".orca/skills/dir/SKILL.md":                                     "not a regular file",
		filepath.Join(config, "orca", "skills", "Bad Name", "SKILL.md"): `nonstandard SKILL.md: the folder name "Bad Name" is not a valid skill name`,
	} {
		e := problemAt(problems, path)
		if e == nil {
			t.Errorf("no problem reported for %s; problems: %v", path, problems)
			continue
		}
		if !strings.Contains(e.Error(), problem) || !strings.HasPrefix(e.Error(), path+": ") {
			t.Errorf("problem for %s = %q, want it to name the file and say %q", path, e, problem)
		}
	}
	if len(problems) != 7 {
		t.Errorf("%d problems, want 7: %v", len(problems), problems)
	}
}

func TestDiscoverRefusesSymlinksOutOfTheWorkspace(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, outside, "evil/SKILL.md", skillMD("evil", "Outside the workspace.", "secret"))
	write(t, outside, "secret.md", skillMD("leak", "Outside the workspace.", "secret"))
	symlink(t, filepath.Join(outside, "evil"), filepath.Join(root, ".orca/skills/evil"))
	symlink(t, filepath.Join(outside, "secret.md"), filepath.Join(root, ".orca/skills/leak/SKILL.md"))
	// A link that stays inside the workspace is the project's own.
	write(t, root, "shared/skills/inside/SKILL.md", skillMD("inside", "Shared inside the workspace.", "fine"))
	symlink(t, "../../shared/skills/inside", filepath.Join(root, ".orca/skills/inside"))
	symlink(t, filepath.Join(outside, "nowhere"), filepath.Join(root, ".orca/skills/dangling"))
	fsys := openWorkspace(t, root)

	skills, problems := skill.Discover(fsys, tool.Folders{})
	if want := []string{"inside/project"}; !slices.Equal(names(skills), want) {
		t.Errorf("skills = %v, want %v", names(skills), want)
	}
	for _, path := range []string{".orca/skills/evil", ".orca/skills/leak/SKILL.md"} {
		e := problemAt(problems, path)
		if e == nil || !errors.Is(e, workspace.ErrOutside) {
			t.Errorf("problem for %s = %v, want workspace.ErrOutside; problems: %v", path, e, problems)
		}
	}
	for _, s := range skills {
		if strings.Contains(s.Instructions, "secret") {
			t.Errorf("skill %s carries instructions from outside the workspace", s.Name)
		}
	}
}

func TestDiscoverRefusesSkillsFolderLinkedOut(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, outside, "skills/evil/SKILL.md", skillMD("evil", "Outside.", "secret"))
	symlink(t, filepath.Join(outside, "skills"), filepath.Join(root, ".orca/skills"))
	skills, problems := skill.Discover(openWorkspace(t, root), tool.Folders{})
	if len(skills) != 0 {
		t.Errorf("skills = %v, want none", names(skills))
	}
	if e := problemAt(problems, ".orca/skills"); e == nil || !errors.Is(e, workspace.ErrOutside) {
		t.Errorf("problems = %v, want .orca/skills refused as outside the workspace", problems)
	}
}

func TestDiscoverUserSkillsInsideTheWorkspace(t *testing.T) {
	root := t.TempDir()
	fsys := openWorkspace(t, root)
	config := filepath.Join(fsys.Root(), "home-config")
	write(t, config, "orca/skills/tidy/SKILL.md", skillMD("tidy", "Tidies.", "body"))
	skills, problems := skill.Discover(fsys, tool.Folders{ConfigDir: config})
	if len(skills) != 1 || skills[0].Dir != "home-config/orca/skills/tidy" || skills[0].Source != skill.User || len(problems) != 0 {
		t.Errorf("skills %+v, problems %v: want tidy from the user, in home-config/orca/skills/tidy", skills, problems)
	}
}

// plainFS is a workspace whose files do not offer ReadDir, so that
// Discover lists folders by walking.
type plainFS struct{ *workspace.Local }

type plainFile struct{ fs.File }

func (p plainFS) Open(name string) (fs.File, error) {
	f, err := p.Local.Open(name)
	if err != nil {
		return nil, err
	}
	return plainFile{f}, nil
}

func TestDiscoverWithoutReadDir(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".orca/skills/a/SKILL.md", skillMD("a", "A.", "a"))
	write(t, root, ".orca/skills/b/SKILL.md", skillMD("b", "B.", "b"))
	write(t, root, ".orca/skills/b/deep/c/SKILL.md", skillMD("c", "Nested, not a skill.", "c"))
	write(t, root, ".orca/skills/bad/SKILL.md", "no front matter")
	skills, problems := skill.Discover(plainFS{openWorkspace(t, root)}, tool.Folders{})
	if want := []string{"a/project", "b/project"}; !slices.Equal(names(skills), want) {
		t.Errorf("skills = %v, want %v", names(skills), want)
	}
	if len(problems) != 1 || problemAt(problems, ".orca/skills/bad/SKILL.md") == nil {
		t.Errorf("problems = %v, want the one of bad", problems)
	}
}

// A plugin's skills are named plugin:skill, beside the others'.
func TestDiscoverPluginSkills(t *testing.T) {
	root, plugin := t.TempDir(), t.TempDir()
	write(t, root, ".orca/skills/pdf/SKILL.md", skillMD("pdf", "Project PDF skill.", "project body"))
	write(t, plugin, "skills/pdf/SKILL.md", skillMD("pdf", "The plugin's PDF skill.", "plugin body"))
	skills, problems := skill.Discover(openWorkspace(t, root), tool.Folders{Plugins: []tool.PluginFolder{{Name: "docs", Dir: plugin}}})
	if want := []string{"docs:pdf/plugin", "pdf/project"}; !slices.Equal(names(skills), want) || len(problems) != 0 {
		t.Fatalf("skills = %v (%v), want %v", names(skills), problems, want)
	}
}
