package protect

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	for rel, want := range map[string]bool{
		".orca":                                  true,
		".orca/hooks/a/b":                        true,
		".ORCA/Settings.JSON":                    true,
		".claude/settings.local.json":            true,
		"src/../.claude/x":                       true,
		".git":                                   true,
		".git/config":                            true,
		".git/config.worktree":                   true,
		".git/hooks":                             true,
		".git/hooks/pre-commit":                  true,
		".git/info/attributes":                   true,
		".git/commondir":                         true,
		".git/modules/lib/config":                true,
		".git/modules/lib/hooks":                 true,
		".git/modules/lib/hooks/post-checkout":   true,
		".git/modules/a/modules/b/config":        true,
		".git/modules/lib/info/attributes":       true,
		".git/worktrees/wt/config.worktree":      true,
		".git/worktrees/wt/commondir":            true,
		".git/worktrees/wt/gitdir":               true,
		"lib/.git":                               true, // a submodule's gitlink
		"vendor/x/.git/config":                   true, // a nested repository
		"vendor/x/.git/hooks/pre-push":           true,
		".git/HEAD":                              false,
		".git/index":                             false,
		".git/objects/ab/cdef":                   false,
		".git/modules/lib/objects/ab/cd":         false,
		".git/modules/lib/index":                 false,
		".git/configx":                           false,
		".gitignore":                             false,
		".github/workflows/ci.yml":               false,
		"sub/.orca/settings.json":                false,
		"docs/.claude/x":                         false,
		"src/main.go":                            false,
		".orca/../x.json":                        false,
		".git/worktrees/wt/index":                false,
		"notes.json":                             false,
		"lib/.gitmodules":                        false,
		"lib/.git/objects/pack/pack-1.pack":      false,
		"lib/.git/modules/nested/hooks/pre-push": true,
	} {
		if got := Match(rel); got != want {
			t.Errorf("Match(%q) = %v, want %v", rel, got, want)
		}
	}
}

func mkdir(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, to, at string) {
	t.Helper()
	mkdir(t, filepath.Dir(at))
	if err := os.Symlink(to, at); err != nil {
		t.Fatal(err)
	}
}

func paths(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Path)
	}
	return out
}

// Every link in protected state leads to a target: a file, a folder (and
// the links inside it), a chain, a link through a link; targets inside
// protected state, orca's records and loops are left out.
func TestResolve(t *testing.T) {
	ws := t.TempDir()
	out := t.TempDir()
	write(t, filepath.Join(ws, "notes.json"), "{}")
	link(t, "../notes.json", filepath.Join(ws, ".claude", "settings.local.json"))
	write(t, filepath.Join(ws, "scripts", "check.sh"), "true")
	link(t, "../../scripts/check.sh", filepath.Join(ws, ".claude", "hooks", "check.sh"))
	mkdir(t, filepath.Join(ws, "skills", "a"))
	link(t, "../skills", filepath.Join(ws, ".claude", "skills"))
	link(t, "../lib", filepath.Join(ws, "skills", "b")) // a link in a target folder
	mkdir(t, filepath.Join(ws, "lib"))
	link(t, "settings.json", filepath.Join(ws, ".claude", "inside.json")) // inside: protected already
	link(t, "chain1", filepath.Join(ws, ".orca", "settings.local.json"))
	link(t, "chain2", filepath.Join(ws, ".orca", "chain1"))
	link(t, filepath.Join(out, "real.json"), filepath.Join(ws, ".orca", "chain2"))
	link(t, "loop", filepath.Join(ws, ".orca", "loop"))
	link(t, filepath.Join(out, "db"), filepath.Join(ws, ".orca", "runs")) // orca's records: not walked
	link(t, "../cfgdir/x.json", filepath.Join(ws, ".orca", "via.json"))
	link(t, "real-cfg", filepath.Join(ws, "cfgdir"))
	mkdir(t, filepath.Join(ws, "real-cfg"))

	targets, complete := Resolve([]string{filepath.Join(ws, ".claude"), filepath.Join(ws, ".orca")}, Skip(filepath.Join(ws, ".orca"), OrcaData...))
	if !complete {
		t.Error("incomplete")
	}
	got := paths(targets)
	for _, want := range []string{
		filepath.Join(ws, "notes.json"),
		filepath.Join(ws, "scripts", "check.sh"),
		filepath.Join(ws, "skills"),
		filepath.Join(ws, "lib"),
		filepath.Join(out, "real.json"),
		filepath.Join(ws, "cfgdir", "x.json"), // as written: the link cfgdir on the way stays visible
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no target %s in %v", want, got)
		}
	}
	for _, not := range []string{filepath.Join(ws, ".claude", "settings.json"), filepath.Join(out, "db"), filepath.Join(ws, ".orca", "loop")} {
		if slices.Contains(got, not) {
			t.Errorf("target %s in %v", not, got)
		}
	}
	for _, tg := range targets {
		if tg.Path == filepath.Join(ws, "notes.json") && tg.By != "the link "+filepath.Join(ws, ".claude", "settings.local.json") {
			t.Errorf("notes.json by %q", tg.By)
		}
	}
}

