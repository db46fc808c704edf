package agent_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// No Claude Code folder but the tests' own.
	os.Setenv("CLAUDE_CONFIG_DIR", "/nonexistent/orca-tests/claude")
	goleak.VerifyTestMain(m)
}
