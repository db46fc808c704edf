package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuth is how orca signs in to a remote (http or sse) server that asks
// for authorization, as the MCP authorization spec has it: the server's
// protected-resource metadata (RFC 9728, from its WWW-Authenticate
// challenge or the well-known paths) names the authorization server,
// whose metadata (RFC 8414 or OpenID) gives the endpoints; the client is
// registered by a Client ID Metadata Document (ClientMetadataURL), a
// pre-registered ClientID, or Dynamic Client Registration (RFC 7591, the
// default); the authorization code comes back to a loopback listener
// (PKCE S256, the resource parameter of RFC 8707, the scopes of the
// challenge or the metadata — or Scopes); tokens are refreshed, and a
// 403 insufficient_scope steps up to the scopes it names. With
// ClientCredentials, a machine signs itself in (client_credentials, the
// secret or a private key's JWT), no person involved.
//
// A server with no OAuth of its own gets the defaults; one whose Headers
// carry an Authorization header signs in by it, not by OAuth.
type OAuth struct {
	// ClientID is a client registered with the authorization server
	// beforehand; ClientSecret its secret, if it has one.
	ClientID, ClientSecret string
	// ClientMetadataURL is the HTTPS URL of a Client ID Metadata Document
	// describing orca, used as the client id where the authorization
	// server takes those.
	ClientMetadataURL string
	// CallbackPort fixes the loopback port the authorization code comes
	// back to (http://localhost:PORT/callback, as registered); 0: any.
	CallbackPort int
	// Scopes, if set, are the scopes asked for, whatever the server's
	// challenge or metadata say.
	Scopes []string
	// AuthServerMetadataURL, if set, is where the authorization server's
	// metadata is read, instead of its well-known addresses.
	AuthServerMetadataURL string
	// ClientCredentials signs in as the client itself (the
	// client_credentials grant), with ClientSecret or PrivateKey.
	ClientCredentials bool
	// PrivateKey, a PEM-encoded EC or RSA key, signs the JWT that
	// authenticates the client (private_key_jwt) in the
	// client_credentials grant.
	PrivateKey []byte
}

// ErrNeedsLogin is the error of a server that asks for authorization
// that orca has not got: nobody signed in, or the sign-in ran out (its
// refresh was refused), or the server asks for more scopes. A person
// signs in with orca mcp login NAME (Login).
var ErrNeedsLogin = errors.New("needs login")

// LoginError is ErrNeedsLogin for one server, saying why and what to do.
type LoginError struct {
	Server string
	Why    string
}

func (e *LoginError) Error() string        { return e.Why }
func (e *LoginError) Is(target error) bool { return target == ErrNeedsLogin }

// Credentials are what a sign-in to a server keeps (TokenStore): the
// client it signed in as and its tokens.
type Credentials struct {
	// Server and URL are the server's name and address.
	Server string `json:"server"`
	URL    string `json:"url"`
	// ClientID and ClientSecret are the client's (registered
	// dynamically, or given); TokenURL and AuthStyle refresh the token.
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	// Scopes are the scopes asked for.
	Scopes []string      `json:"scopes,omitempty"`
	Token  *oauth2.Token `json:"token"`
}

// TokenStore keeps the credentials of sign-ins, per server (its name and
// URL: a server renamed or moved signs in again).
type TokenStore interface {
	// Load returns the server's credentials, nil if it has none.
	Load(srv Server) (*Credentials, error)
	// Save keeps c, replacing the server's.
	Save(c *Credentials) error
	// Delete forgets the server's credentials; it reports whether there
	// were any.
	Delete(srv Server) (bool, error)
}

// FileTokens is the TokenStore of a folder of the user's (orca keeps it in
// the user's configuration folder, never in a workspace, and hides it
// from the OS sandbox): one file per server, readable by the user alone
// (0600, in a folder of 0700).
type FileTokens struct{ Dir string }

// file is the server's file in the folder: its name, and a digest of its
// name and URL.
func (f FileTokens) file(name, u string) string {
	sum := sha256.Sum256([]byte(name + "\x00" + u))
	return filepath.Join(f.Dir, safeName(name)+"-"+hex.EncodeToString(sum[:6])+".json")
}