// A whole protected folder that is a link leads to its target, and the
// links inside the target are followed from where they really are.
func TestResolveFolderLink(t *testing.T) {
	ws := t.TempDir()
	mkdir(t, filepath.Join(ws, "deep", "cfg"))
	link(t, "deep/cfg", filepath.Join(ws, ".claude"))
	write(t, filepath.Join(ws, "deep", "notes.json"), "{}")
	link(t, "../notes.json", filepath.Join(ws, "deep", "cfg", "settings.json"))
	targets, _ := Resolve([]string{filepath.Join(ws, ".claude")}, nil)
	got := paths(targets)
	for _, want := range []string{filepath.Join(ws, "deep", "cfg"), filepath.Join(ws, "deep", "notes.json")} {
		if !slices.Contains(got, want) {
			t.Errorf("no target %s in %v", want, got)
		}
	}
}

func TestGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	tmp := t.TempDir()
	lib := filepath.Join(tmp, "lib")
	mkdir(t, lib)
	git(lib, "init", "-q")
	git(lib, "commit", "-q", "--allow-empty", "-m", "x")
	ws := filepath.Join(tmp, "ws")
	mkdir(t, ws)
	git(ws, "init", "-q")
	git(ws, "commit", "-q", "--allow-empty", "-m", "x")
	git(ws, "submodule", "add", "-q", lib, "lib")
	git(ws, "worktree", "add", "-q", filepath.Join(tmp, "wt"))
	mkdir(t, filepath.Join(ws, "vendor", "nested"))
	git(filepath.Join(ws, "vendor", "nested"), "init", "-q")
	mkdir(t, filepath.Join(ws, "node_modules", "pkg"))
	git(filepath.Join(ws, "node_modules", "pkg"), "init", "-q")

	files, folders, complete := Git(ws)
	if !complete {
		t.Error("incomplete")
	}
	for _, want := range []string{
		filepath.Join(ws, ".git", "config"),
		filepath.Join(ws, ".git", "commondir"), // missing: listed all the same
		filepath.Join(ws, ".git", "modules", "lib", "config"),
		filepath.Join(ws, "lib", ".git"),
		filepath.Join(ws, ".git", "worktrees", "wt", "commondir"),
		filepath.Join(ws, ".git", "worktrees", "wt", "gitdir"),
		filepath.Join(ws, "vendor", "nested", ".git", "config"),
	} {
		if !slices.Contains(files, want) {
			t.Errorf("no file %s in %v", want, files)
		}
	}
	for _, want := range []string{
		filepath.Join(ws, ".git", "hooks"),
		filepath.Join(ws, ".git", "modules", "lib", "hooks"),
		filepath.Join(ws, "vendor", "nested", ".git", "hooks"),
	} {
		if !slices.Contains(folders, want) {
			t.Errorf("no folder %s in %v", want, folders)
		}
	}
	for _, p := range append(slices.Clone(files), folders...) {
		if Within(filepath.Join(ws, "node_modules"), p) {
			t.Errorf("%s: node_modules is not looked through", p)
		}
	}

	// A worktree checkout: its .git is a file; the repository is where it
	// says, with its common folder; no hooks folder is asked of the file.
	files, folders, _ = Git(filepath.Join(tmp, "wt"))
	if !slices.Contains(files, filepath.Join(tmp, "wt", ".git")) || !slices.Contains(files, filepath.Join(ws, ".git", "config")) || !slices.Contains(folders, filepath.Join(ws, ".git", "hooks")) {
		t.Errorf("worktree: files %v, folders %v", files, folders)
	}
	if slices.Contains(folders, filepath.Join(tmp, "wt", ".git", "hooks")) {
		t.Errorf("worktree: a hooks folder in the .git file: %v", folders)
	}
}

// Blank names the git files an empty one of which means what none does.
func TestBlank(t *testing.T) {
	for p, want := range map[string]bool{
		"/w/.git/config.worktree":              true,
		"/w/.git/worktrees/wt/config.worktree": true,
		"/w/.git/info/attributes":              true,
		"/w/.git/modules/lib/info/attributes":  true,
		"/w/.git/config":                       false,
		"/w/.git/commondir":                    false,
		"/w/.git/worktrees/wt/gitdir":          false,
		"/w/lib/.git":                          false,
		"/w/src/attributes":                    false,
	} {
		if got := Blank(p); got != want {
			t.Errorf("Blank(%s) = %v, want %v", p, got, want)
		}
	}
}
