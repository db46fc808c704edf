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
	for _, flag := range []string{"--diff", "--force", "--conversation"} {
		if _, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, flag); code != 2 || !strings.Contains(stderr, "--diff, --force and --conversation need a TURN") {
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

// orca rewind TURN --conversation: the files are put back, and the
// conversation goes on in a new session holding the records before the
// turn (the session keeps all of its own), with the checkpoints of the
// turns it keeps; the commands printed go on in it.
func TestRewindConversationThroughTheCLI(t *testing.T) {
	ws := t.TempDir()
	writeFileAt(t, ws, "a.txt", "before\n")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	run := func(session, prompt string, responses ...string) {
		t.Helper()
		if _, stderr, code := orcaWith(t, t.Context(), o, "", append([]string{"run", "--script", writeScript(t, responses...), "-w", ws, "--no-sandbox", "--permission-mode", "bypass", "--session", session}, prompt)...); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	write := `{"tool_calls": [{"id": "w", "name": "Write", "input": {"file_path": "b.txt", "content": "b\n"}}]}`
	run("s1", "change a", bashCall("b", "echo after > a.txt"), `{"text": "changed a"}`)
	run("s1", "write b", write, `{"text": "wrote b"}`)
	type record struct {
		TurnID  string `json:"turn_id"`
		Role    string
		Content []struct{ Text string }
	}
	records := func(session string) []record {
		t.Helper()
		stdout, stderr, code := orcaWith(t, t.Context(), o, "", "sessions", "show", "-w", ws, session, "--json")
		var shown struct{ Records []record }
		if code != 0 || json.Unmarshal([]byte(stdout), &shown) != nil {
			t.Fatalf("sessions show %s: exit %d: %s %s", session, code, stdout, stderr)
		}
		return shown.Records
	}
	orig := records("s1")
	if len(orig) != 8 {
		t.Fatalf("s1 has %d records", len(orig))
	}
	if _, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--diff", "--conversation", "2"); code != 2 || !strings.Contains(stderr, "--diff puts nothing back") {
		t.Errorf("--diff --conversation: exit %d: %s", code, stderr)
	}

	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--session", "s1", "2", "--conversation", "--json")
	var got struct {
		Rewound  bool
		Turn     string
		Restored []string
		Branch   string
		Continue []string
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &got) != nil {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if !got.Rewound || got.Turn != orig[4].TurnID || strings.Join(got.Restored, " ") != "b.txt" || !strings.HasPrefix(got.Branch, "session_") ||
		len(got.Continue) != 2 || !strings.HasPrefix(got.Continue[0], "orca chat --session "+got.Branch+" -w ") || !strings.HasPrefix(got.Continue[1], "orca run --session "+got.Branch+" -w ") {
		t.Fatalf("%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Error("b.txt is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "after\n" {
		t.Errorf("a.txt: %q", b)
	}
	branch := records(got.Branch)
	if len(branch) != 4 {
		t.Fatalf("the branch has %d records, want turn 1's 4", len(branch))
	}
	for i, r := range branch {
		if r.TurnID != orig[i].TurnID || r.Role != orig[i].Role || r.TurnID != orig[0].TurnID {
			t.Errorf("record %d: %+v, the original's %+v", i+1, r, orig[i])
		}
	}
	if n := len(records("s1")); n != 8 {
		t.Errorf("s1 has %d records after the rewind, had 8", n)
	}
	stdout, _, _ = orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--session", got.Branch, "--json")
	var list []struct{ Turn string }
	if json.Unmarshal([]byte(stdout), &list) != nil || len(list) != 1 || list[0].Turn != orig[0].TurnID {
		t.Errorf("the branch's checkpoints: %s", stdout)
	}
	// The branch goes on with orca run --session, from turn 1.
	run(got.Branch, "and now?", `{"text": "going on"}`)
	if now := records(got.Branch); len(now) != 6 || now[5].Content[0].Text != "going on" {
		t.Errorf("the branch after a turn: %+v", now)
	}

	// In text, back to before turn 1 of s1: an empty branch.
	stdout, stderr, code = orcaWith(t, t.Context(), o, "", "rewind", "-w", ws, "--session", "s1", "1", "--conversation")
	if code != 0 || !strings.Contains(stdout, "Put back 1 path as it was before turn "+orig[0].TurnID) ||
		!strings.Contains(stdout, "The conversation goes on as it was before turn "+orig[0].TurnID+" in a new session, session_") ||
		!strings.Contains(stdout, "(session s1 is kept as it was):\n  orca chat --session session_") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "before\n" {
		t.Errorf("a.txt: %q", b)
	}
}
