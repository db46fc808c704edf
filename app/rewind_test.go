package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/rewind"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/toolset"
)

// A checkpoint's diff: text as unified diffs, a binary file and one whose
// content was not kept named with why, a folder by its mark, a link by
// its targets; the same, path by path, as DiffOf's view.
func TestRewindDiff(t *testing.T) {
	contents := map[string]string{"t1": "one\ntwo\n", "t2": "one\n2\n", "bin": "\x00\x01PNG"}
	file := func(d string) *rewind.Entry { return &rewind.Entry{Mode: 0o644, Digest: d} }
	cp := rewind.Checkpoint{ID: "turn_1", Taken: time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC), Changes: []rewind.Change{
		{Path: "a.txt", Before: file("t1"), After: file("t2")},
		{Path: "img.png", After: file("bin")},
		{Path: "big.log", Before: &rewind.Entry{Mode: 0o644, Size: 1 << 30}, After: file("t1")},
		{Path: "lost.txt", Before: file("gone")},
		{Path: "out", After: &rewind.Entry{Mode: 0o755 | fs.ModeDir}},
		{Path: "link", Before: &rewind.Entry{Mode: 0o777 | fs.ModeSymlink, Link: "a.txt"}, After: &rewind.Entry{Mode: 0o777 | fs.ModeSymlink, Link: "img.png"}},
		{Path: "run.sh", Before: file("t1"), After: &rewind.Entry{Mode: 0o755, Digest: "t1"}},
		{Path: "new\nline.txt", After: file("t1")},
	}}
	content := func(d string) ([]byte, error) {
		if c, ok := contents[d]; ok {
			return []byte(c), nil
		}
		return nil, errors.New("not kept")
	}
	var b strings.Builder
	app.WriteDiff(&b, cp, content)
	want := "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n" +
		"+ img.png (binary, 5 bytes)\n" +
		"~ big.log (not kept: larger than 16.0 MB, or past the 1024.0 MB a snapshot reads)\n" +
		"- lost.txt (not kept)\n" +
		"+ out/\n" +
		"~ link (a link: a.txt → img.png)\n" +
		"~ run.sh (the same content; its mode changed, -rw-r--r-- → -rwxr-xr-x)\n" +
		"--- /dev/null\n+++ b/new\\nline.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	v := app.DiffOf(cp, content)
	if v.Turn != "turn_1" || v.Taken != "2025-01-02T03:04:05.006Z" || len(v.Changes) != len(cp.Changes) {
		t.Fatalf("%+v", v)
	}
	for i, w := range []app.FileDiff{
		{Path: "a.txt", Kind: "changed", Type: "file", Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},
		{Path: "img.png", Kind: "made", Type: "file", Note: "binary, 5 bytes"},
		{Path: "out", Kind: "made", Type: "folder"},
		{Path: "link", Kind: "changed", Type: "link", Note: "a link: a.txt → img.png"},
	} {
		if got := v.Changes[[]int{0, 1, 4, 5}[i]]; got != w {
			t.Errorf("got %+v, want %+v", got, w)
		}
	}
	if v.Changes[7].Path != "new\nline.txt" {
		t.Errorf("the view's path is the path itself: %q", v.Changes[7].Path)
	}
}

func text(role llm.Role, s string) llm.Message {
	return llm.Message{Role: role, Content: []llm.Block{llm.TextBlock(s)}}
}

