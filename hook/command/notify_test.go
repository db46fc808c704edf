package command_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/hook/command"
)

func permissionNote() hook.Notification {
	c := common()
	c.PermissionMode = "accept-edits"
	c.TranscriptPath = "/ws/.orca/transcripts/s-1.jsonl"
	return hook.Notification{Common: c, Type: hook.NotifyPermission, Message: "orca needs your permission to use Bash", Title: "orca"}
}

// A Notifier runs the Notification entries whose matcher selects the
// notification's type, each with the notification on stdin in Claude
// Code's shape; Close waits for them, and after it nothing runs. A run
// that fails is reported with the entry's name, and the others go on.
func TestNotifierRunsTheEntries(t *testing.T) {
	ws := t.TempDir()
	out := filepath.Join(ws, "heard.json")
	writeScript(t, ws, "hear.sh", `sleep 0.2; cat > "`+out+`"`)
	specs := []command.Spec{
		{Event: "Notification", Matcher: "permission_prompt|idle_prompt", Command: "./hear.sh", File: "s.json", Key: "hooks.Notification[0].hooks[0]"},
		{Event: "Notification", Matcher: "idle_prompt", Command: "touch idle", File: "s.json", Key: "hooks.Notification[1].hooks[0]"},
		{Event: "Notification", Command: "echo no >&2; exit 3", File: "s.json", Key: "hooks.Notification[2].hooks[0]"},
		{Event: "PreToolUse", Command: "touch pre", File: "s.json", Key: "hooks.PreToolUse[0].hooks[0]"},
	}
	var mu sync.Mutex
	var failed []string
	n, err := command.NewNotifier(specs, ws, func(note hook.Notification, handler string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, note.SessionID+" "+handler+": "+err.Error())
	})
	if err != nil || n == nil {
		t.Fatalf("NewNotifier = %v, %v", n, err)
	}
	n.Notify(permissionNote())
	n.Close() // waits for hear.sh's sleep
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the permission_prompt entry did not run (or Close did not wait for it): %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("stdin %q: %v", data, err)
	}
	for k, want := range map[string]any{
		"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "orca needs your permission to use Bash",
		"title": "orca", "session_id": "s-1", "cwd": "/ws", "permission_mode": "acceptEdits", "transcript_path": "/ws/.orca/transcripts/s-1.jsonl",
	} {
		if got[k] != want {
			t.Errorf("stdin %s = %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got["hook"]; ok {
		t.Errorf("stdin names a hook of orca's: %v", got["hook"])
	}
	for _, f := range []string{"idle", "pre"} {
		if exists(filepath.Join(ws, f)) {
			t.Errorf("the entry that makes %s ran", f)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "s-1 s.json#Notification[2].hooks[0]: ") || !strings.Contains(failed[0], "status 3") || !strings.Contains(failed[0], "no") {
		t.Errorf("failures %q, want the third entry's status 3 and its stderr", failed)
	}

	os.Remove(out)
	n.Notify(permissionNote())
	n.Close()
	if exists(out) {
		t.Error("Notify after Close ran an entry")
	}
}

// An http entry gets the same JSON, posted.
func TestNotifierPostsHTTPEntries(t *testing.T) {
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
	}))
	defer srv.Close()
	n, err := command.NewNotifier([]command.Spec{{Event: "Notification", Type: "http", URL: srv.URL + "/notify", File: "s.json", Key: "hooks.Notification[0].hooks[0]"}}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n.Notify(permissionNote())
	n.Close()
	select {
	case b := <-bodies:
		if !strings.Contains(string(b), `"notification_type":"permission_prompt"`) {
			t.Errorf("posted %s", b)
		}
	default:
		t.Fatal("nothing was posted")
	}
}

// No Notification entries: no Notifier. A prompt entry is refused, named.
func TestNewNotifier(t *testing.T) {
	if n, err := command.NewNotifier([]command.Spec{{Event: "Stop", Command: "true"}}, t.TempDir(), nil); n != nil || err != nil {
		t.Errorf("without Notification entries: %v, %v", n, err)
	}
	_, err := command.NewNotifier([]command.Spec{{Event: "Notification", Type: "prompt", Prompt: "ok?", File: "s.json", Key: "hooks.Notification[0].hooks[0]"}}, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "s.json: hooks.Notification[0].hooks[0]: a prompt hook cannot answer a Notification") {
		t.Errorf("a prompt entry: %v", err)
	}
}

