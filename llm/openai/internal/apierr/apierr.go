// Package apierr classifies the failures of OpenAI's APIs — Chat
// Completions (llm/openai) and Responses (llm/openai/responses), and the
// servers that speak them — as llm's typed errors, one way for both.
package apierr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/orca-agent/orca/llm"
)

// Classify turns a failure of a call into the error Generate returns: one
// wrapping ctx.Err() once ctx is done (its text starting with prefix), an
// *llm.Error otherwise (one already, as it is).
func Classify(ctx context.Context, prefix string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", prefix, ctxErr)
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return le
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		out := &llm.Error{StatusCode: apiErr.StatusCode, Message: apiErr.Message, Err: err}
		if out.Message == "" {
			out.Message = http.StatusText(apiErr.StatusCode)
		}
		out.Kind = KindOf(apiErr.StatusCode, apiErr.Code, apiErr.Type, out.Message)
		if out.Kind == llm.KindRateLimited && apiErr.Response != nil {
			out.RetryAfter = llm.RetryAfter(apiErr.Response.Header, time.Now())
		}
		return out
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		// An error inside a 200 stream: {"error": {"type", "code",
		// "message"}} (Chat Completions' chunk, Responses' error event),
		// or {"error": "…"}.
		var event struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(streamErr.Event.Data, &event)
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(event.Error, &e) != nil {
			_ = json.Unmarshal(event.Error, &e.Message)
		}
		var code string
		_ = json.Unmarshal(e.Code, &code)
		msg := e.Message
		if msg == "" {
			msg = streamErr.Message
		}
		return &llm.Error{Kind: KindOf(0, code, e.Type, msg), Message: msg, Err: err}
	}
	// No answer from the API, or a stream cut short: worth another try.
	return &llm.Error{Kind: llm.KindServer, Message: err.Error(), Err: err}
}

// KindOf classifies an error by HTTP status, or, for an error inside a
// stream (status 0), by its code and type: a code the API names that is not
// a server's says the request was at fault.
func KindOf(status int, code, typ, msg string) llm.ErrorKind {
	switch {
	case code == "insufficient_quota":
		return llm.KindAuthentication // no credit left: waiting does not help
	case status == http.StatusTooManyRequests, status == 0 && (code == "rate_limit_exceeded" || typ == "rate_limit_error"):
		return llm.KindRateLimited
	case status == http.StatusServiceUnavailable, status == 529, status == 0 && (code == "server_overloaded" || typ == "overloaded_error"):
		return llm.KindOverloaded
	case (status == 0 || status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) && PromptTooLong(code, msg):
		return llm.KindPromptTooLong
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == 0 && (typ == "authentication_error" || typ == "permission_error" || code == "invalid_api_key"):
		return llm.KindAuthentication
	case status == http.StatusRequestTimeout, status >= 500,
		status == 0 && typ != "invalid_request_error" && (code == "" || code == "server_error"):
		return llm.KindServer
	}
	return llm.KindInvalidRequest
}

// PromptTooLong reports whether an error says the prompt does not fit the
// model's context window: Chat Completions' "maximum context length", the
// Responses API's "Your input exceeds the context window of this model"
// and "Input tokens exceed the configured limit of 272000 tokens",
// servers' "context length exceeded" and "prompt is too long".
func PromptTooLong(code, msg string) bool {
	m := strings.ToLower(msg)
	return code == "context_length_exceeded" || strings.Contains(m, "context window") ||
		strings.Contains(m, "exceed the configured limit") || strings.Contains(m, "maximum context length") ||
		strings.Contains(m, "context length exceeded") || strings.Contains(m, "prompt is too long")
}

// ErrorBodies is SDK middleware that gives an error response the body the
// SDK decodes, {"error": {"message": …}}, when it has another (a proxy's
// text, Ollama's {"error": "…"}): without it the SDK reports a decoding
// error and the status is lost.
func ErrorBodies(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &probe) != nil || !bytes.HasPrefix(bytes.TrimSpace(probe.Error), []byte("{")) {
		msg := strings.TrimSpace(string(body))
		var s string
		if json.Unmarshal(probe.Error, &s) == nil && s != "" {
			msg = s
		}
		if msg == "" {
			msg = http.StatusText(res.StatusCode)
		}
		body, _ = json.Marshal(map[string]map[string]string{"error": {"message": msg}})
		res.Header.Set("Content-Type", "application/json")
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	return res, nil
}
