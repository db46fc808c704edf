package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// KeyFunc makes fn the source of the API key when neither APIKey,
// $ANTHROPIC_AUTH_TOKEN nor $ANTHROPIC_API_KEY gives one: Claude Code's
// apiKeyHelper. fn is asked before the first request, again once ttl has
// passed since it answered (0: never again), and at once when the API
// refuses a request's key (401): the request is then sent once more, with
// the new key if fn gives another. The key is what fn printed, trimmed:
// one line, without control characters. The key goes as Claude Code sends a
// helper's: in both X-Api-Key and Authorization: Bearer. A failure of fn
// fails the request as an authentication error that says so.
func KeyFunc(fn func(ctx context.Context) (string, error), ttl time.Duration) Option {
	return func(c *config) { c.keys = &keySource{fn: fn, ttl: ttl, now: time.Now} }
}

// keySource is a KeyFunc's key, kept for its time to live.
type keySource struct {
	fn  func(ctx context.Context) (string, error)
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	key string
	at  time.Time // when fn gave key
}

// KeyError is a failure of the function KeyFunc gave.
type KeyError struct{ Err error }

func (e *KeyError) Error() string { return "anthropic: the API key helper: " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// get returns the key, asking fn for one when there is none, when it has
// lived its ttl, or when it is stale (the key a request was refused with,
// "" for none) and no other request has replaced it since.
func (k *keySource) get(ctx context.Context, stale string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fresh := k.key != "" && (k.ttl <= 0 || k.now().Sub(k.at) < k.ttl)
	if fresh && (stale == "" || k.key != stale) {
		return k.key, nil
	}
	key, err := k.fn(ctx)
	if err != nil {
		return "", &KeyError{Err: err}
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", &KeyError{Err: errors.New("it printed no key")}
	}
	if n := strings.Count(key, "\n") + 1; n > 1 {
		return "", &KeyError{Err: fmt.Errorf("it printed %d lines: a key is one line", n)}
	}
	if i := strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return "", &KeyError{Err: fmt.Errorf("the key it printed has a control character (%q at byte %d)", key[i], i)}
	}
	k.key, k.at = key, k.now()
	return key, nil
}

// middleware sets each request's key, and sends a request the API refused
// for its key once more with a new one.
func (k *keySource) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	key, err := k.get(req.Context(), "")
	if err != nil {
		return nil, err
	}
	setKey(req, key)
	resp, err := next(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.GetBody == nil {
		return resp, err
	}
	fresh, err := k.get(req.Context(), key)
	if err != nil || fresh == key {
		// The helper failed, or gave the key refused: the 401 stands.
		return resp, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return resp, nil
	}
	resp.Body.Close()
	again := req.Clone(req.Context())
	again.Body = body
	setKey(again, fresh)
	return next(again)
}

func setKey(req *http.Request, key string) {
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Authorization", fmt.Sprintf("Bearer %s", key))
}
