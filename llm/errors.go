package llm

import (
	"errors"
	"fmt"
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