// safeName is name with what a file name should not have replaced.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// Load implements TokenStore.
func (f FileTokens) Load(srv Server) (*Credentials, error) {
	b, err := os.ReadFile(f.file(srv.Name, srv.URL))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the sign-in of MCP server %s: %w", srv.Name, err)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil || c.Token == nil {
		return nil, fmt.Errorf("the sign-in of MCP server %s: %s is not one orca wrote: sign in again (orca mcp login %s)", srv.Name, f.file(srv.Name, srv.URL), srv.Name)
	}
	return &c, nil
}

// Save implements TokenStore: the file is replaced whole (written beside
// it, then renamed), never readable by others.
func (f FileTokens) Save(c *Credentials) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("keeping the sign-in of MCP server %s: %w", c.Server, err)
	}
	if err := os.Chmod(f.Dir, 0o700); err != nil {
		return fmt.Errorf("keeping the sign-in of MCP server %s: %w", c.Server, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(f.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("keeping the sign-in of MCP server %s: %w", c.Server, err)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(b)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.file(c.Server, c.URL))
	}
	if err != nil {
		return fmt.Errorf("keeping the sign-in of MCP server %s: %w", c.Server, err)
	}
	return nil
}

// Delete implements TokenStore.
func (f FileTokens) Delete(srv Server) (bool, error) {
	err := os.Remove(f.file(srv.Name, srv.URL))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("forgetting the sign-in of MCP server %s: %w", srv.Name, err)
	}
	return true, nil
}

// Forget deletes every sign-in kept for the server named name, whatever
// its URL was, and returns how many there were.
func (f FileTokens) Forget(name string) (int, error) {
	n := 0
	for _, file := range f.files(name) {
		if err := os.Remove(file); err != nil {
			return n, fmt.Errorf("forgetting the sign-in of MCP server %s: %w", name, err)
		}
		n++
	}
	return n, nil
}

// Kept reports whether a sign-in is kept for the server named name.
func (f FileTokens) Kept(name string) bool { return len(f.files(name)) > 0 }

// files are the files of the sign-ins kept for the server named name.
func (f FileTokens) files(name string) []string {
	files, _ := filepath.Glob(filepath.Join(f.Dir, safeName(name)+"-*.json"))
	var out []string
	for _, file := range files {
		var c Credentials
		if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &c) == nil && c.Server == name {
			out = append(out, file)
		}
	}
	return out
}

// Login is how a person signs in, for Server.Login: Open shows them the
// authorization server's page (a browser; a line printed); the page sends
// the authorization code back to a listener on loopback. Where the
// browser is on another machine, the person pastes the address it was
// sent to (the one that did not load) into Input.
type Login struct {
	// Open shows the person url.
	Open func(ctx context.Context, url string) error
	// Input, if set, is read for a pasted address.
	Input io.Reader
}

// authorizer is a server's auth.OAuthHandler: the transport asks it for
// the token of every request, and tells it of a 401 or 403 answer.
type authorizer struct {
	srv    Server
	oauth  OAuth
	store  TokenStore
	client *http.Client // for the authorization server: not the server's headers
	login  *Login       // nil: no person to ask (a run): ErrNeedsLogin

	mu sync.Mutex
	ts oauth2.TokenSource
	// code is the authorization code flow of a sign-in (login set), cb
	// the loopback listener its code comes back to.
	code *auth.AuthorizationCodeHandler
	cb   *callback
	// refreshed: a 401 made it refresh once already.
	refreshed bool
}

var _ auth.OAuthHandler = (*authorizer)(nil)

func newAuthorizer(srv Server, store TokenStore, client *http.Client, login *Login) *authorizer {
	a := &authorizer{srv: srv, store: store, client: client, login: login}
	if srv.OAuth != nil {
		a.oauth = *srv.OAuth
	}
	if u := a.oauth.AuthServerMetadataURL; u != "" {
		c := *client
		base := client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = metadataAt{u, base}
		a.client = &c
	}
	return a
}

// metadataAt reads the authorization server's metadata at url, whichever
// well-known address the discovery asks.
type metadataAt struct {
	url  string
	base http.RoundTripper
}

func (m metadataAt) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && (strings.HasPrefix(r.URL.Path, "/.well-known/oauth-authorization-server") ||
		strings.Contains(r.URL.Path, "/.well-known/openid-configuration")) {
		u, err := url.Parse(m.url)
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.URL, r.Host = u, u.Host
	}
	return m.base.RoundTrip(r)
}

