package serve_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/tool"
)

// The checkpoints orca run and orca chat keep in the workspace, through
// the API: listed as orca rewind --json lists them, one turn's diff, and
// a rewind — refused while a turn of the session runs or the session is
// open elsewhere, a 409 naming the paths changed since, then the files
// put back and, with conversation, the conversation going on in a new
// session whose model sees the history before the turn.
func TestRewindThroughTheAPI(t *testing.T) {
	ctx := t.Context()
	release, started := make(chan struct{}), make(chan struct{}, 1)
	wait := tool.New("Wait", "Waits.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "waited", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, tool.ReadOnly())
	f := newFixture(t, app.Config{ToolProviders: []tool.Provider{tool.Static("wait", wait)}}, serve.Options{})
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(f.ws, p))
		if err != nil {
			return "(none)"
		}
		return string(b)
	}
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("before\n"), 0o644)

	// Two turns of another App in the workspace, which keeps checkpoints
	// as orca run and orca chat do.
	model := script.New().Script("s1",
		script.Call("Bash", map[string]string{"command": "echo after > a.txt && echo made > b.txt"}), script.Text("changed a"),
		script.Call("Write", map[string]string{"file_path": "c.txt", "content": "c\n"}), script.Text("wrote c"))
	other, err := app.Open(ctx, app.Config{Workspace: f.ws, ConfigDir: "-", ClaudeDir: "-", Client: model, NoMCP: true, NoSandbox: true, Mode: policy.ModeBypass, Checkpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ls, err := other.Session(ctx, app.SessionOptions{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"change a", "write c"} {
		if res, err := ls.Run(ctx, in); err != nil || res.Err != nil {
			t.Fatalf("%s: %+v %v", in, res, err)
		}
	}
	// Open there, the session is not the server's to rewind.
	if code, body := f.do("POST", "/v1/sessions/s1/checkpoints/2/rewind", ""); code != 409 || !strings.Contains(body, `"session_busy"`) {
		t.Errorf("a session open elsewhere: %d %s", code, body)
	}
	ls.Close(ctx)
	other.Close()

	var list struct {
		Checkpoints []struct {
			Turn, Taken string
			Changes     []struct{ Path, Kind string }
		}
	}
	_, body := f.do("GET", "/v1/sessions/s1/checkpoints", "")
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Checkpoints) != 2 {
		t.Fatalf("%s", body)
	}
	one, two := list.Checkpoints[0], list.Checkpoints[1]
	if fmt.Sprint(one.Changes) != "[{a.txt changed} {b.txt made}]" || fmt.Sprint(two.Changes) != "[{c.txt made}]" || !strings.HasPrefix(one.Turn, "turn_") || one.Taken == "" {
		t.Errorf("%s", body)
	}
	for _, turn := range []string{"1", one.Turn} {
		d := f.json("GET", "/v1/sessions/s1/checkpoints/"+turn, "", 200)
		ch, _ := d["changes"].([]any)
		if d["turn"] != one.Turn || len(ch) != 2 || fmt.Sprint(ch[0]) != fmt.Sprint(map[string]any{"path": "a.txt", "kind": "changed", "type": "file", "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-before\n+after\n"}) ||
			ch[1].(map[string]any)["diff"] != "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+made\n" {
			t.Errorf("the diff of %s: %v", turn, d)
		}
	}

	// Bad input is named.
	for _, c := range []struct {
		method, path, body string
		code               int
		says               string
	}{
		{"GET", "/v1/sessions/s1/checkpoints/7", "", 404, `session s1 has no turn \"7\" with changes to rewind: GET /v1/sessions/s1/checkpoints lists them`},
		{"POST", "/v1/sessions/s1/checkpoints/turn_nope/rewind", "", 404, `session s1 has no turn \"turn_nope\"`},
		{"GET", "/v1/sessions/nope/checkpoints", "", 404, "no session nope"},
		{"POST", "/v1/sessions/nope/checkpoints/1/rewind", "", 404, "no session nope"},
		{"POST", "/v1/sessions/s1/checkpoints/1/rewind", `{"force": "yes"}`, 400, `"field":"force"`},
		{"POST", "/v1/sessions/s1/checkpoints/1/rewind", `{"forse": true}`, 400, `unknown field \"forse\"`},
		{"POST", "/v1/sessions/s1/checkpoints/1/rewind", `{"force": tru`, 400, "the body is not JSON"},
		{"PUT", "/v1/sessions/s1/checkpoints/1/rewind", "", 405, "this path takes POST"},
	} {
		if code, body := f.do(c.method, c.path, c.body); code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s %s %s: %d %s, want %d saying %s", c.method, c.path, c.body, code, body, c.code, c.says)
		}
	}

	// A turn of the server's runs in the session: refused until it ends.
	f.model.Script("s1", script.Call("Wait", map[string]any{}), script.Text("waited"))
	turn := f.json("POST", "/v1/sessions/s1/messages", `{"text": "wait"}`, 202)["turn_id"].(string)
	<-started
	if code, body := f.do("POST", "/v1/sessions/s1/checkpoints/1/rewind", `{"force": true}`); code != 409 || !strings.Contains(body, `"turn_running"`) {
		t.Errorf("while a turn runs: %d %s", code, body)
	}
	close(release)
	f.events("/v1/sessions/s1/turns/"+turn+"/events", "", completed)
	if read("a.txt") != "after\n" {
		t.Errorf("a refused rewind put a.txt back: %q", read("a.txt"))
	}

	// A path changed since: 409 naming it, nothing put back.
	os.WriteFile(filepath.Join(f.ws, "b.txt"), []byte("the user's\n"), 0o644)
	code, body := f.do("POST", "/v1/sessions/s1/checkpoints/1/rewind", "")
	var stopped struct {
		Error     struct{ Code, Message string }
		Rewound   *bool
		Restored  []string
		Conflicts []struct{ Path, Why string }
	}
	if code != 409 || json.Unmarshal([]byte(body), &stopped) != nil || stopped.Error.Code != "changed_since" || stopped.Rewound == nil || *stopped.Rewound ||
		len(stopped.Restored) != 0 || fmt.Sprint(stopped.Conflicts) != "[{b.txt it changed since}]" || !strings.Contains(stopped.Error.Message, "b.txt (it changed since)") {
		t.Fatalf("%d %s", code, body)
	}
	if read("a.txt") != "after\n" || read("b.txt") != "the user's\n" {
		t.Errorf("a rewind that stopped put back a.txt %q, b.txt %q", read("a.txt"), read("b.txt"))
	}

	// Turn 2 with the conversation: c.txt is gone, and the conversation
	// goes on in a branch holding turn 1; s1 keeps its three turns.
	rw := f.json("POST", "/v1/sessions/s1/checkpoints/2/rewind", `{"conversation": true}`, 200)
	branch, _ := rw["branch"].(string)
	if rw["rewound"] != true || rw["turn"] != two.Turn || fmt.Sprint(rw["restored"]) != "[c.txt]" || !strings.HasPrefix(branch, "session_") {
		t.Fatalf("%v", rw)
	}
	if read("c.txt") != "(none)" || read("a.txt") != "after\n" {
		t.Errorf("c.txt %q, a.txt %q", read("c.txt"), read("a.txt"))
	}
	if s := f.json("GET", "/v1/sessions/s1", "", 200); len(s["transcript"].([]any)) != 12 {
		t.Errorf("s1 has %d messages, had 12", len(s["transcript"].([]any)))
	}
	if s := f.json("GET", "/v1/sessions/"+branch, "", 200); len(s["transcript"].([]any)) != 4 || !strings.Contains(fmt.Sprint(s["transcript"]), "change a") {
		t.Errorf("the branch: %v", s["transcript"])
	}
	for id, want := range map[string]string{"s1": one.Turn, branch: one.Turn} {
		var l struct{ Checkpoints []struct{ Turn string } }
		_, body := f.do("GET", "/v1/sessions/"+id+"/checkpoints", "")
		if json.Unmarshal([]byte(body), &l) != nil || len(l.Checkpoints) != 1 || l.Checkpoints[0].Turn != want {
			t.Errorf("%s's checkpoints: %s", id, body)
		}
	}
	f.model.Script(branch, script.Text("going on"))
	next := f.json("POST", "/v1/sessions/"+branch+"/messages", `{"text": "and now?"}`, 202)["turn_id"].(string)
	f.events("/v1/sessions/"+branch+"/turns/"+next+"/events", "", completed)
	calls := f.model.CallsTo(branch)
	if len(calls) != 1 {
		t.Fatalf("%d calls in the branch", len(calls))
	}
	prompt := fmt.Sprint(calls[0].Messages)
	if !strings.Contains(prompt, "change a") || !strings.Contains(prompt, "and now?") || strings.Contains(prompt, "write c") || strings.Contains(prompt, "wait") {
		t.Errorf("the branch's model saw %s", prompt)
	}

	// Turn 1, forced: b.txt, the user's since, is put back too.
	rw = f.json("POST", "/v1/sessions/s1/checkpoints/1/rewind", `{"force": true}`, 200)
	if rw["rewound"] != true || fmt.Sprint(rw["restored"]) != "[a.txt b.txt]" || fmt.Sprint(rw["conflicts"]) != "[map[path:b.txt why:it changed since]]" || rw["branch"] != nil {
		t.Errorf("%v", rw)
	}
	if read("a.txt") != "before\n" || read("b.txt") != "(none)" {
		t.Errorf("a.txt %q, b.txt %q", read("a.txt"), read("b.txt"))
	}
	if _, body := f.do("GET", "/v1/sessions/s1/checkpoints", ""); strings.TrimSpace(body) != `{"checkpoints":[]}` {
		t.Errorf("%s", body)
	}

	// Deleting the branch drops its checkpoint, and the content only it
	// needed: a.txt's "before" (the workspace's last snapshot keeps the
	// rest).
	sum := sha256.Sum256([]byte("before\n"))
	before := filepath.Join(f.ws, app.RewindDir, "objects", hex.EncodeToString(sum[:1]), hex.EncodeToString(sum[1:]))
	if _, err := os.Stat(before); err != nil {
		t.Fatalf("the branch's checkpoint keeps no content: %v", err)
	}
	if code, body := f.do("DELETE", "/v1/sessions/"+branch, ""); code != 204 {
		t.Fatalf("deleting the branch: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(f.ws, app.RewindDir, "checkpoints", branch)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the branch's checkpoints are left: %v", err)
	}
	if _, err := os.Stat(before); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("content no checkpoint needs is left: %v", err)
	}
}
