package mcp_test

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/mcp"
	"github.com/orca-agent/orca/mcp/mcptest"
)

// browse is a person's browser that clicks "Allow": it follows the
// authorization server's redirects to the loopback callback.
func browse(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// A server behind OAuth: without a sign-in it needs one, and says how to
// sign in; a sign-in (Login: the authorization code flow, the client
// registered dynamically, PKCE, the resource) brings it up and keeps the
// tokens in a file of the user's alone; the next provider signs in with
// them; a token that expires, or that the server stops taking, is
// refreshed (and the new one kept); no token reaches the logs.
func TestOAuthSignIn(t *testing.T) {
	srv := mcptest.NewOAuthServer(mcptest.Options{})
	t.Cleanup(srv.Close)
	srv.TokenLifetime = 5 * time.Second // less than oauth2's 10 s of margin: every use refreshes
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := filepath.Join(t.TempDir(), "mcp-auth")
	tokens := mcp.FileTokens{Dir: dir}
	server := mcp.Server{Name: "secure", Type: "http", URL: srv.URL}

	p, reg := provider(t, []mcp.Server{server}, mcp.Options{Tokens: tokens, Logger: logger, StartTimeout: 10 * time.Second})
	if st := p.Status()[0]; st.State != mcp.StateNeedsLogin || !strings.Contains(st.Error, "orca mcp login secure") || len(reg.Names()) != 0 {
		t.Fatalf("before signing in: %+v, tools %v", st, reg.Names())
	}

	opened := ""
	signIn := server
	signIn.Login = &mcp.Login{Open: func(ctx context.Context, u string) error { opened = u; return browse(ctx, u) }}
	p, reg = provider(t, []mcp.Server{signIn}, mcp.Options{Tokens: tokens, Logger: logger, StartTimeout: 10 * time.Second})
	if st := p.Status()[0]; st.State != mcp.StateUp {
		t.Fatalf("signing in: %+v", st)
	}
	if !strings.Contains(opened, "code_challenge_method=S256") || !strings.Contains(opened, "resource=") || !strings.Contains(opened, "redirect_uri=http%3A%2F%2Flocalhost%3A") {
		t.Errorf("the sign-in page: %s", opened)
	}
	if r := call(t, reg, "mcp__secure__echo", map[string]any{"text": "signed in"}); r.IsError || !strings.Contains(r.Content, "signed in") {
		t.Errorf("call: %+v", r)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "secure-*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v", files)
	}
	for path, want := range map[string]fs.FileMode{dir: 0o700, files[0]: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode(), err, want)
		}
	}

	// The next provider signs in with the kept tokens; a token the server
	// no longer takes is refreshed.
	before := srv.Refreshes()
	srv.Revoke()
	p, reg = provider(t, []mcp.Server{server}, mcp.Options{Tokens: tokens, Logger: logger, StartTimeout: 10 * time.Second})
	if st := p.Status()[0]; st.State != mcp.StateUp {
		t.Fatalf("with the kept sign-in: %+v", st)
	}
	if r := call(t, reg, "mcp__secure__echo", map[string]any{"text": "again"}); r.IsError || !strings.Contains(r.Content, "again") {
		t.Errorf("call: %+v", r)
	}
	if srv.Refreshes() == before {
		t.Errorf("no refresh")
	}
	kept, _ := os.ReadFile(files[0])
	issued := srv.Issued()
	if last := issued[len(issued)-1]; !strings.Contains(string(kept), last) {
		t.Errorf("the refreshed tokens were not kept")
	}
	for _, tok := range issued {
		if strings.Contains(logs.String(), tok) {
			t.Errorf("a token is in the log")
		}
	}

	// Forgotten, it needs a sign-in again.
	if gone, err := tokens.Delete(server); !gone || err != nil {
		t.Errorf("Delete: %v %v", gone, err)
	}
	p, _ = provider(t, []mcp.Server{server}, mcp.Options{Tokens: tokens, Logger: logger, StartTimeout: 10 * time.Second})
	if st := p.Status()[0]; st.State != mcp.StateNeedsLogin {
		t.Errorf("after Delete: %+v", st)
	}
}

// A token the server stops taking before it expires (revoked) is refreshed
// once, on the server's 401, and the call goes on with the new one.
func TestOAuthRefreshOnRefusal(t *testing.T) {
	srv := mcptest.NewOAuthServer(mcptest.Options{})
	t.Cleanup(srv.Close)
	tokens := mcp.FileTokens{Dir: filepath.Join(t.TempDir(), "mcp-auth")}
	server := mcp.Server{Name: "secure", Type: "http", URL: srv.URL}
	signIn := server
	signIn.Login = &mcp.Login{Open: browse}
	if p, _ := provider(t, []mcp.Server{signIn}, mcp.Options{Tokens: tokens, StartTimeout: 10 * time.Second}); p.Status()[0].State != mcp.StateUp {
		t.Fatalf("signing in: %+v", p.Status()[0])
	}
	if srv.Refreshes() != 0 {
		t.Fatalf("%d refreshes of an hour's token", srv.Refreshes())
	}
	srv.Revoke()
	p, reg := provider(t, []mcp.Server{server}, mcp.Options{Tokens: tokens, StartTimeout: 10 * time.Second})
	if st := p.Status()[0]; st.State != mcp.StateUp || srv.Refreshes() != 1 {
		t.Fatalf("after the revocation: %+v, %d refreshes", st, srv.Refreshes())
	}
	if r := call(t, reg, "mcp__secure__echo", map[string]any{"text": "refreshed"}); r.IsError || !strings.Contains(r.Content, "refreshed") {
		t.Errorf("call: %+v", r)
	}
}
