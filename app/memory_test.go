package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
)

// capture is a model that answers "done" and keeps the requests it got.
type capture struct {
	mu   sync.Mutex
	reqs []*llm.Request
}

func (c *capture) Generate(_ context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn}, nil
}

func (c *capture) system(t *testing.T) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) == 0 {
		t.Fatal("the model was not called")
	}
	return c.reqs[len(c.reqs)-1].System
}

func runOnce(t *testing.T, cfg app.Config) (*capture, *app.App) {
	t.Helper()
	c := &capture{}
	cfg.Client = c
	return c, runTurn(t, cfg)
}

// runTurn opens the App of cfg (closed when the test ends) and runs one
// turn of a new session in it.
func runTurn(t *testing.T, cfg app.Config) *app.App {
	t.Helper()
	a, err := app.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	s, err := a.Session(t.Context(), app.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	return a
}

// The memory files reach the model with the system prompt, each named,
// in order, their imports in place; Claude Code's are left out with
// NoClaude.
func TestMemoryFilesReachTheModel(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "src", "project")
	claude, cfgDir := filepath.Join(home, ".claude"), filepath.Join(home, ".config")
	write(t, claude, "CLAUDE.md", "USER-CLAUDE: answer in English.")
	write(t, cfgDir, "orca/ORCA.md", "USER-ORCA: be brief.")
	write(t, home, "src/AGENTS.md", "ABOVE: the monorepo's rules.")
	write(t, ws, "AGENTS.md", "PROJECT-AGENTS: run go test.")
	write(t, ws, "CLAUDE.md", "@AGENTS.md\nPROJECT-CLAUDE: see @docs/style.md for style.\n```\n@docs/style.md\n```")
	write(t, ws, "docs/style.md", "STYLE: gofmt.")
	write(t, ws, ".claude/CLAUDE.md", "DOT-CLAUDE.")
	write(t, ws, ".orca/ORCA.md", "PROJECT-ORCA.")
	write(t, ws, "CLAUDE.local.md", "LOCAL: my sandbox URL.")

	c, a := runOnce(t, app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude, SystemPrompt: "BASE"})
	sys := c.system(t)
	order := []string{"BASE", "# Environment", "Working folder: " + a.Root(), "USER-CLAUDE", "USER-ORCA", "ABOVE", "PROJECT-AGENTS",
		`<memory file="CLAUDE.md"`, "PROJECT-CLAUDE: see @docs/style.md for style.\nSTYLE: gofmt.", "DOT-CLAUDE", "PROJECT-ORCA", "LOCAL"}
	at := 0
	for _, want := range order {
		i := strings.Index(sys[at:], want)
		if i < 0 {
			t.Fatalf("the system prompt lacks %q after offset %d:\n%s", want, at, sys)
		}
		at += i + len(want)
	}
	// The whole-line import replaced its line; the fenced one stayed text.
	if strings.Count(sys, "PROJECT-AGENTS") != 2 || !strings.Contains(sys, "```\n@docs/style.md\n```") {
		t.Errorf("imports:\n%s", sys)
	}
	want := []string{filepath.Join(claude, "CLAUDE.md"), filepath.Join(cfgDir, "orca", "ORCA.md"), filepath.Join(home, "src", "AGENTS.md"),
		"AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md", ".orca/ORCA.md", "CLAUDE.local.md"}
	if got := a.MemoryFiles(); !slices.Equal(got, want) {
		t.Errorf("MemoryFiles:\n%q\nwant\n%q", got, want)
	}

	c, a = runOnce(t, app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude, NoClaude: true, SystemPrompt: "BASE"})
	sys = c.system(t)
	if got := a.MemoryFiles(); slices.Contains(got, "CLAUDE.md") || !slices.Contains(got, "AGENTS.md") {
		t.Errorf("NoClaude: MemoryFiles %q", got)
	}
	for _, gone := range []string{"USER-CLAUDE", "PROJECT-CLAUDE", "DOT-CLAUDE", "LOCAL"} {
		if strings.Contains(sys, gone) {
			t.Errorf("NoClaude: %s was sent", gone)
		}
	}
	if !strings.Contains(sys, "PROJECT-AGENTS") || !strings.Contains(sys, "PROJECT-ORCA") {
		t.Errorf("NoClaude dropped orca's own memory:\n%s", sys)
	}

	c, _ = runOnce(t, app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: claude, NoMemory: true, NoEnvironment: true, SystemPrompt: "BASE"})
	if sys := c.system(t); sys != "BASE" {
		t.Errorf("NoMemory, NoEnvironment: system %q", sys)
	}
}

