package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
)

// helperClient is a client whose key comes from a helper that answers
// keys[0], keys[1]… (the last one again after that), counting its runs.
func helperClient(t *testing.T, api *fakeAPI, runs *atomic.Int32, keys ...string) *anthropic.Client {
	t.Helper()
	t.Setenv(anthropic.AuthTokenEnv, "")
	t.Setenv(anthropic.APIKeyEnv, "")
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	helper := func(ctx context.Context) (string, error) {
		n := int(runs.Add(1)) - 1
		return keys[min(n, len(keys)-1)] + "\n", nil
	}
	c, err := anthropic.New(anthropic.HTTPClient(hc), anthropic.BaseURL(api.URL), anthropic.KeyFunc(helper, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A key helper's key (Claude Code's apiKeyHelper) goes in X-Api-Key and
// Authorization: Bearer, asked for once while it lives, and asked for
// again when the API refuses it: the refused request is sent once more,
// with the new key.
func TestKeyHelper(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("one")}, answer{err: llm.ErrAuthentication}, answer{resp: textResponse("two")})
	var runs atomic.Int32
	c := helperClient(t, api, &runs, "sk-first", "sk-second")
	if got, err := c.Generate(t.Context(), userRequest("hi"), nil); err != nil || got.Message.Text() != "one" {
		t.Fatalf("first call: %+v, %v", got, err)
	}
	// The second request is refused (401): the helper is asked again,
	// and the request goes again with its new key.
	if got, err := c.Generate(t.Context(), userRequest("again"), nil); err != nil || got.Message.Text() != "two" {
		t.Fatalf("second call: %+v, %v", got, err)
	}
	if n := runs.Load(); n != 2 || api.requests() != 3 {
		t.Errorf("the helper ran %d times for %d requests, want 2 for 3", n, api.requests())
	}
	for i, want := range []string{"sk-first", "sk-first", "sk-second"} {
		h := api.headers[i]
		if h.Get("X-Api-Key") != want || h.Get("Authorization") != "Bearer "+want {
			t.Errorf("request %d: X-Api-Key %q, Authorization %q; want %s", i, h.Get("X-Api-Key"), h.Get("Authorization"), want)
		}
	}
	if body := api.body(t, 2); len(body.Messages) != 1 {
		t.Errorf("the request sent again has %d messages", len(body.Messages))
	}
}

// A refused key the helper gives again is refused: the 401 is the answer
// (an authentication error, which is not tried again).
func TestKeyHelperSameKeyRefused(t *testing.T) {
	api := newFakeAPI(t, answer{err: llm.ErrAuthentication})
	var runs atomic.Int32
	c := helperClient(t, api, &runs, "sk-revoked")
	_, err := c.Generate(t.Context(), userRequest("hi"), nil)
	if !errors.Is(err, llm.ErrAuthentication) || runs.Load() != 2 || api.requests() != 1 {
		t.Errorf("err %v after %d helper runs and %d requests; want an authentication error, 2 runs, 1 request", err, runs.Load(), api.requests())
	}
}

// A helper that fails, prints nothing, or prints what cannot be a key (two
// lines, a control character) fails the call as an authentication error
// that says so, not tried again; nothing is sent.
func TestKeyHelperFails(t *testing.T) {
	t.Setenv(anthropic.AuthTokenEnv, "")
	t.Setenv(anthropic.APIKeyEnv, "")
	api := newFakeAPI(t, answer{resp: textResponse("never")})
	for _, tc := range []struct {
		name string
		fn   func(context.Context) (string, error)
		want string
	}{
		{"fails", func(context.Context) (string, error) {
			return "", fmt.Errorf("exit status 1: vault: permission denied")
		}, "vault: permission denied"},
		{"prints nothing", func(context.Context) (string, error) { return " \n", nil }, "printed no key"},
		{"prints two lines", func(context.Context) (string, error) { return "sk-one\nsecond line\n", nil }, "it printed 2 lines"},
		{"prints an escape", func(context.Context) (string, error) { return "sk-\x1b[31mred", nil }, "control character"},
	} {
		c, err := anthropic.New(anthropic.BaseURL(api.URL), anthropic.KeyFunc(tc.fn, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Generate(t.Context(), userRequest("hi"), nil)
		if !errors.Is(err, llm.ErrAuthentication) || !strings.Contains(err.Error(), "API key helper") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if api.requests() != 0 {
		t.Errorf("%d requests went without a key", api.requests())
	}
}