// TokenSource implements auth.OAuthHandler: the signed-in token, kept up
// to date (refreshed, and the refreshed one kept), or none.
func (a *authorizer) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts != nil || a.store == nil || a.oauth.ClientCredentials {
		return a.ts, nil
	}
	c, err := a.store.Load(a.srv)
	if err != nil {
		return nil, err
	}
	if c != nil {
		a.ts = a.keeping(c, nil)
	}
	return a.ts, nil
}

// keeping is c's token, refreshed as it expires, each new one kept in
// the store. base, if set, makes the tokens (else c's refresh does).
func (a *authorizer) keeping(c *Credentials, base oauth2.TokenSource) oauth2.TokenSource {
	if base == nil {
		base = a.refreshing(c, c.Token)
	}
	return &keptTokens{a: a, c: *c, base: base}
}

// refreshing is t, refreshed at c's token endpoint as it expires.
func (a *authorizer) refreshing(c *Credentials, t *oauth2.Token) oauth2.TokenSource {
	cfg := &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: c.AuthStyle}}
	return cfg.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, a.client), t)
}

// keptTokens are a server's tokens, each new one kept in the store.
type keptTokens struct {
	a    *authorizer
	mu   sync.Mutex
	c    Credentials
	base oauth2.TokenSource
}

func (k *keptTokens) Token() (*oauth2.Token, error) {
	k.mu.Lock()
	base := k.base // refresh may change it
	k.mu.Unlock()
	t, err := base.Token()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.c.Token == nil || t.AccessToken != k.c.Token.AccessToken {
		if t.RefreshToken == "" && k.c.Token != nil {
			t.RefreshToken = k.c.Token.RefreshToken // a refresh that issued no new one keeps the old
		}
		k.c.Token = t
		if k.a.store != nil {
			if err := k.a.store.Save(&k.c); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// Authorize implements auth.OAuthHandler: the server answered a request
// 401 or 403. A machine signs in again (ClientCredentials); a sign-in
// under way (login) goes through the authorization code flow, or steps
// up; otherwise a token that still has a refresh is refreshed once, and
// what is left is ErrNeedsLogin.
func (a *authorizer) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if a.oauth.ClientCredentials {
		defer resp.Body.Close()
		challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if resp.StatusCode == http.StatusForbidden && challengeError(challenges) != "insufficient_scope" {
			return nil
		}
		ts, err := a.clientCredentials(ctx, challenges, req.URL.String())
		if err != nil {
			return fmt.Errorf("MCP server %s: signing in as client %s: %w", a.srv.Name, a.oauth.ClientID, err)
		}
		a.mu.Lock()
		a.ts = ts
		a.mu.Unlock()
		return nil
	}
	if a.login != nil {
		h, err := a.codeFlow()
		if err != nil {
			resp.Body.Close()
			return err
		}
		if err := h.Authorize(ctx, req, resp); err != nil {
			return fmt.Errorf("MCP server %s: signing in: %w", a.srv.Name, err)
		}
		ts, _ := h.TokenSource(ctx)
		a.mu.Lock()
		a.ts = ts
		a.mu.Unlock()
		return nil
	}
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden {
		if challengeError(challenges) != "insufficient_scope" {
			return nil // refused for another reason: the retry says so
		}
		return &LoginError{a.srv.Name, fmt.Sprintf("MCP server %s asks for more access (scope %q) than it was given: sign in again with orca mcp login %s",
			a.srv.Name, challengeScope(challenges), a.srv.Name)}
	}
	a.mu.Lock()
	ts, refreshed := a.ts, a.refreshed
	a.refreshed = true
	a.mu.Unlock()
	if ts != nil && !refreshed {
		// The token was refused before its time: refreshed once.
		if k, ok := ts.(*keptTokens); ok && k.refresh() == nil {
			return nil
		}
	}
	if ts == nil {
		return &LoginError{a.srv.Name, fmt.Sprintf("MCP server %s asks for authorization: sign in with orca mcp login %s", a.srv.Name, a.srv.Name)}
	}
	return &LoginError{a.srv.Name, fmt.Sprintf("MCP server %s refused the sign-in orca kept: sign in again with orca mcp login %s", a.srv.Name, a.srv.Name)}
}

// refresh makes the token be refreshed now, if it can be.
func (k *keptTokens) refresh() error {
	k.mu.Lock()
	c := k.c
	k.mu.Unlock()
	if c.Token == nil || c.Token.RefreshToken == "" || c.TokenURL == "" {
		return errors.New("no refresh token")
	}
	stale := *c.Token
	stale.Expiry = time.Now().Add(-time.Hour)
	k.mu.Lock()
	k.base = k.a.refreshing(&c, &stale)
	k.mu.Unlock()
	_, err := k.Token()
	return err
}

// codeFlow is the authorization code flow of a sign-in: the SDK's, with
// orca's registration, loopback listener and kept tokens.
func (a *authorizer) codeFlow() (*auth.AuthorizationCodeHandler, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.code != nil {
		return a.code, nil
	}
	port := a.oauth.CallbackPort
	cb, err := listenCallback(port)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: the sign-in's callback: %w", a.srv.Name, err)
	}
	redirect := cb.redirect
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return cb.wait(ctx, args.URL, a.login, a.srv.Name)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              "orca",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		RequestRefreshToken: true,
		Client:              a.client,
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			c := &Credentials{Server: a.srv.Name, URL: a.srv.URL, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
				TokenURL: cfg.Endpoint.TokenURL, AuthStyle: cfg.Endpoint.AuthStyle, Scopes: cfg.Scopes, Token: t}
			if a.store != nil {
				if err := a.store.Save(c); err != nil {
					return nil, err
				}
			}
			return a.keeping(c, cfg.TokenSource(ctx, t)), nil
		},
		InitialTokenSource: a.ts,
	}
	if a.oauth.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: a.oauth.ClientMetadataURL}
	}
	if a.oauth.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: a.oauth.ClientID}
		if a.oauth.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.oauth.ClientSecret}
		}
	}
	if len(a.oauth.Scopes) > 0 {
		pinned := slices.Clone(a.oauth.Scopes)
		cfg.ScopeFilter = func([]string) []string { return pinned }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		cb.close()
		return nil, fmt.Errorf("MCP server %s: %w", a.srv.Name, err)
	}
	a.code, a.cb = h, cb
	return h, nil
}

