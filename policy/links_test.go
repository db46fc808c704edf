package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/protect"
)

// Rules and protection decide on where a path really leads: links
// (dangling ones included) are followed before matching.
func TestRulesFollowLinks(t *testing.T) {
	ws := openWorkspace(t)
	root := ws.Root()
	for _, d := range []string{"secret", "src", "lib", ".orca/hooks"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "secret", "key.txt"), []byte("k"), 0o644)
	os.WriteFile(filepath.Join(root, "lib", "x.go"), []byte("x"), 0o644)
	for link, to := range map[string]string{
		"alias":           "secret",
		"src/lib":         "../lib",
		"notes.json":      ".orca/settings.local.json", // dangling: the file does not exist
		"docs":            ".orca/hooks",
		"loop":            "loop",
		"chain":           "alias",
		"abs-link":        filepath.Join(root, "secret"),
		"sub-of-dangling": "missing/../.orca",
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	p := mustNew(t, ModeAcceptEdits, []string{"Edit(src/**)", "Read(src/**)"}, []string{"Read(secret/**)"}, nil)
	for _, c := range []struct {
		tool, path string
		want       Decision
	}{
		{"Read", "alias/key.txt", Deny},
		{"Read", "chain/key.txt", Deny},
		{"Read", "abs-link/key.txt", Deny},
		{"Read", "secret/key.txt", Deny},
		{"Grep", "alias", Deny},
		{"Write", "notes.json", Deny},        // creates .orca/settings.local.json
		{"Write", "docs/pre-tool-use", Deny}, // creates .orca/hooks/pre-tool-use
		{"Edit", "sub-of-dangling/settings.json", Deny},
		{"Write", "loop/x", Ask}, // a loop is nowhere a rule or mode can allow
		{"Write", "src/main.go", Allow},
		{"Write", "lib/x.go", Allow}, // accept-edits: inside the workspace
	} {
		v := p.Decide(declared(Request{ToolName: c.tool, Input: input(t, "file_path", c.path, "path", c.path, "pattern", "x"), FS: ws}))
		if v.Decision != c.want {
			t.Errorf("%s %s = %s (%s), want %s", c.tool, c.path, v.Decision, v.Reason, c.want)
		}
	}
	// An allow rule covers a path only where it really leads: src/lib
	// leads out of src.
	d := mustNew(t, ModeDefault, []string{"Edit(src/**)"}, nil, nil)
	for path, want := range map[string]Decision{"src/main.go": Allow, "src/lib/x.go": Ask} {
		if v := d.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", path), FS: ws})); v.Decision != want {
			t.Errorf("default mode, Edit %s = %s (%s), want %s", path, v.Decision, v.Reason, want)
		}
	}
}

func TestReadDenied(t *testing.T) {
	ws := openWorkspace(t)
	root := ws.Root()
	os.MkdirAll(filepath.Join(root, "secret"), 0o755)
	os.Symlink("secret", filepath.Join(root, "alias"))
	home := t.TempDir()
	p := mustNew(t, ModeDefault, nil, []string{"Read(secret/**)", "Read(/etc/shadow)", "Read(//var/secret/**)", "Read(~/.aws/**)", "Read(**/.env)", "Bash(rm:*)"}, nil, WithHomeDir(home))
	if !p.DeniesReads() || mustNew(t, ModeDefault, nil, []string{"Bash(rm:*)"}, nil).DeniesReads() {
		t.Error("DeniesReads")
	}
	for rel, want := range map[string]bool{"secret": true, "secret/k": true, "alias/k": true, "src/.env": true, "src/x.go": false, "secretx": false} {
		if got := p.ReadDenied(ws, rel); got != want {
			t.Errorf("ReadDenied(%s) = %v, want %v", rel, got, want)
		}
	}
	paths, unenforced := p.ReadDeniedPaths(root)
	// /etc/shadow is the project's etc/shadow (Claude Code's reading) and
	// the system's (orca's older one); //var/secret the system's; ~/.aws
	// the home folder's.
	want := []string{filepath.Join(root, "secret"), filepath.Join(root, "etc/shadow"), "/etc/shadow", "/var/secret", filepath.Join(home, ".aws")}
	if !slices.Equal(paths, want) || len(unenforced) != 1 || unenforced[0] != "Read(**/.env)" {
		t.Errorf("ReadDeniedPaths: %q, unenforced %q", paths, unenforced)
	}
}

// Targets (WithTargets) are protected as .orca is, whatever the mode and
// rules, wherever a write reaches them from; a Bash redirection to one is
// refused too.
func TestTargetsAreProtected(t *testing.T) {
	ws := openWorkspace(t)
	root := ws.Root()
	os.MkdirAll(filepath.Join(root, "skills", "a"), 0o755)
	os.WriteFile(filepath.Join(root, "notes.json"), []byte("{}"), 0o644)
	os.Symlink("notes.json", filepath.Join(root, "alias.json"))
	targets := []protect.Target{
		{Path: filepath.Join(root, "notes.json"), By: "the link .claude/settings.local.json"},
		{Path: filepath.Join(root, "skills"), By: "the link .claude/skills"},
	}
	p := mustNew(t, ModeBypass, []string{"Edit", "Write", "Bash"}, nil, nil, WithTargets(targets))
	for _, c := range []struct {
		tool, path string
		want       Decision
	}{
		{"Write", "notes.json", Deny},
		{"Edit", "alias.json", Deny},
		{"Write", "skills/a/SKILL.md", Deny},
		{"Write", "skills", Deny},
		{"Write", "other.json", Allow},
		{"Write", "skillsx/a", Allow},
	} {
		v := p.Decide(declared(Request{ToolName: c.tool, Input: input(t, "file_path", c.path), FS: ws}))
		if v.Decision != c.want {
			t.Errorf("%s %s = %s (%s), want %s", c.tool, c.path, v.Decision, v.Reason, c.want)
		}
		if c.want == Deny && (v.Rule != "protected" || !strings.Contains(v.Reason, "leads to it")) {
			t.Errorf("%s %s: rule %s, %s", c.tool, c.path, v.Rule, v.Reason)
		}
	}
	d := mustNew(t, ModeDefault, []string{"Bash(echo:*)"}, nil, nil, WithTargets(targets))
	if v := d.Decide(declared(Request{ToolName: "Bash", Input: input(t, "command", "echo x > notes.json"), FS: ws})); v.Decision == Allow {
		t.Errorf("a redirection to a target: %s (%s)", v.Decision, v.Reason)
	}
}
