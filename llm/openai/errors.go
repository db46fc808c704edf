package openai

import (
	"context"

	"github.com/orca-agent/orca/llm/openai/internal/apierr"
)

// classify turns a failure of a call into the error Generate returns: one
// wrapping ctx.Err() once ctx is done, an *llm.Error otherwise (see
// apierr.Classify, shared with llm/openai/responses).
func classify(ctx context.Context, err error) error { return apierr.Classify(ctx, "openai", err) }

// errorBodies is apierr.ErrorBodies (see there).
var errorBodies = apierr.ErrorBodies