// close ends a sign-in's callback listener, if one was started.
func (a *authorizer) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cb != nil {
		a.cb.close()
		a.cb = nil
	}
}

// challengeError and challengeScope are the error and scope of the
// Bearer challenge.
func challengeError(cs []oauthex.Challenge) string { return challengeParam(cs, "error") }
func challengeScope(cs []oauthex.Challenge) string { return challengeParam(cs, "scope") }

func challengeParam(cs []oauthex.Challenge, key string) string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params[key] != "" {
			return c.Params[key]
		}
	}
	return ""
}

// resourceMetadata is the server's protected-resource metadata: from the
// challenge's resource_metadata, else the well-known paths (the path's,
// then the root's); failing those, the 2025-03-26 form: the server's
// origin is its own authorization server.
func resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, serverURL string, client *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	var candidates []string
	if m := challengeParam(challenges, "resource_metadata"); m != "" {
		candidates = append(candidates, m)
	}
	origin := u.Scheme + "://" + u.Host
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")
	resource := u.Scheme + "://" + u.Host + u.Path
	for _, c := range candidates {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c, resource, client)
		if err == nil && prm != nil {
			if len(prm.AuthorizationServers) == 0 {
				return nil, fmt.Errorf("its protected-resource metadata (%s) names no authorization server", c)
			}
			return prm, nil
		}
	}
	return &oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{origin}}, nil
}

// authorizer is the connection's sign-in, for an http server without an
// Authorization header of its own (the same one at every reconnection:
// its token lives as long as the connection); nil for the others. base
// reaches the authorization server: the server's headers are not for it.
func (c *conn) authorizer(base http.RoundTripper) *authorizer {
	if c.srv.Type != "http" {
		return nil
	}
	for k := range c.srv.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.authz == nil {
		opts := c.set.p.opts
		client := &http.Client{Transport: base, Timeout: opts.StartTimeout}
		c.authz = newAuthorizer(c.srv, opts.Tokens, client, c.srv.Login)
	}
	return c.authz
}
