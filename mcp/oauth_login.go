package mcp

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// callback is a sign-in's loopback listener: the authorization server
// sends the person's browser to redirect with the code.
type callback struct {
	redirect string
	servers  []*http.Server
	results  chan callbackResult
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// listenCallback listens on loopback at port (0: any free one), on
// 127.0.0.1 and, where there is one, ::1: the redirect names localhost,
// as the addresses registered with authorization servers do.
func listenCallback(port int) (*callback, error) {
	cb := &callback{results: make(chan callbackResult, 1)}
	l4, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening on port %d of loopback: %w", port, err)
	}
	port = l4.Addr().(*net.TCPAddr).Port
	listeners := []net.Listener{l4}
	if l6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		listeners = append(listeners, l6)
	}
	cb.redirect = "http://localhost:" + strconv.Itoa(port) + "/callback"
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", cb.serve)
	for _, l := range listeners {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		cb.servers = append(cb.servers, srv)
		go srv.Serve(l)
	}
	return cb, nil
}

// serve takes the redirect of the person's browser.
func (cb *callback) serve(w http.ResponseWriter, r *http.Request) {
	res, err := resultOf(r.URL.Query())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<!doctype html><title>orca</title><p>orca was not signed in: %s</p>", html.EscapeString(err.Error()))
	} else {
		fmt.Fprint(w, "<!doctype html><title>orca</title><p>orca is signed in. You can close this page.</p>")
	}
	select {
	case cb.results <- callbackResult{res, err}:
	default: // a second visit: the first one counts
	}
}

// resultOf is the authorization response in q: the code, or the
// authorization server's error.
func resultOf(q url.Values) (*auth.AuthorizationResult, error) {
	if e := q.Get("error"); e != "" {
		msg := "the authorization server refused: " + e
		if d := q.Get("error_description"); d != "" {
			msg += " (" + d + ")"
		}
		return nil, errors.New(msg)
	}
	if q.Get("code") == "" {
		return nil, errors.New("the address has no authorization code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// wait shows the person the authorization page and waits for the code:
// from the loopback listener, or pasted.
func (cb *callback) wait(ctx context.Context, authURL string, login *Login, server string) (*auth.AuthorizationResult, error) {
	if login.Open != nil {
		if err := login.Open(ctx, authURL); err != nil {
			return nil, fmt.Errorf("showing the sign-in page of MCP server %s: %w", server, err)
		}
	}
	pasted := make(chan callbackResult, 1)
	if login.Input != nil {
		go func() {
			sc := bufio.NewScanner(login.Input)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" {
					continue
				}
				u, err := url.Parse(line)
				if err != nil {
					continue
				}
				res, err := resultOf(u.Query())
				pasted <- callbackResult{res, err}
				return
			}
		}()
	}
	select {
	case r := <-cb.results:
		return r.res, r.err
	case r := <-pasted:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the sign-in to MCP server %s: %w", server, ctx.Err())
	}
}

func (cb *callback) close() {
	for _, s := range cb.servers {
		s.Close()
	}
}

// clientCredentials signs the client itself in (the client_credentials
// grant) at the authorization server of the server's metadata: with its
// secret (basic or in the body, as the server takes them), or with a JWT
// its private key signs (private_key_jwt), a new one for each token.
func (a *authorizer) clientCredentials(ctx context.Context, challenges []oauthex.Challenge, serverURL string) (oauth2.TokenSource, error) {
	if a.oauth.ClientID == "" {
		return nil, errors.New("no client id (the server's oauth.clientId)")
	}
	prm, err := resourceMetadata(ctx, challenges, serverURL, a.client)
	if err != nil {
		return nil, err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, a.client)
	if err != nil {
		return nil, fmt.Errorf("the authorization server's metadata: %w", err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimSuffix(issuer, "/") + "/token"}
	}
	scopes := a.oauth.Scopes
	if len(scopes) == 0 {
		if s := challengeScope(challenges); s != "" {
			scopes = strings.Fields(s)
		} else {
			scopes = prm.ScopesSupported
		}
	}
	params := url.Values{}
	if prm.Resource != "" {
		params.Set("resource", prm.Resource)
	}
	ctx = context.WithValue(context.Background(), oauth2.HTTPClient, a.client)
	if len(a.oauth.PrivateKey) == 0 {
		if a.oauth.ClientSecret == "" {
			return nil, errors.New("no client secret (oauth.clientSecret) and no private key (oauth.privateKeyFile)")
		}
		cfg := &clientcredentials.Config{ClientID: a.oauth.ClientID, ClientSecret: a.oauth.ClientSecret, TokenURL: asm.TokenEndpoint,
			Scopes: scopes, EndpointParams: params, AuthStyle: authStyleOf(asm.TokenEndpointAuthMethodsSupported)}
		ts := cfg.TokenSource(ctx)
		if _, err := ts.Token(); err != nil {
			return nil, err
		}
		return ts, nil
	}
	key, method, err := signingKey(a.oauth.PrivateKey)
	if err != nil {
		return nil, err
	}
	audience := asm.Issuer
	ts := oauth2.ReuseTokenSource(nil, tokenFunc(func() (*oauth2.Token, error) {
		now := time.Now()
		assertion, err := jwt.NewWithClaims(method, jwt.RegisteredClaims{
			Issuer: a.oauth.ClientID, Subject: a.oauth.ClientID, Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)), ID: rand.Text(),
		}).SignedString(key)
		if err != nil {
			return nil, err
		}
		p := url.Values{}
		for k, v := range params {
			p[k] = v
		}
		p.Set("client_id", a.oauth.ClientID)
		p.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		p.Set("client_assertion", assertion)
		cfg := &clientcredentials.Config{ClientID: a.oauth.ClientID, TokenURL: asm.TokenEndpoint, Scopes: scopes, EndpointParams: p,
			AuthStyle: oauth2.AuthStyleInParams}
		return cfg.Token(ctx)
	}))
	if _, err := ts.Token(); err != nil {
		return nil, err
	}
	return ts, nil
}

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// authStyleOf is how the client authenticates to the token endpoint of
// an authorization server that takes methods: basic where it may, else in
// the body.
func authStyleOf(methods []string) oauth2.AuthStyle {
	for _, m := range methods {
		if m == "client_secret_basic" {
			return oauth2.AuthStyleInHeader
		}
	}
	if len(methods) > 0 {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

// signingKey reads a PEM private key and the JWT method it signs with:
// ES256 (P-256), ES384, ES512 or RS256.
func signingKey(pemData []byte) (any, jwt.SigningMethod, error) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return nil, nil, errors.New("the private key is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the private key: %w", err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve.Params().BitSize {
		case 256:
			return k, jwt.SigningMethodES256, nil
		case 384:
			return k, jwt.SigningMethodES384, nil
		case 521:
			return k, jwt.SigningMethodES512, nil
		}
	case *rsa.PrivateKey:
		return k, jwt.SigningMethodRS256, nil
	}
	return nil, nil, fmt.Errorf("the private key is a %T: want an EC (P-256, P-384, P-521) or RSA key", key)
}
