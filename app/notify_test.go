package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/hook"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/store"
)

type heardNotes struct {
	mu    sync.Mutex
	notes []hook.Notification
}

func (h *heardNotes) Notify(n hook.Notification) {
	h.mu.Lock()
	h.notes = append(h.notes, n)
	h.mu.Unlock()
}

// Config.Notifier and the settings' Notification hooks both hear that a
// call waits for the user; the App waits for the hook before it closes.
func TestNotifiersBothHear(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	heardFile := filepath.Join(ws, "heard")
	write(t, cfgDir, "orca/settings.json", `{"hooks": {"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": "sleep 0.2; cat > '`+heardFile+`'"}]}]}}`)
	h := &heardNotes{}
	approver := policy.ApproverFunc(func(context.Context, policy.ApprovalRequest) (policy.Approval, error) {
		return policy.Approval{Allow: false, Reason: "no"}, nil
	})
	model := script.New().ScriptAny(script.Call("Write", map[string]string{"file_path": "x.txt", "content": "x"}), script.Text("done"))
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: cfgDir, ClaudeDir: "-", Client: model, Store: store.NewMemory(), Approver: approver, Notifier: h})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Session(t.Context(), app.SessionOptions{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "write x"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if len(h.notes) != 1 || h.notes[0].Type != hook.NotifyPermission || h.notes[0].Message != "orca needs your permission to use Write" || h.notes[0].SessionID != "s1" {
		t.Errorf("Config.Notifier heard %+v", h.notes)
	}
	got, err := os.ReadFile(heardFile)
	if err != nil || !strings.Contains(string(got), `"notification_type":"permission_prompt"`) {
		t.Errorf("the settings' hook heard %q, %v", got, err)
	}
}
