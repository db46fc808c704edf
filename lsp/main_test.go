package lsp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// server's connection, or the wait for its process.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