// StopFailure entries run for a failed turn's notification only, their
// matcher matched against the error type, with Claude Code's StopFailure
// input; Notification entries do not run for it.
func TestNotifierRunsStopFailureEntries(t *testing.T) {
	ws := t.TempDir()
	writeScript(t, ws, "save.sh", `cat > "$1"`)
	specs := []command.Spec{
		{Event: "StopFailure", Matcher: "rate_limit|server_error", Command: "./save.sh rate.json", File: "s.json", Key: "hooks.StopFailure[0].hooks[0]"},
		{Event: "StopFailure", Matcher: "authentication_failed", Command: "./save.sh auth.json", File: "s.json", Key: "hooks.StopFailure[1].hooks[0]"},
		{Event: "Notification", Command: "./save.sh note.json", File: "s.json", Key: "hooks.Notification[0].hooks[0]"},
	}
	n, err := command.NewNotifier(specs, ws, func(_ hook.Notification, handler string, err error) { t.Errorf("%s: %v", handler, err) })
	if err != nil {
		t.Fatal(err)
	}
	note := hook.Notification{Common: common(), Type: hook.NotifyStopFailure, Title: "orca", Message: "orca's turn failed: llm: rate_limited: slow down",
		ErrorType: "rate_limit", ErrorMessage: "llm: rate_limited: slow down"}
	n.Notify(note)
	n.Close()
	got := savedInput(t, ws, "rate.json")
	for k, want := range map[string]any{"hook_event_name": "StopFailure", "error_type": "rate_limit", "error_message": "llm: rate_limited: slow down", "session_id": "s-1", "cwd": "/ws"} {
		if got[k] != want {
			t.Errorf("stdin %s = %v, want %v", k, got[k], want)
		}
	}
	for _, k := range []string{"notification_type", "message", "title", "hook"} {
		if _, ok := got[k]; ok {
			t.Errorf("a StopFailure's stdin has %s", k)
		}
	}
	for _, f := range []string{"auth.json", "note.json"} {
		if exists(filepath.Join(ws, f)) {
			t.Errorf("the entry that saves %s ran", f)
		}
	}
}

// savedInput is the JSON an entry saved in ws/name (save.sh).
func savedInput(t *testing.T, ws, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, name))
	if err != nil {
		t.Fatalf("the entry that saves %s did not run: %v", name, err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// PostCompact entries run for a compaction's notification only, their
// matcher matched against the trigger (recovery, the compaction a prompt
// too long forces, as auto too), with Claude Code's PostCompact input:
// the trigger and the summary.
func TestNotifierRunsPostCompactEntries(t *testing.T) {
	ws := t.TempDir()
	writeScript(t, ws, "save.sh", `cat > "$1"`)
	specs := []command.Spec{
		{Event: "PostCompact", Matcher: "auto", Command: "./save.sh auto.json", File: "s.json", Key: "hooks.PostCompact[0].hooks[0]"},
		{Event: "PostCompact", Matcher: "manual", Command: "./save.sh manual.json", File: "s.json", Key: "hooks.PostCompact[1].hooks[0]"},
		{Event: "Notification", Command: "./save.sh note.json", File: "s.json", Key: "hooks.Notification[0].hooks[0]"},
	}
	n, err := command.NewNotifier(specs, ws, func(_ hook.Notification, handler string, err error) { t.Errorf("%s: %v", handler, err) })
	if err != nil {
		t.Fatal(err)
	}
	n.Notify(hook.Notification{Common: common(), Type: hook.NotifyPostCompact, Trigger: "recovery", CompactSummary: "The user asked for a parser."})
	n.Close()
	got := savedInput(t, ws, "auto.json")
	for k, want := range map[string]any{"hook_event_name": "PostCompact", "trigger": "recovery", "compact_summary": "The user asked for a parser.", "session_id": "s-1", "cwd": "/ws"} {
		if got[k] != want {
			t.Errorf("stdin %s = %v, want %v", k, got[k], want)
		}
	}
	for _, k := range []string{"notification_type", "message", "title", "hook", "error_type"} {
		if _, ok := got[k]; ok {
			t.Errorf("a PostCompact's stdin has %s", k)
		}
	}
	for _, f := range []string{"manual.json", "note.json"} {
		if exists(filepath.Join(ws, f)) {
			t.Errorf("the entry that saves %s ran", f)
		}
	}
}

// Close does not wait for a hung entry past closeWait: it stops it, with
// the processes it started, and reports it as failed; an entry that ends
// in time is not touched.
func TestNotifierCloseStopsHungEntries(t *testing.T) {
	defer command.SetCloseWait(300 * time.Millisecond)()
	ws := t.TempDir()
	out := filepath.Join(ws, "quick")
	specs := []command.Spec{
		// As notify-send does when no notification daemon answers.
		{Event: "Notification", Command: "sleep 60 & wait", File: "s.json", Key: "hooks.Notification[0].hooks[0]"},
		{Event: "Notification", Command: "cat > " + out, File: "s.json", Key: "hooks.Notification[1].hooks[0]"},
	}
	var mu sync.Mutex
	var failed []string
	n, err := command.NewNotifier(specs, ws, func(note hook.Notification, handler string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, handler+": "+err.Error())
	})
	if err != nil || n == nil {
		t.Fatalf("NewNotifier = %v, %v", n, err)
	}
	n.Notify(permissionNote())
	n.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || !strings.Contains(failed[0], "Notification[0].hooks[0]") || !strings.Contains(failed[0], "stopped: it was still running 300ms after orca began to close") {
		t.Errorf("failures %q; want the hung entry's, stopped", failed)
	}
	if data, err := os.ReadFile(out); err != nil || !strings.Contains(string(data), "permission_prompt") {
		t.Errorf("the quick entry: %q, %v", data, err)
	}
}
