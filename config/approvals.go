package config

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/orca-agent/orca/policy"
)

// ApprovalsFile is the approval store's file, relative to the
// configuration folder.
const ApprovalsFile = "orca/approvals.json"

// ApprovalStore keeps the "always allow" approvals a person gives (the
// rules approved for a session, or for every session of an agent) in the
// user's configuration folder, by workspace — never in the workspace,
// where a cloned repository could bring approvals of its own, and where
// the agent's commands could add some. It implements agent.Approvals.
//
// The file is JSON:
//
//	{"workspaces": {"/abs/path": {"<runtime id>": {"agent": ["Bash(go test:*)"], "sessions": {"<session id>": ["Edit(src/**)"]}}}}}
//
// with the workspace's canonical path (see Canonical). Writes replace the
// file atomically under a lock, as the trust store's do.
type ApprovalStore struct {
	path      string
	workspace string
}

// NewApprovalStore returns the approvals of the workspace folder
// workspace, kept in the configuration folder configDir (see Dir).
func NewApprovalStore(configDir, workspace string) (*ApprovalStore, error) {
	real, err := canonical(workspace)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	return &ApprovalStore{path: filepath.Join(configDir, filepath.FromSlash(ApprovalsFile)), workspace: real}, nil
}

// Path returns the store's file.
func (s *ApprovalStore) Path() string { return s.path }

type approvalsFile struct {
	Workspaces map[string]map[string]*runtimeApprovals `json:"workspaces"`
}

type runtimeApprovals struct {
	Agent    []string            `json:"agent,omitempty"`
	Sessions map[string][]string `json:"sessions,omitempty"`
}

// Grant stores rules with scope policy.ScopeSession (for sessionID) or
// policy.ScopeAgent (for every session of runtimeID).
func (s *ApprovalStore) Grant(_ context.Context, runtimeID, sessionID string, scope policy.Scope, rules []string) error {
	if scope != policy.ScopeAgent && scope != policy.ScopeSession {
		return fmt.Errorf("approvals: scope %q is not stored", scope)
	}
	return lockedUpdate(s.path, "approvals", s.read, func(f *approvalsFile) bool {
		if f.Workspaces == nil {
			f.Workspaces = map[string]map[string]*runtimeApprovals{}
		}
		ws := f.Workspaces[s.workspace]
		if ws == nil {
			ws = map[string]*runtimeApprovals{}
			f.Workspaces[s.workspace] = ws
		}
		ra := ws[runtimeID]
		if ra == nil {
			ra = &runtimeApprovals{}
			ws[runtimeID] = ra
		}
		add := func(list []string) ([]string, bool) {
			changed := false
			for _, r := range rules {
				if !slices.Contains(list, r) {
					list, changed = append(list, r), true
				}
			}
			return list, changed
		}
		var changed bool
		if scope == policy.ScopeAgent {
			ra.Agent, changed = add(ra.Agent)
		} else {
			if ra.Sessions == nil {
				ra.Sessions = map[string][]string{}
			}
			ra.Sessions[sessionID], changed = add(ra.Sessions[sessionID])
		}
		return changed
	})
}

// Rules returns the rules that reach sessionID of runtimeID. A store that
// cannot be read is an error (the approver asks again).
func (s *ApprovalStore) Rules(_ context.Context, runtimeID, sessionID string) ([]string, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	ra := f.Workspaces[s.workspace][runtimeID]
	if ra == nil {
		return nil, nil
	}
	return append(slices.Clone(ra.Agent), ra.Sessions[sessionID]...), nil
}

// Granted returns the rules granted for every session of runtimeID
// (agent) and for sessionID (session); see agent.GrantEditor.
func (s *ApprovalStore) Granted(_ context.Context, runtimeID, sessionID string) (agent, session []string, err error) {
	f, err := s.read()
	if err != nil {
		return nil, nil, err
	}
	ra := f.Workspaces[s.workspace][runtimeID]
	if ra == nil {
		return nil, nil, nil
	}
	return slices.Clone(ra.Agent), slices.Clone(ra.Sessions[sessionID]), nil
}

// Revoke removes rule from the rules granted for every session of
// runtimeID and for sessionID, and reports whether it was there.
func (s *ApprovalStore) Revoke(_ context.Context, runtimeID, sessionID, rule string) (bool, error) {
	removed := false
	err := lockedUpdate(s.path, "approvals", s.read, func(f *approvalsFile) bool {
		ra := f.Workspaces[s.workspace][runtimeID]
		if ra == nil {
			return false
		}
		drop := func(r string) bool { return r == rule }
		a, n := len(ra.Agent), len(ra.Sessions[sessionID])
		ra.Agent = slices.DeleteFunc(ra.Agent, drop)
		if n > 0 {
			ra.Sessions[sessionID] = slices.DeleteFunc(ra.Sessions[sessionID], drop)
			if len(ra.Sessions[sessionID]) == 0 {
				delete(ra.Sessions, sessionID)
			}
		}
		removed = len(ra.Agent) < a || len(ra.Sessions[sessionID]) < n
		return removed
	})
	return removed, err
}

// read reads the store; a store that does not exist is empty.
func (s *ApprovalStore) read() (*approvalsFile, error) {
	return readJSON[approvalsFile](s.path, "approvals")
}
