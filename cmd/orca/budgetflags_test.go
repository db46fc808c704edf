package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A --budget-* flag that is no limit is a usage error naming it, before
// anything runs: no session is started.
func TestBudgetFlagErrors(t *testing.T) {
	sc := writeScript(t, `{"text": "never"}`)
	for flag, says := range map[string]string{
		"--budget-tokens=-1":     "--budget-tokens must not be negative, not -1",
		"--budget-cost=NaN":      "--budget-cost must be a number of dollars, 0 or more, not NaN",
		"--budget-cost=-0.5":     "--budget-cost must be a number of dollars, 0 or more, not -0.5",
		"--budget-tool-calls=-3": "--budget-tool-calls must not be negative, not -3",
		"--budget-time=-1s":      "--budget-time must not be negative, not -1s",
	} {
		ws := t.TempDir()
		_, stderr, code := orca(t, t.Context(), "", "run", "--script", sc, "-w", ws, flag, "go")
		if code != exitUsage || !strings.Contains(stderr, says) {
			t.Errorf("%s: exit %d, %s", flag, code, stderr)
		}
		if fileExists(filepath.Join(ws, ".orca", "orca.db")) {
			t.Errorf("%s: a session store was made", flag)
		}
	}
}