// A branch holds a copy of every record before the turn — its turn,
// kind, message with its image, model and time — compacted where it was
// compacted when the turn began: a compaction before the turn is carried
// over, one made after it is not. The original is left as it was.
func TestRewindBranchBefore(t *testing.T) {
	sq, err := app.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	for name, st := range map[string]store.Store{"memory": store.NewMemory(), "sqlite": sq} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			orig, err := st.Provision(ctx, store.Session{ID: "s", RuntimeID: "orca:ws_1", Workspace: "/w", Agent: "orca"})
			if err != nil {
				t.Fatal(err)
			}
			png := []byte("\x89PNG\r\n\x1a\nnot really")
			shown := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("q1"), llm.ImageBlock(&llm.Media{MediaType: "image/png", Data: png})}}
			at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
			add := func(recs ...store.Record) {
				t.Helper()
				for i := range recs {
					recs[i].Time = at
					at = at.Add(time.Second)
				}
				if _, err := st.Append(ctx, "s", recs...); err != nil {
					t.Fatal(err)
				}
			}
			// t1, then a manual compaction (turn ""), then t2; t3
			// compacts in the middle of its turn.
			add(store.Record{TurnID: "t1", Kind: store.KindMessage, Message: shown},
				store.Record{TurnID: "t1", Kind: store.KindMessage, Message: text(llm.RoleAssistant, "a1"), Model: "m-1"})
			add(store.Record{Kind: store.KindSummary, Message: text(llm.RoleUser, "summary of t1")},
				store.Record{Kind: store.KindMessage, Message: text(llm.RoleAssistant, "kept")})
			if err := st.MarkCompacted(ctx, "s", 2); err != nil {
				t.Fatal(err)
			}
			add(store.Record{TurnID: "t2", Kind: store.KindMessage, Message: text(llm.RoleUser, "q2")},
				store.Record{TurnID: "t2", Kind: store.KindMessage, Message: text(llm.RoleAssistant, "a2"), Model: "m-2"},
				store.Record{TurnID: "t3", Kind: store.KindMessage, Message: text(llm.RoleUser, "q3")})
			add(store.Record{TurnID: "t3", Kind: store.KindSummary, Message: text(llm.RoleUser, "summary of t1 t2")},
				store.Record{TurnID: "t3", Kind: store.KindMessage, Message: text(llm.RoleAssistant, "a3")})
			if err := st.MarkCompacted(ctx, "s", 7); err != nil {
				t.Fatal(err)
			}
			all, _ := st.Records(ctx, "s", store.RecordFilter{IncludeCompacted: true})

			for _, c := range []struct {
				turn      string
				n         int
				compacted []bool
			}{
				{"t1", 0, nil},
				{"t2", 4, []bool{true, true, false, false}},
				// t3's compaction marked t2's records: not in the branch.
				{"t3", 6, []bool{true, true, false, false, false, false}},
			} {
				b, err := app.BranchBefore(ctx, st, "s", c.turn)
				if err != nil {
					t.Fatal(err)
				}
				if b.ID == "s" || !strings.HasPrefix(b.ID, "session_") || b.RuntimeID != orig.RuntimeID || b.Workspace != "/w" || b.Agent != "orca" {
					t.Errorf("before %s: the branch %+v", c.turn, b)
				}
				got, err := st.Records(ctx, b.ID, store.RecordFilter{IncludeCompacted: true})
				if err != nil || len(got) != c.n {
					t.Fatalf("before %s: %d records, want %d (%v)", c.turn, len(got), c.n, err)
				}
				for i, r := range got {
					o := all[i]
					if r.TurnID != o.TurnID || r.Kind != o.Kind || r.Model != o.Model || !r.Time.Equal(o.Time) || !r.Message.Equal(o.Message) || r.Compacted != c.compacted[i] {
						t.Errorf("before %s: record %d is %+v, the original's %+v (compacted: want %v)", c.turn, i+1, r, o, c.compacted[i])
					}
				}
				if c.n > 0 {
					if m, err := st.Attachment(ctx, b.ID, llm.DigestOf(png)); err != nil || string(m.Data) != string(png) {
						t.Errorf("before %s: the image in the branch: %v", c.turn, err)
					}
				}
			}
			if now, _ := st.Records(ctx, "s", store.RecordFilter{IncludeCompacted: true}); len(now) != len(all) {
				t.Errorf("the original has %d records, had %d", len(now), len(all))
			}
			if _, err := app.BranchBefore(ctx, st, "s", "t9"); !errors.Is(err, app.ErrNoTurn) || !strings.Contains(err.Error(), `session s has no turn "t9"`) {
				t.Errorf("an unknown turn: %v", err)
			}
			if _, err := app.BranchBefore(ctx, st, "nope", "t1"); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "no session nope") {
				t.Errorf("an unknown session: %v", err)
			}
			if ss, _ := st.Sessions(ctx, store.Filter{}); len(ss) != 4 {
				t.Errorf("%d sessions, want the original and 3 branches", len(ss))
			}
		})
	}
}

