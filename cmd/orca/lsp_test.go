package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/sandbox"
)

// TestLanguageServersThroughTheCLI: with real language servers installed
// (gopls, typescript-language-server, pyright: $ORCA_LANGUAGE_SERVERS/bin,
// found on the PATH as orca finds them), a turn's Edit that breaks Go,
// TypeScript or Python is followed by the server's diagnostic in its
// observation, and so is a Bash command that writes broken Go; the LSP
// tool finds a definition's file and line; gopls killed mid-turn (by a
// PostToolUse hook, from outside the sandbox) makes the next edit's
// observation say so, the turn goes on, and gopls is started again.
func TestLanguageServersThroughTheCLI(t *testing.T) {
	servers := os.Getenv("ORCA_LANGUAGE_SERVERS")
	if servers == "" {
		t.Skip("ORCA_LANGUAGE_SERVERS names no folder of language servers")
	}
	ws := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":   "module example.com/hello\n\ngo 1.22\n",
		"greet.go": "package main\n\n// greet says hello.\nfunc greet(name string) string { return \"hi \" + name }\n",
		"main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greet(\"you\"))\n}\n",
		"greet.ts": "export function greet(name: string): string {\n  return 'hi ' + name\n}\n",
		"main.ts":  "import { greet } from './greet'\n\nconsole.log(greet('you'))\n",
		"greet.py": "def greet(name: str) -> str:\n    return 'hi ' + name\n",
		"main.py":  "from greet import greet\n\nprint(greet('you'))\n",
	} {
		writeFileAt(t, ws, name, text)
	}
	// This test's gopls, under a path of its own: the hook kills it alone
	// (the process whose command line starts with it: not the hook's own
	// shell, whose command names it too).
	own := filepath.Join(t.TempDir(), "own-gopls")
	if err := os.Symlink(filepath.Join(servers, "bin", "gopls"), own); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "killed")
	kill := `[ -e ` + marker + ` ] && exit 0; for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in ` + own + `*) kill -9 ${p#/proc/};; esac; done; touch ` + marker
	settings, _ := json.Marshal(map[string]any{
		"lspServers": map[string]any{"gopls": map[string]any{"command": own, "extensionToLanguage": map[string]string{".go": "go"}}},
		"hooks":      map[string]any{"PostToolUse": []any{map[string]any{"matcher": "Edit", "hooks": []any{map[string]any{"type": "command", "command": kill}}}}},
	})
	o := options{configDir: t.TempDir(), getenv: func(k string) string {
		if k == "PATH" {
			return filepath.Join(servers, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
		}
		return ""
	}}
	writeFileAt(t, o.configDir, "orca/settings.json", string(settings))

	edit := func(id, file, old, new string) map[string]any {
		return map[string]any{"id": id, "name": "Edit", "input": map[string]string{"file_path": file, "old_string": old, "new_string": new}}
	}
	step := func(calls ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"tool_calls": calls})
		return string(b)
	}
	sc := writeScript(t,
		step(edit("go1", "main.go", `greet("you")`, `greet(42)`)),
		step(edit("go2", "main.go", `greet(42)`, `greet(nope)`)),
		step(map[string]any{"id": "wait", "name": "Bash", "input": map[string]string{"command": "sleep 1.5"}}),
		step(edit("go3", "main.go", `greet(nope)`, `greet(nope, 1)`)),
		step(map[string]any{"id": "sh", "name": "Bash", "input": map[string]string{"command": `printf 'package main\n\nfunc extra() int { return "s" }\n' > extra.go`}}),
		step(edit("ts", "main.ts", `greet('you')`, `greet(42)`)),
		step(edit("py", "main.py", `greet('you')`, `greet(42)`)),
		step(map[string]any{"id": "def", "name": "LSP", "input": map[string]any{"operation": "goToDefinition", "filePath": "main.go", "line": 6, "character": 14}}),
		`{"text": "done"}`)
	args := []string{"run", "--json", "--script", sc, "-w", ws, "--permission-mode", "bypass"}
	if sandbox.Available() != nil {
		args = append(args, "--no-sandbox")
	}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", append(args, "fix the greeting")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := parseEvents(t, stdout)
	for _, c := range []struct{ id, want string }{
		{"go1", "<diagnostics>\nThe language servers found new problems in the files changed:\nmain.go:6:20: error: cannot use 42 (untyped int constant) as string value in argument to greet"},
		{"go2", "Not checked (main.go): language server gopls exited"},
		{"go3", "main.go:6:20: error: undefined: nope"},
		{"sh", `extra.go:3:27: error: cannot use "s" (untyped string constant) as int value in return statement`},
		{"ts", "main.ts:3:19: error: Argument of type 'number' is not assignable to parameter of type 'string'. [typescript 2345]"},
		{"py", `main.py:3:13: error: Argument of type "Literal[42]" cannot be assigned to parameter "name" of type "str" in function "greet"`},
		{"def", "Defined at:\ngreet.go:4:6: func greet(name string) string { return \"hi \" + name }"},
	} {
		ev := toolEventOf(t, evs, c.id)
		if ev["is_error"] == true || !strings.Contains(ev.str("output"), c.want) {
			t.Errorf("%s: %q\nwant %q", c.id, ev.str("output"), c.want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "main.go")); !strings.Contains(string(got), "greet(nope, 1)") {
		t.Errorf("the edits: %s", got)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the hook did not kill gopls: %v", err)
	}
}