// A cloned repository's memory file cannot import the user's other files:
// the import is refused with a warning, and the file is not sent.
func TestMemoryImportsStayInTheWorkspace(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	secret := write(t, home, ".ssh/id_rsa", "PRIVATE KEY")
	write(t, ws, "CLAUDE.md", "@../.ssh/id_rsa\n@"+secret+"\n@~/.ssh/id_rsa")
	if err := os.Symlink(secret, filepath.Join(ws, "key")); err != nil {
		t.Fatal(err)
	}
	write(t, ws, "AGENTS.md", "@key")
	c, a := runOnce(t, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", SystemPrompt: "BASE"})
	if sys := c.system(t); strings.Contains(sys, "PRIVATE KEY") {
		t.Fatalf("a project memory file sent a file outside the workspace:\n%s", sys)
	}
	var refused int
	for _, w := range a.Warnings() {
		if strings.Contains(w.Message, "may import only files in "+a.Root()) {
			refused++
		}
	}
	if refused < 3 {
		t.Errorf("%d imports refused with a warning, want at least 3: %v", refused, a.Warnings())
	}
}

// The environment says whether the workspace is a git repository.
func TestEnvironmentSaysGit(t *testing.T) {
	ws := t.TempDir()
	c, _ := runOnce(t, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", NoMemory: true})
	if sys := c.system(t); !strings.Contains(sys, "Is a git repository: no") || !strings.Contains(sys, "Today's date: ") {
		t.Errorf("system:\n%s", sys)
	}
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, _ = runOnce(t, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", NoMemory: true})
	if sys := c.system(t); !strings.Contains(sys, "Is a git repository: yes") {
		t.Errorf("system:\n%s", sys)
	}
}

// A subfolder's CLAUDE.md and AGENTS.md reach the model with the first
// call that works there, once, as Claude Code loads a subtree's
// CLAUDE.md; the root's are not repeated; NoClaude leaves CLAUDE.md out.
func TestNestedMemoryLoadsWhenTheAgentWorksThere(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "CLAUDE.md", "ROOT-RULES")
	write(t, ws, "web/CLAUDE.md", "WEB-RULES: use pnpm.")
	write(t, ws, "web/app/AGENTS.md", "APP-RULES: no default exports.")
	write(t, ws, "web/app/page.tsx", "export const x = 1\n")
	write(t, ws, "api/main.go", "package main\n")
	for _, noClaude := range []bool{false, true} {
		t.Run(fmt.Sprint("NoClaude=", noClaude), func(t *testing.T) {
			model := script.New().ScriptAny(
				script.Call("Read", map[string]string{"file_path": "web/app/page.tsx"}),
				script.Call("Read", map[string]string{"file_path": "web/app/page.tsx"}),
				script.Call("Read", map[string]string{"file_path": "api/main.go"}),
				script.Text("done"))
			runTurn(t, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: model, NoClaude: noClaude, Trust: true})
			calls := model.Calls()
			first, second, third := calls[1].Observations()[0].Content, calls[2].Observations()[0].Content, calls[3].Observations()[0].Content
			if strings.Contains(first, "WEB-RULES") == noClaude || !strings.Contains(first, "APP-RULES") || strings.Contains(first, "ROOT-RULES") {
				t.Errorf("NoClaude %v: first read of web/app:\n%s", noClaude, first)
			}
			if strings.Contains(second, "RULES") || strings.Contains(third, "RULES") {
				t.Errorf("NoClaude %v: memory repeated or from elsewhere:\n%s\n%s", noClaude, second, third)
			}
		})
	}
}

// Claude Code's .claude/rules: a rules file without "paths" is in the
// system prompt, named by its path; one with "paths" reaches the model
// with the first call that reads or writes a path it matches, once, and
// never otherwise; NoClaude leaves them all out; a bad "paths" is a
// warning.
func TestClaudeRules(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, ".claude/rules/style.md", "STYLE-RULE: tabs.\n")
	write(t, ws, ".claude/rules/api/typescript.md", "---\npaths:\n  - \"src/api/**/*.ts\"\n---\nAPI-RULE: validate every input.\n")
	write(t, ws, ".claude/rules/go.md", "---\npaths: \"**/*.go\"\n---\nGO-RULE: wrap errors.\n")
	write(t, ws, ".claude/rules/broken.md", "---\npaths: {a: 1}\n---\nBROKEN-RULE\n")
	write(t, ws, "src/api/users.ts", "export {}\n")
	write(t, ws, "docs/a.md", "docs\n")
	for _, noClaude := range []bool{false, true} {
		t.Run(fmt.Sprint("NoClaude=", noClaude), func(t *testing.T) {
			model := script.New().ScriptAny(
				script.Call("Read", map[string]string{"file_path": "docs/a.md"}),
				script.Call("Read", map[string]string{"file_path": "src/api/users.ts"}),
				script.Call("Read", map[string]string{"file_path": "src/api/users.ts"}),
				script.Call("Write", map[string]string{"file_path": "cmd/main.go", "content": "package main\n"}),
				script.Text("done"))
			a := runTurn(t, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: model, NoClaude: noClaude, Trust: true, Mode: policy.ModeBypass})
			calls := model.Calls()
			sys := calls[0].System
			if strings.Contains(sys, "STYLE-RULE") == noClaude || !noClaude && !strings.Contains(sys, ".claude/rules/style.md") {
				t.Errorf("NoClaude %v: system prompt:\n%s", noClaude, sys)
			}
			if strings.Contains(sys, "API-RULE") || strings.Contains(sys, "GO-RULE") || strings.Contains(sys, "BROKEN-RULE") {
				t.Errorf("NoClaude %v: a path rule is in the system prompt:\n%s", noClaude, sys)
			}
			docs, api, again, gofile := calls[1].Observations()[0].Content, calls[2].Observations()[0].Content, calls[3].Observations()[0].Content, calls[4].Observations()[0].Content
			if strings.Contains(docs, "RULE") || strings.Contains(again, "RULE") {
				t.Errorf("NoClaude %v: a rule where none applies, or twice:\n%s\n%s", noClaude, docs, again)
			}
			if strings.Contains(api, "API-RULE") == noClaude || strings.Contains(api, "GO-RULE") {
				t.Errorf("NoClaude %v: reading src/api/users.ts:\n%s", noClaude, api)
			}
			if strings.Contains(gofile, "GO-RULE") == noClaude {
				t.Errorf("NoClaude %v: writing cmd/main.go:\n%s", noClaude, gofile)
			}
			var warned bool
			for _, w := range a.Warnings() {
				warned = warned || strings.Contains(w.File, "broken.md") && strings.Contains(w.Message, "paths")
			}
			if warned == noClaude {
				t.Errorf("NoClaude %v: warnings %v", noClaude, a.Warnings())
			}
		})
	}
}

