package httpguard_test

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/internal/httpguard"
)

// A request is admitted when it is sent to a loopback name or an allowed
// host and comes from no page, its server's own or an allowed origin.
func TestGuard(t *testing.T) {
	g := httpguard.Guard{Hosts: []string{"orca.internal", "box:8080"}, Origins: []string{"https://ide.example"}}
	for _, c := range []struct {
		host, origin, site string
		want               error
	}{
		{host: "127.0.0.1:4748"},
		{host: "[::1]:4748"},
		{host: "localhost"},
		{host: "127.8.9.10"},
		{host: "orca.internal:1"},
		{host: "box:8080"},
		{host: "box:8081", want: httpguard.ErrHost},
		{host: "evil.example", want: httpguard.ErrHost},
		{host: "localhost.evil.example:4748", want: httpguard.ErrHost},
		{host: "127.0.0.1:4748", origin: "http://127.0.0.1:4748"},
		{host: "127.0.0.1:4748", origin: "https://ide.example"},
		{host: "127.0.0.1:4748", origin: "http://127.0.0.1:9999", want: httpguard.ErrOrigin},
		{host: "127.0.0.1:4748", origin: "null", want: httpguard.ErrOrigin},
		{host: "127.0.0.1:4748", site: "cross-site", want: httpguard.ErrOrigin},
		{host: "127.0.0.1:4748", site: "same-origin"},
	} {
		r := httptest.NewRequest("POST", "http://x/mcp", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		err := g.Check(r)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Host %q, Origin %q, Sec-Fetch-Site %q: %v, want %v", c.host, c.origin, c.site, err, c.want)
		}
	}
}

// The token comes from the variable, else from its file, made there the
// first time for the user alone and the same on the next start.
func TestToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca", "a-token")
	none := func(string) string { return "" }
	tok, made, err := httpguard.Token("T", path, none)
	if err != nil || !made || len(tok) != 48 {
		t.Fatalf("first: %q %v %v", tok, made, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file: %v %v", fi.Mode(), err)
	}
	if again, made, err := httpguard.Token("T", path, none); again != tok || made || err != nil {
		t.Errorf("second: %q %v %v", again, made, err)
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	if got, made, err := httpguard.Token("T", path, env(" given-0123456789 ")); got != "given-0123456789" || made || err != nil {
		t.Errorf("from the variable: %q %v %v", got, made, err)
	}
	if _, _, err := httpguard.Token("T", path, env("short")); !errors.Is(err, httpguard.ErrShortToken) {
		t.Errorf("a short token: %v", err)
	}
	if !httpguard.Same(tok, tok) || httpguard.Same(tok, tok[:47]) || httpguard.Same("", tok) {
		t.Error("Same")
	}
}
