package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/orca-agent/orca/llm"
)

// classify turns an SDK error into an *llm.Error (see the package
// documentation); the context's errors stay theirs.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err())) {
		return fmt.Errorf("gemini: %w", ctx.Err())
	}
	var api genai.APIError
	var apiPtr *genai.APIError
	switch {
	case errors.As(err, &api):
	case errors.As(err, &apiPtr) && apiPtr != nil:
		api = *apiPtr
	default:
		// Not the API's answer: the connection failed, or the stream was
		// not what the API sends.
		return &llm.Error{Kind: llm.KindServer, Message: err.Error(), Err: err}
	}
	out := &llm.Error{StatusCode: api.Code, Message: strings.TrimSpace(api.Message), Err: err}
	if out.Message == "" {
		out.Message = cmpOr(api.Status, http.StatusText(api.Code))
	}
	switch {
	case api.Code == http.StatusTooManyRequests || api.Status == "RESOURCE_EXHAUSTED":
		out.Kind = llm.KindRateLimited
		out.RetryAfter = retryDelay(api.Details)
	case api.Code == http.StatusServiceUnavailable || api.Status == "UNAVAILABLE":
		out.Kind = llm.KindOverloaded
	case api.Code == http.StatusBadRequest && promptTooLong(api.Message):
		out.Kind = llm.KindPromptTooLong
	case api.Code == http.StatusUnauthorized || api.Code == http.StatusForbidden || api.Status == "UNAUTHENTICATED" || api.Status == "PERMISSION_DENIED":
		out.Kind = llm.KindAuthentication
	case api.Code == http.StatusBadRequest && strings.Contains(api.Message, "API key not valid"):
		out.Kind = llm.KindAuthentication
	case api.Code >= 500 || api.Code == http.StatusRequestTimeout:
		out.Kind = llm.KindServer
	default:
		out.Kind = llm.KindInvalidRequest
	}
	return out
}

// promptTooLong reports whether a 400's message says the input exceeds the
// model's tokens ("The input token count (1200000) exceeds the maximum
// number of tokens allowed (1048576).").
func promptTooLong(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "input token count") && strings.Contains(m, "exceeds") ||
		strings.Contains(m, "exceeds the maximum number of tokens")
}

// retryDelay reads google.rpc.RetryInfo's retryDelay ("12s") from an
// error's details; zero if there is none.
func retryDelay(details []map[string]any) time.Duration {
	for _, det := range details {
		if t, _ := det["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		if s, ok := det["retryDelay"].(string); ok {
			if v, err := time.ParseDuration(s); err == nil {
				return v
			}
		}
	}
	return 0
}
