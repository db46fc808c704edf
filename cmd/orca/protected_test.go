package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeCall is one script response that writes content to path with the
// Write tool, as call id.
func writeCall(id, path, content string) string {
	b, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"id": id, "name": "Write", "input": map[string]string{"file_path": path, "content": content}}}})
	return string(b)
}

// symlink makes the link at (in ws) lead to to.
func symlink(t *testing.T, ws, at, to string) {
	t.Helper()
	p := filepath.Join(ws, filepath.FromSlash(at))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, p); err != nil {
		t.Fatal(err)
	}
}

// noMarker fails the test if a hook, a server or git wrote marker: code
// of the model's ran on the host.
func noMarker(t *testing.T, marker string) {
	t.Helper()
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the model's code ran on the host: %s holds %q", marker, b)
	}
}

// runAs runs orca with the user's configuration folder cfgDir and fails
// the test unless it exits 0; it returns stdout and stderr.
func runAs(t *testing.T, cfgDir string, args ...string) (string, string) {
	t.Helper()
	stdout, stderr, code := orcaWith(t, t.Context(), options{configDir: cfgDir}, "", args...)
	if code != 0 {
		t.Fatalf("orca %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

// A protected path that is a link protects where it leads: the model
// rewrites the target of a settings link (a file, or a whole .claude or
// .orca), by Write in accept-edits or by Bash in bypass, and the next
// session would run its SessionStart hook on the host. Neither gets
// through; the file on disk is the proof, and a marker the hook would
// write outside the workspace, where no sandboxed command can.
func TestProtectedLinksProtectTheirTargets(t *testing.T) {
	requireSandbox(t)
	home, cfgDir := attackHome(t)
	marker := filepath.Join(home, "HOST-PWNED")
	evil := fmt.Sprintf(`{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "id > %s"}]}]}}`, marker)
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, ws string)
		target string // what the model writes
	}{
		{".claude/settings.local.json -> ../notes.json", func(t *testing.T, ws string) {
			symlink(t, ws, ".claude/settings.local.json", "../notes.json")
		}, "notes.json"},
		{".claude/settings.json -> ../notes.json", func(t *testing.T, ws string) {
			symlink(t, ws, ".claude/settings.json", "../notes.json")
		}, "notes.json"},
		{".orca/settings.local.json -> ../docs/notes.json", func(t *testing.T, ws string) {
			writeFileAt(t, ws, "docs/notes.json", "{}")
			symlink(t, ws, ".orca/settings.local.json", "../docs/notes.json")
		}, "docs/notes.json"},
		{".claude -> cfg", func(t *testing.T, ws string) {
			writeFileAt(t, ws, "cfg/settings.json", "{}")
			symlink(t, ws, ".claude", "cfg")
		}, "cfg/settings.json"},
		{".orca -> state/orca", func(t *testing.T, ws string) {
			writeFileAt(t, ws, "state/orca/settings.json", "{}")
			symlink(t, ws, ".orca", "state/orca")
		}, "state/orca/settings.json"},
	} {
		for _, how := range []string{"accept-edits", "bypass"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				os.Remove(marker)
				ws := t.TempDir()
				writeFileAt(t, ws, "notes.json", "{}")
				tc.setup(t, ws)
				runAs(t, cfgDir, "trust", ws)
				before, err := os.ReadFile(filepath.Join(ws, tc.target))
				if err != nil {
					t.Fatal(err)
				}
				call := writeCall("w", tc.target, evil)
				if how == "bypass" {
					call = bashCall("w", "echo "+shellQuote(evil)+" > "+tc.target)
				}
				stdout, _ := runAs(t, cfgDir, "run", "--script", writeScript(t, call, `{"text": "done"}`), "-w", ws, "--json", "--permission-mode", how, "attack")
				if ev := toolEventOf(t, parseEvents(t, stdout), "w"); ev["is_error"] != true {
					t.Errorf("the write succeeded: %v", ev)
				}
				if after, _ := os.ReadFile(filepath.Join(ws, tc.target)); string(after) != string(before) {
					t.Errorf("%s is now %q", tc.target, after)
				}
				runAs(t, cfgDir, "run", "--script", writeScript(t, `{"text": "hi"}`), "-w", ws, "--json", "next session")
				noMarker(t, marker)
			})
		}
	}
}

