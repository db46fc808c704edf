package responses

import (
	"cmp"
	"context"
	"fmt"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/openai/internal/apierr"
)

// classify turns a failure of a call into the error Generate returns: one
// wrapping ctx.Err() once ctx is done, an *llm.Error otherwise (see
// apierr.Classify, shared with llm/openai).
func classify(ctx context.Context, err error) error {
	return apierr.Classify(ctx, "openai responses", err)
}

// errorBodies is apierr.ErrorBodies (see there).
var errorBodies = apierr.ErrorBodies

// streamError is the error of an error event whose code and message stand
// at the top of the event ({"type": "error", "code", "message"}), or of a
// failed response.
func streamError(code, msg string) *llm.Error {
	if msg == "" {
		msg = cmp.Or(code, "the response failed")
	}
	return &llm.Error{Kind: apierr.KindOf(0, code, "", msg), Message: msg, Err: fmt.Errorf("openai responses: error event %q: %s", code, msg)}
}
