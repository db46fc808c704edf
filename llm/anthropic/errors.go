package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/orca-agent/orca/llm"
)

// classify turns a failure of a call into the error Generate returns: one
// wrapping ctx.Err() once ctx is done, an *llm.Error otherwise.
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("anthropic: %w", ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return apiError(apiErr)
	}
	if ke := (*KeyError)(nil); errors.As(err, &ke) {
		// No key to send: another try would ask the helper again, to no end.
		return &llm.Error{Kind: llm.KindAuthentication, Message: ke.Error(), Err: err}
	}
	if te, ok := tokenError(err); ok {
		return te
	}
	// No answer from the API, or a stream cut short: worth another try.
	return &llm.Error{Kind: llm.KindServer, Message: err.Error(), Err: err}
}

// apiError classifies an error the API reported, by HTTP status, or by
// error type for an error event inside a stream (whose status is 200).
func apiError(e *sdk.Error) *llm.Error {
	out := &llm.Error{Message: e.Message, Err: e}
	if out.Message == "" {
		out.Message = strings.TrimSpace(e.RawJSON())
	}
	typ := sdk.ErrorType(e.Type())
	status := e.StatusCode
	if status >= 400 {
		out.StatusCode = status
		if out.Message == "" {
			out.Message = http.StatusText(status)
		}
	}
	switch {
	case status == http.StatusTooManyRequests, status < 400 && typ == sdk.ErrorTypeRateLimitError:
		out.Kind = llm.KindRateLimited
		if e.Response != nil {
			out.RetryAfter = llm.RetryAfter(e.Response.Header, time.Now())
		}
	case status == 529, status < 400 && typ == sdk.ErrorTypeOverloadedError:
		out.Kind = llm.KindOverloaded
	case (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status < 400) && promptTooLong(out.Message):
		out.Kind = llm.KindPromptTooLong
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status < 400 && (typ == sdk.ErrorTypeAuthenticationError || typ == sdk.ErrorTypePermissionError):
		out.Kind = llm.KindAuthentication
	case status == http.StatusRequestTimeout, status >= 500,
		status < 400 && (typ == sdk.ErrorTypeAPIError || typ == sdk.ErrorTypeTimeoutError || typ == ""):
		out.Kind = llm.KindServer
	default:
		out.Kind = llm.KindInvalidRequest
	}
	return out
}

// promptTooLong reports whether an API message says the prompt does not
// fit the context window (the ways the API has said it).
func promptTooLong(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "exceed context limit")
}