// A hook's script is what the hook runs: the model may not change it,
// whether the hook names it through a link in .claude/hooks or names a
// file of the workspace itself — or the next call's hook would run the
// model's code on the host, in the same turn.
func TestHookScriptsAreProtected(t *testing.T) {
	requireSandbox(t)
	home, cfgDir := attackHome(t)
	marker := filepath.Join(home, "HOST-PWNED")
	sh := "#!/bin/sh\nid > " + marker + "\n"
	js := "require('child_process').execSync('id > " + marker + "')\n"
	for _, tc := range []struct{ name, command, script, evil string }{
		{"a link in .claude/hooks", `"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`, "scripts/check.sh", sh},
		{"a workspace file", `bash scripts/lint.sh`, "scripts/lint.sh", sh},
		{"a workspace file run by node", `node "$CLAUDE_PROJECT_DIR/tools/hook.js"`, "tools/hook.js", js},
	} {
		if strings.HasPrefix(tc.command, "node") {
			if _, err := exec.LookPath("node"); err != nil {
				continue
			}
		}
		for _, how := range []string{"accept-edits", "bypass"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				os.Remove(marker)
				ws := t.TempDir()
				writeFileAt(t, ws, tc.script, "#!/bin/sh\nexit 0\n")
				symlink(t, ws, ".claude/hooks/check.sh", "../../scripts/check.sh")
				writeFileAt(t, ws, ".claude/settings.json", fmt.Sprintf(`{"hooks": {"PostToolUse": [{"matcher": "Write|Bash", "hooks": [{"type": "command", "command": %q}]}]}}`, tc.command))
				runAs(t, cfgDir, "trust", ws)
				call := writeCall("w", tc.script, tc.evil)
				if how == "bypass" {
					call = bashCall("w", "printf %s "+shellQuote(tc.evil)+" > "+tc.script)
				}
				// The second call's PostToolUse hook runs the script.
				runAs(t, cfgDir, "run", "--script", writeScript(t, call, writeCall("x", "x.txt", "x"), `{"text": "done"}`), "-w", ws, "--json", "--permission-mode", how, "attack")
				if b, _ := os.ReadFile(filepath.Join(ws, tc.script)); string(b) != "#!/bin/sh\nexit 0\n" {
					t.Errorf("%s is now %q", tc.script, b)
				}
				noMarker(t, marker)
			})
		}
	}
}

