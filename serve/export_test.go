package serve

import (
	"context"

	"github.com/orca-agent/orca/store"
)

// GoOn is goOn, for the race between a decision posted here and the same
// decision seen in the store.
func (s *Server) GoOn(ctx context.Context, p store.ParkedCall) bool { return s.goOn(ctx, p) }

// Reads returns how many reads of the store the event streams made.
func (s *Server) Reads() int64 { return s.reads.Load() }
