package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orca-agent/orca/internal/proctest"
	"github.com/orca-agent/orca/sandbox"
)

// servedHTTP is orca mcp serve --transport http as a process of its own
// (the test binary as orca), and where it said it listens.
type servedHTTP struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	token  string
	stderr syncBuffer // all of it, once the process has exited
	exited chan error
}

// startMCPHTTP starts orca mcp serve --transport http on a free loopback
// port and reads, from the client's configuration it prints on stderr,
// the URL and the token.
func startMCPHTTP(t *testing.T, cfgDir string, args ...string) *servedHTTP {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &servedHTTP{t: t, exited: make(chan error, 1)}
	s.cmd = exec.Command(self, append([]string{"mcp", "serve", "--transport", "http", "--listen", "127.0.0.1:0", "--no-lsp"}, args...)...)
	s.cmd.Env = append(os.Environ(), asCLI+"=1", "XDG_CONFIG_HOME="+cfgDir)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	configured := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.stderr.Write([]byte(line + "\n"))
			var entry struct {
				MCPServers map[string]struct {
					Type    string            `json:"type"`
					URL     string            `json:"url"`
					Headers map[string]string `json:"headers"`
				} `json:"mcpServers"`
			}
			if s.url == "" && json.Unmarshal([]byte(strings.TrimSpace(line)), &entry) == nil {
				if e, ok := entry.MCPServers["orca"]; ok && e.Type == "http" {
					s.url, s.token = e.URL, strings.TrimPrefix(e.Headers["Authorization"], "Bearer ")
					close(configured)
				}
			}
		}
		s.exited <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case <-configured:
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("orca mcp serve --transport http exited: %v\n%s", err, s.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("orca mcp serve --transport http printed no client configuration:\n%s", s.stderr.String())
	}
	return s
}

// connect is an SDK client of the server, sending the token as a
// client's configuration does.
func (s *servedHTTP) connect() *mcp.ClientSession {
	s.t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "orca-test"}, nil).Connect(s.t.Context(),
		&mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: withToken{s.token}}}, nil)
	if err != nil {
		s.t.Fatalf("connecting to %s: %v\n%s", s.url, err, s.stderr.String())
	}
	s.t.Cleanup(func() { cs.Close() })
	return cs
}

type withToken struct{ token string }

func (w withToken) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(req)
}

// stop sends SIGTERM and returns stderr, failing the test unless orca
// exits 0 within a few seconds.
func (s *servedHTTP) stop() string {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Errorf("orca mcp serve --transport http, on SIGTERM: %v\n%s", err, s.stderr.String())
		}
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		s.t.Errorf("orca mcp serve --transport http did not exit on SIGTERM\n%s", s.stderr.String())
	}
	return s.stderr.String()
}

// orca mcp serve --transport http, as a user runs it: it prints where it
// listens and a client's configuration with the token (new, kept 0600);
// the SDK's client lists the tools and calls them (a file written, a
// file read, through the policy); a request without the token is refused
// with 401; SIGTERM stops a call still running, its processes with it,
// and orca exits 0. The token is in no file of the workspace, its store
// included.
func TestMCPServeHTTP(t *testing.T) {
	ws, cfgDir := t.TempDir(), t.TempDir()
	args := []string{"-w", ws, "--session", "over-http", "--permission-mode", "accept-edits", "--allow", "Bash"}
	if sandbox.Available() != nil {
		args = append(args, "--no-sandbox")
	}
	s := startMCPHTTP(t, cfgDir, args...)
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") || !strings.HasSuffix(s.url, "/mcp") || len(s.token) != 48 {
		t.Fatalf("url %q, token %q", s.url, s.token)
	}
	tokenFile := filepath.Join(cfgDir, "orca", "mcp-serve-token")
	if b, err := os.ReadFile(tokenFile); err != nil || strings.TrimSpace(string(b)) != s.token {
		t.Errorf("%s: %q %v", tokenFile, b, err)
	} else if fi, _ := os.Stat(tokenFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v", tokenFile, fi.Mode())
	}
	cs := s.connect()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(list.Tools) != 13 {
		t.Fatalf("tools: %v %+v", err, list)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Write", Arguments: map[string]string{"file_path": "from/http.md", "content": "over the wire\n"}})
	if err != nil || res.IsError {
		t.Fatalf("Write: %v %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "from", "http.md")); string(b) != "over the wire\n" {
		t.Errorf("from/http.md = %q", b)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Write", Arguments: map[string]string{"file_path": ".orca/settings.json", "content": "{}"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "the path is protected") {
		t.Errorf("Write .orca/settings.json: %v %s", err, resultText(res))
	}

	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("without the token: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	hold := proctest.NewHolder(t, ws, "hold")
	called := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "Bash", Arguments: map[string]string{"command": "sleep 1000 3>hold"}})
		if err != nil {
			called <- err.Error()
			return
		}
		called <- resultText(res)
	}()
	hold.Opened()
	stderr := s.stop()
	hold.RequireGone()
	select {
	case got := <-called:
		if !strings.Contains(got, "cancelled") {
			t.Errorf("the call SIGTERM stopped: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the call SIGTERM stopped was never answered")
	}
	for _, want := range []string{"orca: serving 13 tools of " + ws + " over MCP at " + s.url + " (streamable HTTP), in session over-http",
		"token: new, kept in " + tokenFile, "claude mcp add --transport http orca " + s.url, "orca: stopped serving MCP"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	filepath.WalkDir(ws, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(s.token)) {
				t.Errorf("%s holds the token", path)
			}
		}
		return nil
	})

	// The next start takes the kept token, and says where it is.
	again := startMCPHTTP(t, cfgDir, "-w", ws)
	if again.token != s.token {
		t.Errorf("the second start's token %q, want the kept %q", again.token, s.token)
	}
	if stderr := again.stop(); !strings.Contains(stderr, "token: kept in "+tokenFile) {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// The flags of --transport http: a non-loopback --listen needs
// --allow-remote; http's flags are refused with stdio; a transport orca
// does not know, a short $ORCA_MCP_SERVE_TOKEN and a malformed origin
// are usage errors.
func TestMCPServeHTTPFlags(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		args []string
		env  string
		says string
	}{
		{[]string{"--transport", "http", "--listen", "0.0.0.0:0"}, "", "--listen 0.0.0.0:0 is not a loopback address"},
		{[]string{"--transport", "http", "--listen", ":0"}, "", "is not a loopback address"},
		{[]string{"--transport", "http", "--listen", "example.com:0"}, "", "is not a loopback address"},
		{[]string{"--transport", "http", "--listen", "4748"}, "", "want HOST:PORT"},
		{[]string{"--listen", "127.0.0.1:0"}, "", "--listen is for --transport http"},
		{[]string{"--allow-remote"}, "", "--allow-remote is for --transport http"},
		{[]string{"--transport", "sse"}, "", "--transport sse: want stdio or http"},
		{[]string{"--transport", "http", "--listen", "127.0.0.1:0"}, "short", "ORCA_MCP_SERVE_TOKEN is 5 characters"},
		{[]string{"--transport", "http", "--listen", "127.0.0.1:0", "--allow-origin", "ide.example"}, "", "want scheme://host[:port]"},
	} {
		env := func(k string) string {
			if k == mcpTokenEnv {
				return c.env
			}
			return ""
		}
		_, stderr, code := orcaWith(t, t.Context(), options{configDir: t.TempDir(), getenv: env}, "", append([]string{"mcp", "serve", "-w", ws}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", c.args, code, stderr, exitUsage, c.says)
		}
	}
}