// A project's memory or rules file that is a link leading out of the
// workspace is not read (a cloned repository's CLAUDE.md -> ~/.ssh key
// would send it to the model); one leading inside it is, and the user is
// told which were not.
func TestMemoryLinksOutOfTheWorkspaceAreNotRead(t *testing.T) {
	outside, ws := t.TempDir(), t.TempDir()
	write(t, outside, "id_rsa", "PRIVATE-KEY")
	write(t, ws, "docs/shared.md", "SHARED-RULE")
	for link, target := range map[string]string{
		"CLAUDE.md":               filepath.Join(outside, "id_rsa"),
		".claude/rules/key.md":    filepath.Join(outside, "id_rsa"),
		".claude/rules/shared.md": filepath.Join(ws, "docs", "shared.md"),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	c, a := runOnce(t, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Trust: true})
	sys := c.system(t)
	if strings.Contains(sys, "PRIVATE-KEY") || !strings.Contains(sys, "SHARED-RULE") {
		t.Errorf("system prompt:\n%s", sys)
	}
	var refused []string
	for _, w := range a.Warnings() {
		if strings.Contains(w.Message, "a link that leads out of") {
			refused = append(refused, filepath.Base(w.File))
		}
	}
	slices.Sort(refused)
	if !slices.Equal(refused, []string{"CLAUDE.md", "key.md"}) {
		t.Errorf("warned about %q, want CLAUDE.md and key.md", refused)
	}
}
