package mcptest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuthServer is an MCP server behind OAuth, as the MCP authorization spec
// has it, with the authorization server it trusts, both on loopback: the
// MCP endpoint (URL) answers a request without a valid token 401 with a
// WWW-Authenticate challenge naming its protected-resource metadata; the
// authorization server serves its metadata (RFC 8414), registers clients
// (RFC 7591), approves every authorization request at once (redirecting
// to the client's redirect URI with a code, as a person who clicks
// "Allow" would), and issues tokens for a code (PKCE S256 checked, the
// resource checked) and for a refresh token. Tokens expire after
// TokenLifetime. It keeps what it issued and what it was asked, for the
// test to check.
type OAuthServer struct {
	// URL is the MCP endpoint; Issuer the authorization server.
	URL, Issuer string
	// TokenLifetime is how long an access token is good for (an hour if
	// zero); set it before the first token.
	TokenLifetime time.Duration

	mu        sync.Mutex
	clients   map[string]string // registered client id → redirect URI
	codes     map[string]codeGrant
	access    map[string]time.Time // access token → expiry
	refresh   map[string]string    // refresh token → client id
	issued    []string
	refreshes int
	srv       *httptest.Server
	mcp       *Handler
}

type codeGrant struct {
	client, redirect, challenge, resource string
}

// NewOAuthServer starts an OAuthServer serving o's test tools (as
// NewServer's). Close stops it.
func NewOAuthServer(o Options) *OAuthServer {
	s := &OAuthServer{clients: map[string]string{}, codes: map[string]codeGrant{}, access: map[string]time.Time{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(mux)
	s.Issuer = s.srv.URL
	s.URL = s.srv.URL + "/mcp"
	prm := s.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.URL, AuthorizationServers: []string{s.Issuer}, ScopesSupported: []string{"tools"},
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	s.mcp = NewStreamableHandler(Faults{}, o)
	mux.Handle("/mcp", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(s.mcp))
	return s
}

// Close stops the servers, and ends the MCP sessions.
func (s *OAuthServer) Close() {
	s.mcp.Close()
	s.srv.Close()
}

// Issued returns the access and refresh tokens issued so far.
func (s *OAuthServer) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Refreshes returns how many refresh-token grants it answered.
func (s *OAuthServer) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// Revoke makes every access token it issued invalid (the refresh tokens
// stay good).
func (s *OAuthServer) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

func (s *OAuthServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.access[token]
	if !ok || time.Now().After(exp) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: []string{"tools"}, Expiration: exp}, nil
}

func (s *OAuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"issuer": s.Issuer, "authorization_endpoint": s.Issuer + "/authorize", "token_endpoint": s.Issuer + "/token",
		"registration_endpoint": s.Issuer + "/register", "response_types_supported": []string{"code"},
		"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": []string{"tools", "offline_access"},
	})
}

func (s *OAuthServer) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "redirect_uris are required")
		return
	}
	id := "client-" + rand.Text()[:10]
	s.mu.Lock()
	s.clients[id] = m.RedirectURIs[0]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *OAuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	redirect, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	switch {
	case !known || redirect != q.Get("redirect_uri"):
		http.Error(w, "unknown client or redirect URI", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("response_type") != "code":
		http.Error(w, "PKCE S256 and response_type code are required", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.codes[code] = codeGrant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
	s.mu.Unlock()
	to, _ := url.Parse(redirect)
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (s *OAuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	client := r.PostForm.Get("client_id")
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case !ok || g.client != client || g.redirect != r.PostForm.Get("redirect_uri"):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown code, or another client's or redirect URI's")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the code verifier does not match the challenge")
			return
		case g.resource != s.URL || r.PostForm.Get("resource") != s.URL:
			oauthError(w, http.StatusBadRequest, "invalid_target", fmt.Sprintf("resource %q, want %q", r.PostForm.Get("resource"), s.URL))
			return
		}
	case "refresh_token":
		if c, ok := s.refresh[r.PostForm.Get("refresh_token")]; !ok || c != client {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		}
		delete(s.refresh, r.PostForm.Get("refresh_token"))
		s.refreshes++
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", r.PostForm.Get("grant_type"))
		return
	}
	lifetime := s.TokenLifetime
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	s.access[access] = time.Now().Add(lifetime)
	s.refresh[refresh] = client
	s.issued = append(s.issued, access, refresh)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(lifetime.Seconds()),
		"refresh_token": refresh, "scope": strings.Join([]string{"tools"}, " ")})
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