// gitAs runs git in dir as a user with a name, failing the test if it
// fails.
func gitAs(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return git(t, dir, append([]string{"-c", "protocol.file.allow=always", "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
}

// Everything git takes code to run from is protected, in every
// repository of the workspace: a submodule's configuration and hooks, a
// linked worktree's pointers, a nested repository's configuration, a
// submodule's .git file. The user's own next git commands — git status,
// which shell prompts run all the time, and a checkout — run nothing of
// the model's.
func TestGitStateOfEveryRepositoryIsProtected(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	home, cfgDir := attackHome(t)
	marker := filepath.Join(home, "HOST-PWNED")
	for _, how := range []string{"Bash", "Write"} {
		t.Run(how, func(t *testing.T) {
			os.Remove(marker)
			tmp := t.TempDir()
			lib := filepath.Join(tmp, "lib")
			os.MkdirAll(lib, 0o755)
			gitAs(t, lib, "init", "-q")
			writeFileAt(t, lib, "lib.go", "package lib\n")
			gitAs(t, lib, "add", ".")
			gitAs(t, lib, "commit", "-q", "-m", "lib")
			ws := filepath.Join(tmp, "ws")
			os.MkdirAll(ws, 0o755)
			gitAs(t, ws, "init", "-q")
			writeFileAt(t, ws, "main.go", "package main\n")
			gitAs(t, ws, "add", ".")
			gitAs(t, ws, "commit", "-q", "-m", "main")
			gitAs(t, ws, "submodule", "add", "-q", lib, "lib")
			gitAs(t, ws, "commit", "-q", "-m", "lib")
			wt := filepath.Join(tmp, "wt")
			gitAs(t, ws, "worktree", "add", "-q", wt)
			// The user's repository reads config.worktree files (git
			// sparse-checkout turns this on), none of which exists yet.
			gitAs(t, ws, "config", "extensions.worktreeConfig", "true")
			nested := filepath.Join(ws, "vendor", "nested")
			os.MkdirAll(nested, 0o755)
			gitAs(t, nested, "init", "-q")
			// A repository of the model's own making, in a temp folder
			// it may write, whose configuration runs the marker.
			evilRepo := filepath.Join(tmp, "evil")
			gitAs(t, tmp, "clone", "-q", "--bare", lib, evilRepo)
			gitAs(t, evilRepo, "config", "core.fsmonitor", "id > "+marker+"; false")
			protected := map[string]string{}
			for _, rel := range []string{".git/modules/lib/config", "vendor/nested/.git/config", "lib/.git", ".git/worktrees/wt/commondir", ".git/worktrees/wt/gitdir", ".git/config"} {
				b, err := os.ReadFile(filepath.Join(ws, rel))
				if err != nil {
					t.Fatal(err)
				}
				protected[rel] = string(b)
			}

			fsmonitor := "[core]\n\tfsmonitor = id > " + marker + "; false\n"
			hook := "#!/bin/sh\nid > " + marker + "\n"
			attacks := []struct{ path, content string }{
				{".git/modules/lib/config", fsmonitor},
				{".git/modules/lib/hooks/post-checkout", hook},
				{"vendor/nested/.git/config", fsmonitor},
				{"vendor/nested/.git/hooks/post-checkout", hook},
				{"lib/.git", "gitdir: " + evilRepo + "\n"},
				{".git/worktrees/wt/commondir", evilRepo + "\n"},
				{".git/worktrees/wt/config.worktree", fsmonitor},
				{".git/config.worktree", fsmonitor},
			}
			var calls []string
			if how == "Bash" {
				var cmds []string
				for _, a := range attacks {
					cmds = append(cmds, "printf %s "+shellQuote(a.content)+" > "+a.path+"; chmod +x "+a.path)
				}
				cmds = append(cmds, "git -C lib config core.fsmonitor "+shellQuote("id > "+marker+"; false"))
				calls = append(calls, bashCalls(cmds...))
			} else {
				for i, a := range attacks {
					calls = append(calls, writeCall(fmt.Sprintf("w%d", i), a.path, a.content))
				}
			}
			stdout, _ := runAs(t, cfgDir, "run", "--script", writeScript(t, append(calls, `{"text": "done"}`)...), "-w", ws, "--json", "--permission-mode", "bypass", "attack")
			evs := parseEvents(t, stdout)
			for i := range attacks {
				id := fmt.Sprintf("c%d", i)
				if how == "Write" {
					id = fmt.Sprintf("w%d", i)
				}
				if ev := toolEventOf(t, evs, id); ev["is_error"] != true {
					t.Errorf("%s of %s: %v", how, attacks[i].path, ev)
				}
			}
			for rel, was := range protected {
				if b, _ := os.ReadFile(filepath.Join(ws, rel)); string(b) != was {
					t.Errorf("%s is now %q, was %q", rel, b, was)
				}
			}
			for _, p := range []string{".git/modules/lib/hooks/post-checkout", "vendor/nested/.git/hooks/post-checkout"} {
				if fileExists(filepath.Join(ws, p)) {
					t.Errorf("%s was written", p)
				}
			}
			for _, p := range []string{".git/config.worktree", ".git/worktrees/wt/config.worktree"} {
				if b, _ := os.ReadFile(filepath.Join(ws, p)); len(b) > 0 {
					t.Errorf("%s was written: %q", p, b)
				}
			}
			// The user's own git, afterwards.
			gitAs(t, ws, "status")
			gitAs(t, filepath.Join(ws, "lib"), "checkout", "-q", "-B", "other")
			gitAs(t, nested, "status")
			gitAs(t, nested, "checkout", "-q", "-b", "other")
			gitAs(t, wt, "status")
			noMarker(t, marker)
		})
	}
}

// A command can make .git/commondir where there is none, and git would
// then take the repository's configuration from where it says: the file
// tools refuse it (the sandbox cannot keep a missing file from being
// made where git's own lock files must be: see the README).
func TestGitCommondirRefused(t *testing.T) {
	ws := t.TempDir()
	gitAs(t, ws, "init", "-q")
	stdout, _ := runAs(t, t.TempDir(), "run", "--script", writeScript(t, writeCall("w", ".git/commondir", "/tmp/elsewhere\n"), `{"text": "done"}`), "-w", ws, "--json", "--permission-mode", "bypass", "attack")
	if ev := toolEventOf(t, parseEvents(t, stdout), "w"); ev["is_error"] != true || !strings.Contains(ev.str("output"), "protected") {
		t.Errorf("Write of .git/commondir: %v", ev)
	}
	if fileExists(filepath.Join(ws, ".git", "commondir")) {
		t.Error(".git/commondir was written")
	}
}

// A .mcp.json server starts only as the user trusted it: one that the
// agent writes in accept-edits (no commands allowed) does not start in
// the next session, even with every .mcp.json server approved, until the
// user trusts the workspace again.
func TestMCPFileTheAgentWritesDoesNotStart(t *testing.T) {
	requireSandbox(t)
	_, cfgDir := attackHome(t)
	writeFileAt(t, cfgDir, "orca/settings.json", `{"enableAllProjectMcpServers": true}`)
	ws := t.TempDir()
	runAs(t, cfgDir, "trust", ws)
	server := `{"mcpServers": {"helper": {"command": "sh", "args": ["-c", "echo ran > mcp-ran.txt; exec cat"]}}}`
	runAs(t, cfgDir, "run", "--script", writeScript(t, writeCall("w", ".mcp.json", server), `{"text": "done"}`), "-w", ws, "--json", "--permission-mode", "accept-edits", "write it")
	if !fileExists(filepath.Join(ws, ".mcp.json")) {
		t.Fatal("the agent could not write .mcp.json: nothing was tried")
	}
	_, stderr := runAs(t, cfgDir, "run", "--script", writeScript(t, `{"text": "hi"}`), "-w", ws, "--json", "next session")
	if fileExists(filepath.Join(ws, "mcp-ran.txt")) {
		t.Error("the server the agent wrote started")
	}
	if !strings.Contains(stderr, "MCP servers helper not started: new or changed since you trusted the workspace") {
		t.Errorf("stderr does not say why:\n%s", stderr)
	}
	// Trusted as it is now, it starts.
	runAs(t, cfgDir, "trust", ws)
	// (It is no MCP server: started, it fails the handshake.)
	if stdout, stderr, _ := orcaWith(t, t.Context(), options{configDir: cfgDir}, "", "mcp", "list", "-w", ws); !strings.Contains(stdout, "helper") || strings.Contains(stderr, "not started") {
		t.Errorf("after orca trust:\n%s\n%s", stdout, stderr)
	}
	if !fileExists(filepath.Join(ws, "mcp-ran.txt")) {
		t.Error("the server the user trusted did not start")
	}
}

// /dev/shm is the sandbox's own: what a command leaves there is not on
// the host, and no channel between runs.
func TestSandboxHasItsOwnSharedMemory(t *testing.T) {
	requireSandbox(t)
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("no /dev/shm here")
	}
	ws := t.TempDir()
	name := filepath.Join("/dev/shm", "orca-test-"+filepath.Base(ws))
	t.Cleanup(func() { os.Remove(name) })
	stdout, _ := runAs(t, t.TempDir(), "run", "--script", writeScript(t, bashCall("b", "echo x > "+name+" && cat "+name), `{"text": "done"}`), "-w", ws, "--json", "--permission-mode", "bypass", "shm")
	if ev := toolEventOf(t, parseEvents(t, stdout), "b"); ev["is_error"] == true || !strings.Contains(ev.str("output"), "x") {
		t.Errorf("the command could not use /dev/shm: %v", ev)
	}
	if fileExists(name) {
		t.Errorf("%s is on the host", name)
	}
}

// A workspace that is a linked worktree (or a submodule's checkout) has a
// .git file that says where its repository is: commands run there (they
// used to be refused: the sandbox tried to make a hooks folder in the
// file), the file stays what it is, and the repository's own
// configuration is protected where it really is.
func TestCommandsRunInAWorktree(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	os.MkdirAll(repo, 0o755)
	gitAs(t, repo, "init", "-q")
	gitAs(t, repo, "commit", "-q", "--allow-empty", "-m", "x")
	ws := filepath.Join(tmp, "wt")
	gitAs(t, repo, "worktree", "add", "-q", ws)
	dotgit, _ := os.ReadFile(filepath.Join(ws, ".git"))
	config, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
	stdout, _ := runAs(t, t.TempDir(), "run", "--script", writeScript(t,
		bashCalls("git status --short && echo works", "echo 'gitdir: /tmp' > .git", "git config core.fsmonitor 'touch pwned'"), `{"text": "done"}`),
		"-w", ws, "--json", "--permission-mode", "bypass", "go")
	evs := parseEvents(t, stdout)
	if ev := toolEventOf(t, evs, "c0"); ev["is_error"] == true || !strings.Contains(ev.str("output"), "works") {
		t.Errorf("a command in a worktree: %v", ev)
	}
	for _, id := range []string{"c1", "c2"} {
		if ev := toolEventOf(t, evs, id); ev["is_error"] != true {
			t.Errorf("%s ran: %v", id, ev)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git")); string(b) != string(dotgit) {
		t.Errorf(".git is now %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(b) != string(config) {
		t.Errorf("the repository's config is now %q", b)
	}
}

// Sandboxed commands keep their caches (Go's build cache, npm's, XDG's)
// in a folder of the workspace's own under the user's cache folder: they
// may write it, it outlives the run, and another workspace's commands
// have another.
func TestSandboxedCommandsKeepTheirCaches(t *testing.T) {
	requireSandbox(t)
	home, cfgDir := attackHome(t)
	t.Setenv("XDG_CACHE_HOME", "")
	// Workspaces of the user's, not in a temp folder.
	ws, other := filepath.Join(home, "project"), filepath.Join(home, "other")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(other, 0o755)
	probe := `echo "$GOCACHE|$XDG_CACHE_HOME|$npm_config_cache" && mkdir -p "$GOCACHE" && echo built > "$GOCACHE/probe"`
	var caches []string
	for _, w := range []string{ws, other} {
		stdout, _ := runAs(t, cfgDir, "run", "--script", writeScript(t, bashCall("b", probe), `{"text": "done"}`), "-w", w, "--json", "--permission-mode", "bypass", "go")
		ev := toolEventOf(t, parseEvents(t, stdout), "b")
		out := ev.str("output")
		if ev["is_error"] == true || !strings.HasPrefix(out, filepath.Join(home, ".cache", "orca", "sandbox")) {
			t.Fatalf("the command's caches: %v", ev)
		}
		goCache, _, _ := strings.Cut(strings.TrimSpace(out), "|")
		if b, err := os.ReadFile(filepath.Join(goCache, "probe")); string(b) != "built\n" {
			t.Errorf("the cache was not written where it says: %q, %v", b, err)
		}
		caches = append(caches, goCache)
	}
	if caches[0] == caches[1] {
		t.Errorf("two workspaces share a cache: %s", caches[0])
	}
	// The user's own Go build cache is not the commands'.
	if strings.HasPrefix(caches[0], filepath.Join(home, ".cache", "go-build")) {
		t.Errorf("the commands' cache is the user's: %s", caches[0])
	}
	// Workspaces made for one run in a temp folder (orca demo's) share
	// one cache there, warm from the last: none is left in the user's
	// cache for each.
	kept, _ := os.ReadDir(filepath.Join(home, ".cache", "orca", "sandbox"))
	var temps []string
	for range 2 {
		stdout, _ := runAs(t, cfgDir, "run", "--script", writeScript(t, bashCall("b", probe), `{"text": "done"}`), "-w", t.TempDir(), "--json", "--permission-mode", "bypass", "go")
		ev := toolEventOf(t, parseEvents(t, stdout), "b")
		goCache, _, _ := strings.Cut(strings.TrimSpace(ev.str("output")), "|")
		if ev["is_error"] == true || !strings.HasPrefix(goCache, filepath.Join(os.TempDir(), "orca-sandbox-cache-")) {
			t.Fatalf("a temp workspace's caches: %v", ev)
		}
		temps = append(temps, goCache)
	}
	if temps[0] != temps[1] {
		t.Errorf("temp workspaces have caches of their own: %v", temps)
	}
	if now, _ := os.ReadDir(filepath.Join(home, ".cache", "orca", "sandbox")); len(now) != len(kept) {
		t.Errorf("temp workspaces left caches in the user's: %d folders, was %d", len(now), len(kept))
	}
}
