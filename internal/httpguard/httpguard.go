// Package httpguard is what orca's HTTP servers check before they read a
// request — the Host it was sent to (DNS rebinding), the page it came from
// (Origin, Sec-Fetch-Site), its bearer token — and the token such a server
// keeps: `orca serve`'s API (package serve) and `orca mcp serve
// --transport http` (package mcp/mcpserve) both admit requests this way.
//
// The threat is a page in the user's browser: a foreign page may send
// requests to a loopback port, and a name it controls may resolve to
// 127.0.0.1. Its requests then carry the foreign Host or Origin, or
// Sec-Fetch-Site: cross-site, and never the token.
package httpguard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrHost and ErrOrigin are what a Refusal refuses: a Host that is not
// the server's, and a page of a foreign origin.
var (
	ErrHost   = errors.New("host not allowed")
	ErrOrigin = errors.New("origin not allowed")
)

// A Refusal is a request a Guard does not admit; errors.Is tells ErrHost
// from ErrOrigin, which servers answer differently.
type Refusal struct {
	// Reason is ErrHost or ErrOrigin.
	Reason error
	msg    string
}

func (r *Refusal) Error() string { return r.msg }
func (r *Refusal) Unwrap() error { return r.Reason }

// Guard admits the requests of a server listening for the user: sent to a
// loopback name or an allowed host, from no page or a page of the server's
// own origin or an allowed one.
type Guard struct {
	// Hosts are Host header values accepted besides loopback ones
	// (localhost, 127.0.0.1, [::1], with any port): "name" for any port,
	// "name:port" for that one.
	Hosts []string
	// Origins are origins ("https://tool.example") whose pages may call
	// the server, besides its own (CheckOrigin says which are well-formed).
	Origins []string
}

// Check returns nil if g admits r, else a *Refusal saying why.
func (g Guard) Check(r *http.Request) error {
	if !g.HostAllowed(r.Host) {
		return &Refusal{ErrHost, fmt.Sprintf("Host %q is not this server's (it answers loopback names and the allowed hosts only)", r.Host)}
	}
	origin := r.Header.Get("Origin")
	if origin != "" && !g.originAllowed(r, origin) {
		return &Refusal{ErrOrigin, fmt.Sprintf("requests from pages of %s are not allowed", origin)}
	}
	if origin == "" && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return &Refusal{ErrOrigin, "cross-site requests are not allowed"}
	}
	return nil
}

// HostAllowed says whether a request's Host header names this server: a
// loopback name or address, or one of g.Hosts.
func (g Guard) HostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" || slices.Contains(g.Hosts, host) || slices.Contains(g.Hosts, h) {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// originAllowed: one of g.Origins, or the server's own (the origin of the
// Host the request was sent to).
func (g Guard) originAllowed(r *http.Request, origin string) bool {
	if slices.Contains(g.Origins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host && (u.Scheme == "http" || u.Scheme == "https")
}

// CheckOrigin returns an error unless o is an origin: scheme://host[:port].
func CheckOrigin(o string) error {
	if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
		return fmt.Errorf("allowed origin %q: want scheme://host[:port]", o)
	}
	return nil
}

// Bearer returns the token of r's "Authorization: Bearer TOKEN" header.
func Bearer(r *http.Request) (token string, ok bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// Same says whether the token a request presents is the server's, in time
// that does not depend on where they differ.
func Same(presented, token string) bool {
	return subtle.ConstantTimeCompare([]byte(presented), []byte(token)) == 1
}

// MinToken is the fewest characters a token given by a variable may have.
const MinToken = 16

// ErrShortToken: the token a variable gives has fewer than MinToken
// characters.
var ErrShortToken = errors.New("a token has at least 16 characters")

// Token returns a server's bearer token: the variable env's value
// (through getenv), else the token kept in the file path, made there with
// 24 random bytes (hex) when the file has none, readable by the user
// alone. made says it was just made.
func Token(env, path string, getenv func(string) string) (token string, made bool, err error) {
	if t := strings.TrimSpace(getenv(env)); t != "" {
		if len(t) < MinToken {
			return "", false, fmt.Errorf("$%s is %d characters: %w", env, len(t), ErrShortToken)
		}
		return t, false, nil
	}
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= MinToken {
		return strings.TrimSpace(string(b)), false, nil
	}
	raw := make([]byte, 24)
	rand.Read(raw)
	token = hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("keeping the token: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("keeping the token: %w", err)
	}
	return token, true, nil
}
