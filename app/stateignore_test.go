package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/store"
)

// With a store elsewhere (a program's, PostgreSQL's), the workspace id is
// the first of orca's state in .orca: making it writes .orca/.gitignore.
func TestWorkspaceIDWritesStateIgnore(t *testing.T) {
	ws := t.TempDir()
	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: "-", ClaudeDir: "-", Client: script.New(), Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := os.Stat(filepath.Join(ws, filepath.FromSlash(app.WorkspaceIDFile))); err != nil {
		t.Fatalf("no workspace id: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(ws, ".orca", ".gitignore")); err != nil || string(got) != app.StateIgnore {
		t.Errorf(".orca/.gitignore = %q, %v", got, err)
	}
}
