package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The check through the CLI: a turn whose commands run sed -i,
// rm, mv and make files, then orca rewind to before it — a file the user
// changed since stops it until --force; then every file is back byte for
// byte, what the turn made is gone, and what it did not touch has not
// moved. An Edit's change is rewound the same way, by its turn's id.
func TestRewindThroughTheCLI(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{
		"main.go":            "package main\n\nfunc main() { println(\"hello\") }\n",
		"notes.txt":          "notes\n",
		"gone/deep/file.txt": "deleted with its folders\n",
		"keep.txt":           "not touched\n",
	}
	old := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for p, c := range files {
		writeFileAt(t, ws, p, c)
		os.Chtimes(filepath.Join(ws, p), old, old)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	bash := bashCall("b", `sed -i 's/hello/goodbye/' main.go && rm -r gone && mv notes.txt docs.txt && mkdir -p out && echo made > out/new.txt`)
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--json", "--script", writeScript(t, bash, `{"text": "done"}`), "-w", ws, "--no-sandbox", "--permission-mode", "bypass", "--session", "s1", "change"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); !strings.Contains(string(b), "goodbye") {
		t.Fatalf("the command did not run: %s", b)
	}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--json")
	var list []struct {
		Turn    string
		Changes []struct{ Path, Kind string }
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &list) != nil || len(list) != 1 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	kinds := map[string]string{}
	for _, c := range list[0].Changes {
		kinds[c.Path] = c.Kind
	}
	for p, k := range map[string]string{"main.go": "changed", "gone": "removed", "gone/deep": "removed", "gone/deep/file.txt": "removed", "notes.txt": "removed", "docs.txt": "made", "out": "made", "out/new.txt": "made"} {
		if kinds[p] != k {
			t.Errorf("%s: %q, want %q (%v)", p, kinds[p], k, kinds)
		}
	}
	if _, ok := kinds["keep.txt"]; ok || len(kinds) != 8 {
		t.Errorf("changes %v", kinds)
	}

	stdout, _, code = orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--diff", "1")
	for _, want := range []string{
		"--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n package main\n \n-func main() { println(\"hello\") }\n+func main() { println(\"goodbye\") }\n",
		"--- /dev/null\n+++ b/out/new.txt\n@@ -0,0 +1 @@\n+made\n",
		"--- a/gone/deep/file.txt\n+++ /dev/null\n",
		"+ out/\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--diff: no %q in\n%s", want, stdout)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); !strings.Contains(string(b), "goodbye") {
		t.Error("--diff put something back")
	}
	for _, flag := range []string{"--diff", "--force"} {
		if _, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, flag); code != 2 || !strings.Contains(stderr, "--diff and --force need a TURN") {
			t.Errorf("%s without a TURN: exit %d: %s", flag, code, stderr)
		}
	}
	writeFileAt(t, ws, "out/new.txt", "the user's\n")
	_, stderr, code = orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "1")
	if code == 0 || !strings.Contains(stderr, "nothing was put back: 1 path changed since the turns changed it:\n  out/new.txt: it changed since") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); !strings.Contains(string(b), "goodbye") {
		t.Error("a rewind that stopped put main.go back")
	}
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--force", list[0].Turn)
	if code != 0 || !strings.HasPrefix(stdout, "Put back 8 paths as they were before turn "+list[0].Turn) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	for p, c := range files {
		b, err := os.ReadFile(filepath.Join(ws, p))
		if err != nil || string(b) != c {
			t.Errorf("%s: %q %v", p, b, err)
		}
		if fi, err := os.Stat(filepath.Join(ws, p)); err != nil || !fi.ModTime().Equal(old) {
			t.Errorf("%s moved: %v", p, fi.ModTime())
		}
	}
	for _, p := range []string{"out", "docs.txt"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if stdout, _, _ := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws); !strings.Contains(stdout, "has no turn that changed the workspace") {
		t.Errorf("the rewound turn is still listed: %s", stdout)
	}

	// An Edit's change, rewound by its turn's id.
	edit := `{"tool_calls": [{"id": "e", "name": "Edit", "input": {"file_path": "keep.txt", "old_string": "not", "new_string": "now"}}]}`
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--json", "--script", writeScript(t, edit, `{"text": "done"}`), "-w", ws, "--no-sandbox", "--permission-mode", "bypass", "--session", "s1", "edit"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stdout, _, _ = orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--session", "s1", "--json")
	list = nil
	json.Unmarshal([]byte(stdout), &list)
	if len(list) != 1 || len(list[0].Changes) != 1 || list[0].Changes[0].Path != "keep.txt" {
		t.Fatalf("%s", stdout)
	}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--session", "s1", list[0].Turn); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt")); string(b) != files["keep.txt"] {
		t.Errorf("keep.txt: %q", b)
	}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--session", "s1", "7"); code == 0 || !strings.Contains(stderr, `session s1 has no turn "7" with changes to rewind`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
