package llm

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrorKind classifies a provider failure.
type ErrorKind string

// Error kinds. Retryable ones are ErrRateLimited and ErrOverloaded.
const (
	KindPromptTooLong  ErrorKind = "prompt_too_long"
	KindRateLimited    ErrorKind = "rate_limited"
	KindOverloaded     ErrorKind = "overloaded"
	KindAuthentication ErrorKind = "authentication"
	KindInvalidRequest ErrorKind = "invalid_request"
	KindServer         ErrorKind = "server"
)

// Sentinel errors to compare with errors.Is. A *Error of the same kind
// matches its sentinel.
var (
	ErrPromptTooLong  = &Error{Kind: KindPromptTooLong, Message: "prompt is too long"}
	ErrRateLimited    = &Error{Kind: KindRateLimited, Message: "rate limited"}
	ErrOverloaded     = &Error{Kind: KindOverloaded, Message: "overloaded"}
	ErrAuthentication = &Error{Kind: KindAuthentication, Message: "authentication failed"}
	ErrInvalidRequest = &Error{Kind: KindInvalidRequest, Message: "invalid request"}
	ErrServer         = &Error{Kind: KindServer, Message: "server error"}
)

// Error is a classified provider failure.
type Error struct {
	Kind ErrorKind
	// StatusCode is the HTTP status, when there was one.
	StatusCode int
	// Message is the provider's own words.
	Message string
	// RetryAfter is the provider's hint, zero if none.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("llm: %s (status %d): %s", e.Kind, e.StatusCode, msg)
	}
	return fmt.Sprintf("llm: %s: %s", e.Kind, msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same kind, so that
// errors.Is(err, ErrRateLimited) holds for every rate-limit error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

// Retryable reports whether err is worth retrying: rate limits, overload
// and server errors are; everything else (including context errors) is not.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case KindRateLimited, KindOverloaded, KindServer:
		return true
	}
	return false
}

// windowStated finds the context window a provider names when it refuses
// a prompt as too long: Anthropic's "… tokens > 200000 maximum", OpenAI's
// and vLLM's "maximum context length is 128000 tokens", OpenAI's "the
// configured limit of 272000 tokens", Gemini's "tokens allowed (1048576)".
var windowStated = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(\d[\d,]*) maximum|maximum context length is (\d[\d,]*)|limit of (\d[\d,]*) tokens|tokens allowed \((\d[\d,]*)\)`)
})

// StatedWindow returns the context window, in tokens, that err — a
// prompt-too-long refusal — says the model has; 0 when it says none.
func StatedWindow(err error) int64 {
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindPromptTooLong {
		return 0
	}
	m := windowStated().FindStringSubmatch(e.Message)
	for _, g := range m[min(1, len(m)):] {
		if n, err := strconv.ParseInt(strings.ReplaceAll(g, ",", ""), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}