// Rewinding the conversation with the files, in a real App: the files
// are put back, and the conversation goes on in a branch that gives the
// model the history it had when the turn began — compacted as it was
// then, not as a later compaction left it — with the checkpoints of the
// turns it keeps; the original session keeps every record.
func TestRewindConversation(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	write(t, ws, "a.txt", "before\n")
	model := script.New()
	a, err := app.Open(ctx, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: model, NoSandbox: true, NoMCP: true, Mode: policy.ModeBypass, Checkpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	model.Script("s",
		script.Call("Write", map[string]string{"file_path": "early.txt", "content": "early\n"}), script.Text("wrote it"),
		script.Text("a2"), script.Text("a3"),
		script.Call("Bash", map[string]string{"command": "echo after > a.txt && echo made > b.txt"}), script.Text("changed"),
		script.Call("Write", map[string]string{"file_path": "c.txt", "content": "c\n"}), script.Text("wrote c"))
	model.Script(script.CompactionRoute("s"), script.Text("the first summary"), script.Text("the second summary"))
	ls, err := a.Session(ctx, app.SessionOptions{ID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(input string) {
		t.Helper()
		if res, err := ls.Run(ctx, input); err != nil || res.Err != nil {
			t.Fatalf("%s: %+v %v", input, res, err)
		}
	}
	run("write early")
	run("q2")
	run("q3")
	run("/compact")
	seen := ls.Transcript() // what the model has when the next turn begins
	run("change a and make b")
	run("/compact")
	run("write c")
	if err := ls.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, rs := a.Store(), a.Checkpoints()
	cps, _ := rs.Checkpoints("s")
	if len(cps) != 3 {
		t.Fatalf("%d checkpoints", len(cps))
	}
	before, _ := st.Records(ctx, "s", store.RecordFilter{IncludeCompacted: true})

	// A path changed since stops it: nothing put back, nothing branched.
	write(t, ws, "c.txt", "the user's\n")
	r, err := app.Rewind(ctx, rs, st, "s", "2", app.RewindOptions{Conversation: true})
	if err != nil || !r.Stopped || r.Branch.ID != "" || len(r.Restored.Conflicts) != 1 || r.Restored.Conflicts[0].Path != "c.txt" {
		t.Fatalf("%+v %v", r, err)
	}
	if ss, _ := st.Sessions(ctx, store.Filter{}); len(ss) != 1 {
		t.Errorf("a rewind that stopped branched: %d sessions", len(ss))
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "after\n" {
		t.Errorf("a rewind that stopped put a.txt back: %q", b)
	}
	// A checkpoint the transcript has no turn of changes nothing.
	rs.Save(rewind.Checkpoint{Session: "s", ID: "turn_ghost", Changes: []rewind.Change{{Path: "a.txt", Before: cps[1].Changes[0].Before, After: cps[1].Changes[0].After}}})
	if _, err := app.Rewind(ctx, rs, st, "s", "turn_ghost", app.RewindOptions{Conversation: true, Force: true}); !errors.Is(err, app.ErrNoTurn) {
		t.Errorf("a turn of no record: %v", err)
	}
	rs.Remove("s", "turn_ghost")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "after\n" {
		t.Errorf("a rewind refused put a.txt back: %q", b)
	}
	if _, err := app.Rewind(ctx, rs, st, "s", "9", app.RewindOptions{Conversation: true}); !errors.Is(err, app.ErrNoCheckpoint) {
		t.Errorf("turn 9: %v", err)
	}

	r, err = app.Rewind(ctx, rs, st, "s", "2", app.RewindOptions{Conversation: true, Force: true})
	if err != nil || r.Stopped || len(r.Undone) != 2 || r.Undone[0].ID != cps[1].ID || !slices.Equal(r.Restored.Paths, []string{"a.txt", "b.txt", "c.txt"}) {
		t.Fatalf("%+v %v", r, err)
	}
	for p, want := range map[string]string{"a.txt": "before\n", "early.txt": "early\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, p)); string(b) != want {
			t.Errorf("%s: %q", p, b)
		}
	}
	for _, p := range []string{"b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	v := app.RewoundOf(r)
	if !v.Rewound || v.Turn != cps[1].ID || v.Branch != r.Branch.ID || v.Branch == "" {
		t.Errorf("%+v", v)
	}

	// The branch: the records before the turn, the model's view as it was.
	cut := slices.IndexFunc(before, func(rec store.Record) bool { return rec.TurnID == cps[1].ID })
	got, _ := st.Records(ctx, r.Branch.ID, store.RecordFilter{IncludeCompacted: true})
	if cut < 0 || len(got) != cut {
		t.Fatalf("the branch has %d records, want the %d before the turn", len(got), cut)
	}
	// The second compaction marked the records of the first one's
	// history too; in the branch they are the model's again.
	if !before[cut-1].Compacted || got[cut-1].Compacted || !got[0].Compacted {
		t.Errorf("compacted: the original's last record before the turn %v, the branch's %v, the branch's first %v", before[cut-1].Compacted, got[cut-1].Compacted, got[0].Compacted)
	}
	now, _ := st.Records(ctx, "s", store.RecordFilter{IncludeCompacted: true})
	if len(now) != len(before) {
		t.Errorf("the original has %d records, had %d", len(now), len(before))
	}
	bls, err := a.Session(ctx, app.SessionOptions{ID: r.Branch.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer bls.Close(ctx)
	if g, w := jsonOf(bls.Transcript()), jsonOf(seen); g != w {
		t.Errorf("the branch gives the model\n%s\nit had\n%s", g, w)
	}
	// The checkpoints: the branch has those of the turns it keeps; the
	// original lost those rewound.
	if b, _ := rs.Checkpoints(r.Branch.ID); len(b) != 1 || b[0].ID != cps[0].ID {
		t.Errorf("the branch's checkpoints: %+v", b)
	}
	if o, _ := rs.Checkpoints("s"); len(o) != 1 || o[0].ID != cps[0].ID {
		t.Errorf("the original's checkpoints: %+v", o)
	}
	// The next turn of the branch: the model sees the first summary, and
	// nothing of the turns rewound.
	model.Script(r.Branch.ID, script.Text("going on"))
	if res, err := bls.Run(ctx, "go on"); err != nil || res.Answer != "going on" {
		t.Fatalf("%+v %v", res, err)
	}
	calls := model.CallsTo(r.Branch.ID)
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	prompt := jsonOf(calls[0].Messages)
	for _, want := range []string{"the first summary", "go on"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("no %q in the branch's prompt: %s", want, prompt)
		}
	}
	for _, not := range []string{"change a", "the second summary", "write c"} {
		if strings.Contains(prompt, not) {
			t.Errorf("%q in the branch's prompt: %s", not, prompt)
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCheckpointsOfTurnsSideBySide: two sessions' turns that run at once
// (as orca serve runs them) keep, each, only the paths their own calls
// named — not the other's, nor what a command changed — and say so; a
// turn alone keeps everything it changed, by commands too.
func TestCheckpointsOfTurnsSideBySide(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
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
	model := script.New().
		Script("a", script.Call("Write", map[string]string{"file_path": "x.txt", "content": "x\n"}), script.Call("Wait", map[string]any{}), script.Text("a done"),
			script.Call("Bash", map[string]string{"command": "echo w > w.txt"}), script.Text("alone")).
		Script("b", script.Call("Bash", map[string]string{"command": "echo y > y.txt"}), script.Call("Write", map[string]string{"file_path": "z.txt", "content": "z\n"}), script.Text("b done"))
	a, err := app.Open(ctx, app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: model, NoMCP: true, NoSandbox: true, Mode: policy.ModeBypass,
		Checkpoints: true, ToolProviders: append(toolset.Default(), tool.Static("wait", wait))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sa, err := a.Session(ctx, app.SessionOptions{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Session(ctx, app.SessionOptions{ID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := sa.Run(ctx, "write x and wait")
		if err == nil {
			err = res.Err
		}
		done <- err
	}()
	<-started
	if res, err := sb.Run(ctx, "write y and z"); err != nil || res.Err != nil {
		t.Fatalf("b: %+v %v", res, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res, err := sa.Run(ctx, "write w"); err != nil || res.Err != nil {
		t.Fatalf("a alone: %+v %v", res, err)
	}
	paths := func(cp rewind.Checkpoint) string {
		var ps []string
		for _, c := range cp.Changes {
			ps = append(ps, c.Path)
		}
		return strings.Join(ps, " ")
	}
	as, _ := a.Checkpoints().Checkpoints("a")
	bs, _ := a.Checkpoints().Checkpoints("b")
	if len(as) != 2 || paths(as[0]) != "x.txt" || !strings.Contains(as[0].Note, "another session's turn ran at the same time") || paths(as[1]) != "w.txt" || as[1].Note != "" {
		t.Errorf("a's checkpoints: %+v", as)
	}
	if len(bs) != 1 || paths(bs[0]) != "z.txt" || bs[0].Note == "" {
		t.Errorf("b's checkpoints: %+v", bs)
	}
	// Rewinding b's turn removes z.txt alone: x.txt (a's) and y.txt stay.
	if _, _, err := app.RewindTo(a.Checkpoints(), "b", "1", false); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"x.txt": true, "y.txt": true, "z.txt": false, "w.txt": true} {
		if _, err := os.Stat(filepath.Join(ws, name)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}
