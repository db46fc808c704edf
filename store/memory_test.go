package store_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}
