package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/store"
)

// WorkspaceIDFile holds the id that names a workspace in runtime ids,
// relative to the workspace: a workspace moved or copied elsewhere keeps
// it, and so keeps its sessions (agent.Collaborators.WorkspaceID).
const WorkspaceIDFile = ".orca/workspace-id"

// ReadWorkspaceID returns the workspace's id, or "" if it has none yet.
func ReadWorkspaceID(root string) (string, error) {
	p, err := statePath(root, WorkspaceIDFile)
	if err != nil {
		return "", fmt.Errorf("workspace id: %w", err)
	}
	return readWorkspaceID(p)
}

// readWorkspaceID reads the workspace id file at p ("" if there is none).
func readWorkspaceID(p string) (string, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("workspace id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" || strings.ContainsAny(id, " \t\n/") || len(id) > 64 {
		return "", fmt.Errorf("workspace id: %s holds %q, not an id (delete it to get a new one)", WorkspaceIDFile, b)
	}
	return id, nil
}

// workspaceID returns the workspace's id, making one if it has none.
func workspaceID(root string) (string, error) {
	p, err := statePath(root, WorkspaceIDFile)
	if err != nil {
		return "", fmt.Errorf("workspace id: %w", err)
	}
	id, err := readWorkspaceID(p)
	if err != nil || id != "" {
		return id, err
	}
	b := make([]byte, 8)
	rand.Read(b)
	id = "ws_" + hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("workspace id: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return readWorkspaceID(p) // another process made it first
	}
	if err != nil {
		return "", fmt.Errorf("workspace id: %w", err)
	}
	_, err = f.WriteString(id + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("workspace id: %w", err)
	}
	// The first of orca's state in the folder (with a store elsewhere,
	// PostgreSQL's or a program's, the only one): keep it out of git.
	writeStateIgnore(filepath.Dir(p))
	return id, nil
}

// Opens says whether agent's runtime over the workspace whose id is wsID
// (root if none) opens s — its own sessions, and those it adopts: the
// agent's sessions that an orca without workspace ids started (their
// runtime id came from the workspace's path then) — and why not.
func Opens(agentName, wsID, root string, s store.Session) (bool, string) {
	want := agent.RuntimeID(agentName, cmpOr(wsID, root))
	switch {
	case s.RuntimeID == want, legacy(agentName, s):
		return true, ""
	case s.Agent != agentName:
		return false, fmt.Sprintf("it is agent %s's", s.Agent)
	}
	return false, fmt.Sprintf("it belongs to runtime %s, not this workspace's %s (it comes from a store shared with another workspace, or from another workspace's copy)", s.RuntimeID, want)
}

// legacy reports whether s is agentName's and its runtime id is the one an
// orca without workspace ids gave it (from the path of its workspace).
func legacy(agentName string, s store.Session) bool {
	return s.Agent == agentName && s.Workspace != "" && s.RuntimeID == agent.RuntimeID(agentName, s.Workspace)
}

// adopt moves the agent's legacy sessions in st to the runtime rtID.
func adopt(ctx context.Context, st store.Store, agentName, rtID string) error {
	ss, err := st.Sessions(ctx, store.Filter{})
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, s := range ss {
		if s.RuntimeID == rtID || done[s.RuntimeID] || !legacy(agentName, s) {
			continue
		}
		done[s.RuntimeID] = true
		if _, err := st.RebindRuntime(ctx, s.RuntimeID, rtID); err != nil {
			return err
		}
	}
	return nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
