package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/workspace"
)

func openWorkspace(t *testing.T) *workspace.Local {
	t.Helper()
	ws, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func input(t testing.TB, kv ...string) json.RawMessage {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustNew(t testing.TB, mode Mode, allow, deny, ask []string, opts ...Option) *Policy {
	t.Helper()
	rules, err := ParseRules(allow, deny, ask)
	if err != nil {
		t.Fatal(err)
	}
	_, _, base := testOptions(t)
	p, err := New(mode, rules, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// call describes one tool call of a table: tool and input key/value pairs.
type tcall struct {
	tool     string
	kv       []string
	readOnly bool
}

func (c tcall) String() string { return c.tool + strings.Join(c.kv, " ") }

func TestModes(t *testing.T) {
	ws := openWorkspace(t)
	outside := filepath.Join(filepath.Dir(ws.Root()), "elsewhere.txt")
	calls := []tcall{
		{tool: "Read", kv: []string{"file_path", "src/a.go"}},
		{tool: "Glob", kv: []string{"pattern", "**/*.go"}},
		{tool: "Grep", kv: []string{"pattern", "x", "path", "src"}},
		{tool: "TodoWrite"},
		{tool: "Search", readOnly: true},
		{tool: "Write", kv: []string{"file_path", "src/a.go"}},
		{tool: "Edit", kv: []string{"file_path", filepath.Join(ws.Root(), "src", "a.go")}},
		{tool: "Edit", kv: []string{"file_path", outside}},
		{tool: "Bash", kv: []string{"command", "ls"}},
		{tool: "Deploy"},
	}
	want := map[Mode][]Decision{
		ModeDefault:     {Allow, Allow, Allow, Allow, Allow, Ask, Ask, Ask, Ask, Ask},
		ModeAcceptEdits: {Allow, Allow, Allow, Allow, Allow, Allow, Allow, Ask, Ask, Ask},
		ModePlan:        {Allow, Allow, Allow, Allow, Allow, Deny, Deny, Deny, Deny, Deny},
		ModeBypass:      {Allow, Allow, Allow, Allow, Allow, Allow, Allow, Allow, Allow, Allow},
	}
	for mode, decisions := range want {
		p := mustNew(t, mode, nil, nil, nil)
		for i, c := range calls {
			v := p.Decide(declared(Request{ToolName: c.tool, Input: input(t, c.kv...), FS: ws, Traits: tool.Traits{ReadOnly: c.readOnly}}))
			if v.Decision != decisions[i] {
				t.Errorf("mode %s: %s = %s, want %s (%s)", mode, c, v.Decision, decisions[i], v.Reason)
			}
			if v.Rule != "mode:"+string(mode) {
				t.Errorf("mode %s: %s decided by %q, want the mode", mode, c, v.Rule)
			}
			if !strings.Contains(v.Reason, c.tool) || !strings.Contains(v.Reason, string(mode)) {
				t.Errorf("mode %s: %s: reason %q does not name the tool and mode", mode, c, v.Reason)
			}
		}
	}
}

func TestReadOnlyFlagOnlyCountsForUnknownTools(t *testing.T) {
	p := mustNew(t, ModeDefault, nil, nil, nil)
	if v := p.Decide(declared(Request{ToolName: "Write", Input: input(t, "file_path", "a"), Traits: tool.Traits{ReadOnly: true}})); v.Decision != Ask {
		t.Errorf("Write declared read-only = %s, want ask", v.Decision)
	}
	if v := p.Decide(declared(Request{ToolName: "Deploy"})); v.Decision != Ask || v.Suggest != "Deploy" {
		t.Errorf("Deploy = %s suggest %q, want ask suggesting Deploy", v.Decision, v.Suggest)
	}
}

func TestPlanModeReason(t *testing.T) {
	p := mustNew(t, ModePlan, []string{"Edit"}, nil, nil)
	v := p.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", "a.go")}))
	want := `Edit of "a.go" is denied: permission mode plan is read-only`
	if v.Decision != Deny || !strings.Contains(v.Reason, want) || v.Rule != "mode:plan" {
		t.Errorf("plan Edit = %+v, want deny with %q", v, want)
	}
}

func TestFileRules(t *testing.T) {
	ws := openWorkspace(t)
	root := ws.Root()
	cases := []struct {
		name             string
		mode             Mode
		allow, deny, ask []string
		call             tcall
		nilFS            bool
		want             Decision
		rule, suggest    string
	}{
		{name: "edit asks and suggests its folder", call: tcall{tool: "Edit", kv: []string{"file_path", "src/pkg/a.go"}}, want: Ask, suggest: "Edit(src/pkg/**)"},
		{name: "write suggests an Edit rule", call: tcall{tool: "Write", kv: []string{"file_path", "docs/a.md"}}, want: Ask, suggest: "Edit(docs/**)"},
		{name: "edit of a root file suggests the file", call: tcall{tool: "Edit", kv: []string{"file_path", "main.go"}}, want: Ask, suggest: "Edit(main.go)"},
		{name: "outside: no suggestion", call: tcall{tool: "Edit", kv: []string{"file_path", "../x.go"}}, want: Ask, suggest: "-"},
		{name: "edit rule", allow: []string{"Edit(src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "src/a/b.go"}}, want: Allow, rule: "Edit(src/**)"},
		{name: "edit rule, absolute input", allow: []string{"Edit(src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", filepath.Join(root, "src", "b.go")}}, want: Allow},
		{name: "edit rule, dot-dot input", allow: []string{"Edit(src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "docs/../src/b.go"}}, want: Allow},
		{name: "edit rule, dot-slash pattern", allow: []string{"Edit(./src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "src/b.go"}}, want: Allow},
		{name: "edit rule, other folder", allow: []string{"Edit(src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "srcx/b.go"}}, want: Ask},
		{name: "edit rule covers write", allow: []string{"Edit(src/**)"}, call: tcall{tool: "Write", kv: []string{"file_path", "src/new.go"}}, want: Allow},
		{name: "write rule does not cover edit", allow: []string{"Write(src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "src/a.go"}}, want: Ask},
		{name: "write glob", allow: []string{"Write(docs/*.md)"}, call: tcall{tool: "Write", kv: []string{"file_path", "docs/a.md"}}, want: Allow},
		{name: "write glob, subfolder", allow: []string{"Write(docs/*.md)"}, call: tcall{tool: "Write", kv: []string{"file_path", "docs/sub/a.md"}}, want: Ask},
		{name: "allow rule never matches outside", allow: []string{"Edit(**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "../other/a.go"}}, want: Ask},
		{name: "allow rule never matches outside, absolute", allow: []string{"Edit(**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "/etc/passwd"}}, want: Ask},
		{name: "absolute pattern", allow: []string{"Edit(/tmp/scratch/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "/tmp/scratch/a"}}, want: Allow},
		{name: "tool-wide rule", allow: []string{"Edit"}, call: tcall{tool: "Edit", kv: []string{"file_path", "../a"}}, want: Allow},
		{name: "star rule", allow: []string{"Write(*)"}, call: tcall{tool: "Write", kv: []string{"file_path", "a/b/c"}}, want: Allow},
		{name: "read deny", deny: []string{"Read(secrets/**)"}, call: tcall{tool: "Read", kv: []string{"file_path", "secrets/key"}}, want: Deny, rule: "Read(secrets/**)"},
		{name: "read deny, absolute input", deny: []string{"Read(secrets/**)"}, call: tcall{tool: "Read", kv: []string{"file_path", filepath.Join(root, "secrets", "key")}}, want: Deny},
		{name: "read deny, sneaky input", deny: []string{"Read(secrets/**)"}, call: tcall{tool: "Read", kv: []string{"file_path", "./src/../secrets//key"}}, want: Deny},
		{name: "read deny covers grep", deny: []string{"Read(secrets/**)"}, call: tcall{tool: "Grep", kv: []string{"pattern", "x", "path", "secrets"}}, want: Deny},
		{name: "read deny covers glob", deny: []string{"Read(secrets/**)"}, call: tcall{tool: "Glob", kv: []string{"pattern", "*", "path", "secrets/a"}}, want: Deny},
		{name: "read deny, other file", deny: []string{"Read(secrets/**)"}, call: tcall{tool: "Read", kv: []string{"file_path", "src/a"}}, want: Allow},
		{name: "read deny in bypass", mode: ModeBypass, deny: []string{"Read(.env)"}, call: tcall{tool: "Read", kv: []string{"file_path", ".env"}}, want: Deny},
		{name: "grep rule on the default path", deny: []string{"Grep(.)"}, call: tcall{tool: "Grep", kv: []string{"pattern", "x"}}, want: Deny},
		{name: "glob rule", ask: []string{"Glob(vendor/**)"}, call: tcall{tool: "Glob", kv: []string{"pattern", "*.go", "path", "vendor/x"}}, want: Ask, rule: "Glob(vendor/**)"},
		{name: "ask beats accept-edits", mode: ModeAcceptEdits, ask: []string{"Edit(go.mod)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "go.mod"}}, want: Ask, rule: "Edit(go.mod)"},
		{name: "ask beats allow", allow: []string{"Edit"}, ask: []string{"Edit(go.mod)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "go.mod"}}, want: Ask},
		{name: "deny beats ask and allow", allow: []string{"Edit"}, ask: []string{"Edit(go.mod)"}, deny: []string{"Edit(go.*)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "go.mod"}}, want: Deny, rule: "Edit(go.*)"},
		{name: "deny beats bypass", mode: ModeBypass, deny: []string{"Edit(go.*)"}, call: tcall{tool: "Write", kv: []string{"file_path", "go.sum"}}, want: Deny},
		{name: "accept-edits inside", mode: ModeAcceptEdits, call: tcall{tool: "Write", kv: []string{"file_path", "new/file.txt"}}, want: Allow, rule: "mode:accept-edits"},
		{name: "accept-edits outside", mode: ModeAcceptEdits, call: tcall{tool: "Write", kv: []string{"file_path", "/etc/x"}}, want: Ask},
		{name: "nil FS: relative path compared as given", nilFS: true, allow: []string{"Edit(src/**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "src/../src/a.go"}}, want: Allow},
		{name: "nil FS: dot-dot is outside", nilFS: true, allow: []string{"Edit(**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", "../a.go"}}, want: Ask},
		{name: "nil FS: absolute is outside", nilFS: true, mode: ModeAcceptEdits, call: tcall{tool: "Edit", kv: []string{"file_path", "/a.go"}}, want: Ask},
		{name: "nil FS: accept-edits relative", nilFS: true, mode: ModeAcceptEdits, call: tcall{tool: "Edit", kv: []string{"file_path", "a.go"}}, want: Allow},
		{name: "empty path is outside", allow: []string{"Edit(**)"}, call: tcall{tool: "Edit", kv: []string{"file_path", ""}}, want: Ask},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustNew(t, c.mode, c.allow, c.deny, c.ask)
			req := declared(Request{ToolName: c.call.tool, Input: input(t, c.call.kv...), FS: ws})
			if c.nilFS {
				req.FS = nil
			}
			v := p.Decide(req)
			if v.Decision != c.want {
				t.Fatalf("%s = %s, want %s (%s)", c.call, v.Decision, c.want, v.Reason)
			}
			if c.rule != "" && v.Rule != c.rule {
				t.Errorf("rule = %q, want %q", v.Rule, c.rule)
			}
			want := strings.TrimPrefix(c.suggest, "-") // "-": no suggestion
			if c.suggest != "" && v.Suggest != want {
				t.Errorf("suggest = %q, want %q", v.Suggest, want)
			}
		})
	}
}

func TestFileSuggestionsAllow(t *testing.T) {
	ws := openWorkspace(t)
	base := mustNew(t, ModeDefault, nil, nil, nil)
	for _, f := range []string{"main.go", "src/a.go", "a/b/c/d.txt", "weird[1]/x*.go", "{x}.md"} {
		for _, tool := range []string{"Edit", "Write"} {
			req := declared(Request{ToolName: tool, Input: input(t, "file_path", f), FS: ws})
			v := base.Decide(req)
			r, err := ParseRule(v.Suggest)
			if err != nil {
				t.Fatalf("%s %s: suggestion %q: %v", tool, f, v.Suggest, err)
			}
			p, err := base.With(Rules{Allow: []Rule{r}})
			if err != nil {
				t.Fatal(err)
			}
			if v2 := p.Decide(req); v2.Decision != Allow {
				t.Errorf("%s %s with %s = %s, want allow", tool, f, v.Suggest, v2.Decision)
			}
		}
	}
}

func TestProtected(t *testing.T) {
	for rel, want := range map[string]bool{
		".orca/hooks/pre.sh":            true,
		".orca/hooks":                   true,
		".orca/hooks/a/b/c":             true,
		".orca/settings.json":           true,
		".orca/settings.local.json":     true,
		".orca/settings.team.json":      true,
		".orca/trust":                   true,
		".orca/trust.json":              true,
		".orca/trusted/x":               true,
		"./.orca/settings.json":         true,
		".orca//hooks/x":                true,
		"src/../.orca/hooks/x":          true,
		".ORCA/Settings.JSON":           true,
		".orca/skills/pdf/SKILL.md":     true,
		".orca/notes/todo.md":           true, // all of .orca: the session store, subagents, timelines too
		".orca/settings.yaml":           true,
		".orca":                         true,
		".orca/agents/x.md":             true,
		".orca/orca.db":                 true,
		".orca/orca.db-wal":             true,
		".git/config":                   true,
		".GIT/CONFIG":                   true,
		".git/hooks":                    true,
		".git/hooks/pre-commit":         true,
		".git/HEAD":                     false,
		".git/objects/ab/cdef":          false,
		".git/configx":                  false,
		"orca/settings.json":            false,
		"sub/.orca/settings.json":       false,
		".orcax/settings.json":          false,
		"settings.json":                 false,
		"docs/.orca/hooks/example.sh":   false,
		".orca/settings.json/../x.json": true,
		".orca/../x.json":               false,
	} {
		if got := Protected(rel); got != want {
			t.Errorf("Protected(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestProtectionDeniesWriteAndEdit(t *testing.T) {
	ws := openWorkspace(t)
	// Whatever the rules and mode say.
	p := mustNew(t, ModeBypass, []string{"Edit", "Write", "Edit(.orca/**)"}, nil, nil)
	for _, f := range []string{
		".orca/settings.json",
		".orca/settings.local.json",
		".orca/hooks/pre-tool-use.sh",
		".orca/trust.json",
		filepath.Join(ws.Root(), ".orca", "hooks", "x"),
		"src/../.orca/settings.json",
		".ORCA/SETTINGS.JSON",
		".orca/orca.db",
		".orca/notes/x.md",
		".git/config",
		".git/hooks/pre-commit",
	} {
		for _, tool := range []string{"Write", "Edit"} {
			v := p.Decide(declared(Request{ToolName: tool, Input: input(t, "file_path", f), FS: ws}))
			if v.Decision != Deny || v.Rule != "protected" {
				t.Errorf("%s %s = %s by %q, want deny by protection", tool, f, v.Decision, v.Rule)
			}
			if !strings.Contains(v.Reason, "protected") || !strings.Contains(v.Reason, "may not change orca's own state") {
				t.Errorf("%s %s: reason %q does not say why", tool, f, v.Reason)
			}
		}
	}
	// Reading them is fine.
	for _, c := range []tcall{
		{tool: "Read", kv: []string{"file_path", ".orca/settings.json"}},
		{tool: "Grep", kv: []string{"pattern", "x", "path", ".orca/hooks"}},
	} {
		if v := p.Decide(declared(Request{ToolName: c.tool, Input: input(t, c.kv...), FS: ws})); v.Decision != Allow {
			t.Errorf("%s = %s, want allow (%s)", c, v.Decision, v.Reason)
		}
	}
	// Without a workspace, the path is judged as given.
	for _, f := range []string{".orca/settings.json", "/some/ws/.orca/hooks/x"} {
		if v := p.Decide(declared(Request{ToolName: "Write", Input: input(t, "file_path", f)})); v.Decision != Deny {
			t.Errorf("Write %s without FS = %s, want deny", f, v.Decision)
		}
	}
}

func TestProtectionFollowsSymlinks(t *testing.T) {
	ws := openWorkspace(t)
	root := ws.Root()
	if err := os.MkdirAll(filepath.Join(root, ".orca", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".orca", "settings.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		"cfg":           ".orca",
		"hooks":         filepath.Join(".orca", "hooks"),
		"settings.json": filepath.Join(".orca", "settings.json"),
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	p := mustNew(t, ModeBypass, nil, nil, nil)
	for _, f := range []string{"cfg/settings.json", "cfg/hooks/new.sh", "hooks/new.sh", "settings.json", "cfg/trust", "cfg/notes.md"} {
		v := p.Decide(declared(Request{ToolName: "Write", Input: input(t, "file_path", f), FS: ws}))
		if v.Decision != Deny || v.Rule != "protected" {
			t.Errorf("Write %s = %s (%s), want deny by protection", f, v.Decision, v.Reason)
		}
	}
	if v := p.Decide(declared(Request{ToolName: "Write", Input: input(t, "file_path", "notes.md"), FS: ws})); v.Decision != Allow {
		t.Errorf("Write notes.md = %s, want allow", v.Decision)
	}
}

func TestProtectionUserConfigDir(t *testing.T) {
	_, cfg, _ := testOptions(t)
	if err := os.MkdirAll(filepath.Join(cfg, "orca"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, ModeBypass, []string{"Edit"}, nil, nil, WithUserConfigDir(cfg))
	for _, f := range []string{
		filepath.Join(cfg, "orca", "settings.json"),
		filepath.Join(cfg, "orca", "new", "hooks", "x"),
		filepath.Join(cfg, "orca"),
		filepath.Join(cfg, "x", "..", "orca", "y"),
	} {
		v := p.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", f)}))
		if v.Decision != Deny || v.Rule != "config-dir" || !strings.Contains(v.Reason, filepath.Join(cfg, "orca")) {
			t.Errorf("Edit %s = %s by %q (%s), want deny naming the folder", f, v.Decision, v.Rule, v.Reason)
		}
	}
	// A symlink that leads into the folder.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(cfg, "orca"), link); err == nil {
		if v := p.Decide(declared(Request{ToolName: "Write", Input: input(t, "file_path", filepath.Join(link, "s.json"))})); v.Decision != Deny {
			t.Errorf("Write through symlink = %s, want deny", v.Decision)
		}
	}
	for _, f := range []string{filepath.Join(cfg, "orcax", "a"), filepath.Join(cfg, "other", "orca")} {
		if v := p.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", f)})); v.Decision != Allow {
			t.Errorf("Edit %s = %s (%s), want allow", f, v.Decision, v.Reason)
		}
	}
	// Turned off.
	off := mustNew(t, ModeBypass, nil, nil, nil, WithUserConfigDir(""))
	if v := off.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", filepath.Join(cfg, "orca", "x"))})); v.Decision != Allow {
		t.Errorf("with the check off: %s, want allow", v.Decision)
	}
}

func TestOtherTools(t *testing.T) {
	for _, c := range []struct {
		name             string
		allow, deny, ask []string
		call             tcall
		want             Decision
		suggest          string
	}{
		{name: "domain", allow: []string{"WebFetch(domain:example.com)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://Example.com/a?b"}}, want: Allow},
		{name: "domain, port", allow: []string{"WebFetch(domain:example.com)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "http://example.com:8080/"}}, want: Allow},
		{name: "domain, subdomain", allow: []string{"WebFetch(domain:example.com)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://api.example.com/"}}, want: Ask, suggest: "WebFetch(domain:api.example.com)"},
		{name: "domain, lookalike", allow: []string{"WebFetch(domain:example.com)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://example.com.evil.net/"}}, want: Ask},
		{name: "domain, userinfo trick", allow: []string{"WebFetch(domain:example.com)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://example.com@evil.net/"}}, want: Ask},
		{name: "wildcard domain", allow: []string{"WebFetch(domain:*.example.com)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://a.b.example.com/"}}, want: Allow},
		{name: "domain deny", allow: []string{"WebFetch"}, deny: []string{"WebFetch(domain:evil.net)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://evil.net/"}}, want: Deny},
		{name: "other form is exact", allow: []string{"WebFetch(https://example.com/a)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://example.com/a"}}, want: Allow},
		{name: "other form is exact, mismatch", allow: []string{"WebFetch(https://example.com/a)"}, call: tcall{tool: "WebFetch", kv: []string{"url", "https://example.com/ab"}}, want: Ask},
		{name: "skill exact", allow: []string{"Skill(pdf)"}, call: tcall{tool: "Skill", kv: []string{"skill", "pdf"}}, want: Allow},
		{name: "skill exact, other", allow: []string{"Skill(pdf)"}, call: tcall{tool: "Skill", kv: []string{"skill", "docx"}}, want: Ask, suggest: "Skill"},
		{name: "skill deny", deny: []string{"Skill(deploy)"}, allow: []string{"Skill"}, call: tcall{tool: "Skill", kv: []string{"skill", "deploy"}}, want: Deny},
		{name: "mcp server rule", allow: []string{"mcp__github"}, call: tcall{tool: "mcp__github__create_issue"}, want: Allow},
		{name: "mcp server rule, other server", allow: []string{"mcp__github"}, call: tcall{tool: "mcp__githubx__create_issue"}, want: Ask},
		{name: "mcp tool rule", deny: []string{"mcp__github__delete_repo"}, allow: []string{"mcp__github"}, call: tcall{tool: "mcp__github__delete_repo"}, want: Deny},
		// Claude Code's wildcards in an MCP rule's tool name (claude-flow's
		// settings allow mcp__claude-flow__*).
		{name: "mcp wildcard rule", allow: []string{"mcp__claude-flow__*"}, call: tcall{tool: "mcp__claude-flow__swarm_init"}, want: Allow},
		{name: "mcp wildcard rule, other server", allow: []string{"mcp__claude-flow__*"}, call: tcall{tool: "mcp__claude-flowx__swarm_init"}, want: Ask},
		{name: "mcp prefix wildcard", deny: []string{"mcp__github__delete_*"}, allow: []string{"mcp__github"}, call: tcall{tool: "mcp__github__delete_repo"}, want: Deny},
		{name: "mcp prefix wildcard, other tool", deny: []string{"mcp__github__delete_*"}, allow: []string{"mcp__github"}, call: tcall{tool: "mcp__github__create_issue"}, want: Allow},
		{name: "tool names are exact", allow: []string{"bash"}, call: tcall{tool: "Bash", kv: []string{"command", "ls"}}, want: Ask},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustNew(t, ModeDefault, c.allow, c.deny, c.ask)
			v := p.Decide(declared(Request{ToolName: c.call.tool, Input: input(t, c.call.kv...)}))
			if v.Decision != c.want {
				t.Fatalf("%s = %s, want %s (%s)", c.call, v.Decision, c.want, v.Reason)
			}
			if c.suggest != "" && v.Suggest != c.suggest {
				t.Errorf("suggest = %q, want %q", v.Suggest, c.suggest)
			}
		})
	}
}

func TestParseRule(t *testing.T) {
	for _, c := range []struct {
		in            string
		tool, pattern string
		err           bool
	}{
		{in: "Bash", tool: "Bash"},
		{in: "Read(*)", tool: "Read", pattern: "*"},
		{in: "Bash(git status:*)", tool: "Bash", pattern: "git status:*"},
		{in: " Edit( src/** ) ", tool: "Edit", pattern: "src/**"},
		{in: "Write(docs/*.md)", tool: "Write", pattern: "docs/*.md"},
		{in: "WebFetch(domain:example.com)", tool: "WebFetch", pattern: "domain:example.com"},
		{in: "Bash(echo (a))", tool: "Bash", pattern: "echo (a)"},
		{in: "mcp__github__create_issue", tool: "mcp__github__create_issue"},
		{in: "Custom(anything at all)", tool: "Custom", pattern: "anything at all"},
		{in: "", err: true},
		{in: "Bash()", err: true},
		{in: "Bash(ls", err: true},
		{in: "(ls)", err: true},
		{in: "Ba sh", err: true},
		{in: "Edit(src/[)", err: true},
		{in: "WebFetch(domain:)", err: true},
	} {
		r, err := ParseRule(c.in)
		if c.err {
			if err == nil || !errors.Is(err, ErrRule) {
				t.Errorf("ParseRule(%q) = %+v, %v; want an ErrRule", c.in, r, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRule(%q): %v", c.in, err)
			continue
		}
		if r.Tool != c.tool || r.Pattern != c.pattern || r.Raw != strings.TrimSpace(c.in) {
			t.Errorf("ParseRule(%q) = %+v, want tool %q pattern %q", c.in, r, c.tool, c.pattern)
		}
	}
	if _, err := ParseRules([]string{"Bash", "Bash("}, []string{"Edit(["}, nil); err == nil ||
		!strings.Contains(err.Error(), `"Bash("`) || !strings.Contains(err.Error(), `"Edit(["`) {
		t.Errorf("ParseRules error %v does not name both bad rules", err)
	}
	if got := (Rule{Tool: "Edit", Pattern: "src/**"}).String(); got != "Edit(src/**)" {
		t.Errorf("String = %q", got)
	}
}

func TestNew(t *testing.T) {
	if _, err := New("yolo", Rules{}); err == nil {
		t.Error("New with an unknown mode succeeded")
	}
	if _, err := New(ModeDefault, Rules{Deny: []Rule{{Tool: "Edit", Pattern: "["}}}); err == nil {
		t.Error("New with an invalid rule succeeded")
	}
	p, err := New("", Rules{Allow: []Rule{{Tool: "Bash", Pattern: "ls:*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeDefault {
		t.Errorf("zero mode = %q, want default", p.Mode)
	}
	if v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, "ls -la")})); v.Decision != Allow || v.Rule != "Bash(ls:*)" {
		t.Errorf("rule without Raw: %+v", v)
	}
	for in, want := range map[string]Mode{"default": ModeDefault, "accept-edits": ModeAcceptEdits, "acceptEdits": ModeAcceptEdits,
		"plan": ModePlan, "bypass": ModeBypass, "bypassPermissions": ModeBypass} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, m, err, want)
		}
	}
	for _, in := range []string{"", "Default", "auto"} {
		if _, err := ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) succeeded", in)
		}
	}
}

func TestWithAndWithMode(t *testing.T) {
	home, cfg, _ := testOptions(t)
	p := mustNew(t, ModeDefault, []string{"Bash(ls:*)"}, []string{"Bash(rm:*)"}, nil, WithUserConfigDir(cfg), WithHomeDir(home))
	q, err := p.With(Rules{Allow: []Rule{{Tool: "Bash", Pattern: "go test:*"}}, Deny: []Rule{{Tool: "Edit", Pattern: "go.mod"}}})
	if err != nil {
		t.Fatal(err)
	}
	if v := q.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, "ls && go test ./...")})); v.Decision != Allow {
		t.Errorf("With: %s (%s)", v.Decision, v.Reason)
	}
	if v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, "ls && go test ./...")})); v.Decision != Ask {
		t.Errorf("With changed the original: %s", v.Decision)
	}
	if v := q.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, "rm x")})); v.Decision != Deny {
		t.Errorf("With lost a deny rule: %s", v.Decision)
	}
	r, err := q.WithMode(ModeAcceptEdits)
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", "go.mod")})); v.Decision != Deny {
		t.Errorf("WithMode lost a deny rule: %s", v.Decision)
	}
	if v := r.Decide(declared(Request{ToolName: "Edit", Input: input(t, "file_path", "a.go")})); v.Decision != Allow {
		t.Errorf("WithMode accept-edits: %s", v.Decision)
	}
	// The options carry over: the injected config folder is still guarded.
	if v := r.Decide(declared(Request{ToolName: "Write", Input: input(t, "file_path", filepath.Join(cfg, "orca", "x"))})); v.Decision != Deny {
		t.Errorf("WithMode lost the config folder: %s", v.Decision)
	}
	if _, err := p.WithMode("nope"); err == nil {
		t.Error("WithMode accepted an unknown mode")
	}
}

func TestChangingExportedFieldsHasNoEffect(t *testing.T) {
	p := mustNew(t, ModeDefault, []string{"Bash(ls:*)"}, nil, nil)
	p.Mode = ModeBypass
	p.Rules.Allow[0] = Rule{Tool: "Bash"}
	p.Rules.Deny = append(p.Rules.Deny, Rule{Tool: "Read"})
	if v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, "touch x")})); v.Decision != Ask {
		t.Errorf("touch x = %s, want ask", v.Decision)
	}
	if v := p.Decide(declared(Request{ToolName: "Read", Input: input(t, "file_path", "a")})); v.Decision != Allow {
		t.Errorf("Read = %s, want allow", v.Decision)
	}
	q, err := p.With(Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if q.Mode != ModeDefault || len(q.Rules.Deny) != 0 || q.Rules.Allow[0].Raw != "Bash(ls:*)" {
		t.Errorf("With built from the changed fields: %+v", q)
	}
}

func TestInputItCannotRead(t *testing.T) {
	p := mustNew(t, ModeDefault, []string{"Edit(**)", "Bash(ls:*)"}, nil, nil)
	for _, tool := range []string{"Edit", "Bash", "Read", "Deploy"} {
		for _, in := range []json.RawMessage{nil, json.RawMessage(`{`), json.RawMessage(`[]`)} {
			v := p.Decide(declared(Request{ToolName: tool, Input: in}))
			if tool == "Read" {
				continue // read-only whatever it reads
			}
			if v.Decision != Ask {
				t.Errorf("%s with input %q = %s, want ask", tool, in, v.Decision)
			}
		}
	}
}

func TestDecideConcurrently(t *testing.T) {
	ws := openWorkspace(t)
	p := mustNew(t, ModeDefault, stdAllow, stdDeny, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				cmd := "ls && git status | cat"
				want := Allow
				if i%2 == 1 {
					cmd, want = "ls; rm -rf x", Deny
				}
				if v := p.Decide(declared(Request{ToolName: "Bash", Input: bashInput(t, cmd), FS: ws})); v.Decision != want {
					t.Errorf("%q = %s, want %s", cmd, v.Decision, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A call with several paths is denied if a deny rule matches any of them,
// and allowed by a rule only if it matches all of them; Read and Edit rules
// apply to the paths any tool reads or writes.
func TestSeveralPaths(t *testing.T) {
	copyCall := func(from, to string) Request {
		return Request{ToolName: "Copy", Access: tool.Access{Reads: []string{from}, Writes: []string{to}}}
	}
	p := mustNew(t, ModeDefault, []string{"Edit(src/**)", "Read(src/**)"}, []string{"Read(secret/**)"}, nil)
	for _, tc := range []struct {
		req  Request
		want Decision
	}{
		{copyCall("src/a.go", "src/b.go"), Allow},
		{copyCall("secret/key", "src/b.go"), Deny},
		{copyCall("docs/a.md", "src/b.go"), Ask},
		{copyCall("src/a.go", ".orca/settings.json"), Deny},
		{Request{ToolName: "Grep2", Access: tool.Access{Reads: []string{"src", "secret"}}}, Deny},
		{Request{ToolName: "Grep2", Access: tool.Access{Reads: []string{"src/x", "src/y"}}}, Allow},
	} {
		if v := p.Decide(tc.req); v.Decision != tc.want {
			t.Errorf("%s %+v: %s (%s), want %s", tc.req.ToolName, tc.req.Access, v.Decision, v.Reason, tc.want)
		}
	}
}

// The sign-ins to MCP servers (protect.Secrets) are read by no tool, in
// any mode, whatever rule allows it: Read, Grep, a link that leads there;
// the rest of the configuration folder is read as before.
func TestProtectionSecrets(t *testing.T) {
	_, cfg, _ := testOptions(t)
	secrets := filepath.Join(cfg, "orca", "mcp-auth")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, ModeBypass, []string{"Read", "Grep"}, nil, nil, WithUserConfigDir(cfg))
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(secrets, link)
	for _, req := range []Request{
		{ToolName: "Read", Input: input(t, "file_path", filepath.Join(secrets, "linear-0a1b.json"))},
		{ToolName: "Read", Input: input(t, "file_path", filepath.Join(cfg, "orca", "x", "..", "mcp-auth", "a.json"))},
		{ToolName: "Grep", Input: json.RawMessage(`{"pattern": "token", "path": ` + strconv.Quote(secrets) + `}`)},
		{ToolName: "Read", Input: input(t, "file_path", filepath.Join(link, "a.json"))},
	} {
		v := p.Decide(declared(req))
		if v.Decision != Deny || v.Rule != "secret" || !strings.Contains(v.Reason, "the sign-ins to MCP servers") {
			t.Errorf("%s %s = %s by %q (%s), want deny", req.ToolName, req.Input, v.Decision, v.Rule, v.Reason)
		}
	}
	if v := p.Decide(declared(Request{ToolName: "Read", Input: input(t, "file_path", filepath.Join(cfg, "orca", "settings.json"))})); v.Decision != Allow {
		t.Errorf("Read of the settings = %s (%s), want allow", v.Decision, v.Reason)
	}
}
