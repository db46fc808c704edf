package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/serve"
)

// orca serve, as a user starts it: it prints where it listens and where
// its token is (made on the first start, kept 0600), refuses a request
// without it, runs a turn posted to it whose events stream until
// turn_completed, and stops cleanly on cancellation.
func TestServe(t *testing.T) {
	cfgDir, ws := t.TempDir(), t.TempDir()
	sc := writeScript(t, `{"tool_calls": [{"name": "Write", "input": {"file_path": "out.txt", "content": "served\n"}}]}`, `{"text": "Wrote out.txt."}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- execute(ctx, []string{"serve", "--script", sc, "-w", ws, "--addr", "127.0.0.1:0", "--permission-mode", "accept-edits"}, strings.NewReader(""), &stdout, &stderr, options{configDir: cfgDir})
	}()
	stdout.waitFor(t, "token (new, kept in", 1)
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("orca serve printed no address:\n%s\n%s", stdout.String(), stderr.String())
	}
	base := m[1]
	tokenFile := filepath.Join(cfgDir, "orca", "serve-token")
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v, %v", fi, err)
	}
	raw, _ := os.ReadFile(tokenFile)
	token := strings.TrimSpace(string(raw))
	if !strings.Contains(stdout.String(), token) || !strings.Contains(stdout.String(), tokenFile) {
		t.Errorf("the first start did not print the token and its file:\n%s", stdout.String())
	}
	call := func(method, path, body, tok string) (int, []byte, http.Header) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	if c, _, h := call("GET", "/v1/sessions", "", ""); c != 401 || h.Get("WWW-Authenticate") == "" {
		t.Errorf("without the token: %d", c)
	}
	if c, b, _ := call("POST", "/v1/sessions", `{"id": "s"}`, token); c != 201 {
		t.Fatalf("create: %d %s", c, b)
	}
	c, b, _ := call("POST", "/v1/sessions/s/messages", `{"text": "write it"}`, token)
	var started struct {
		TurnID string `json:"turn_id"`
	}
	if json.Unmarshal(b, &started); c != 202 || started.TurnID == "" {
		t.Fatalf("message: %d %s", c, b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/v1/sessions/s/turns/"+started.TurnID+"/events?access_token="+token, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc2 := bufio.NewScanner(resp.Body)
	var names []string
	for sc2.Scan() {
		if n, ok := strings.CutPrefix(sc2.Text(), "event: "); ok {
			names = append(names, n)
			if n == "turn_completed" {
				break
			}
		}
	}
	resp.Body.Close()
	if len(names) == 0 || names[len(names)-1] != "turn_completed" || !strings.Contains(strings.Join(names, " "), "tool_exec_completed") {
		t.Errorf("events %v", names)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "served\n" {
		t.Errorf("out.txt %q, %v", b, err)
	}
	// A session has one JSON form: what orca sessions --json says of it is
	// what the API says, field for field, but for what only one of them
	// knows (whether this workspace opens it; the running turn, parked
	// calls, the transcript).
	_, api, _ := call("GET", "/v1/sessions/s", "", token)
	cliOut, _, _ := orca(t, t.Context(), "", "sessions", "-w", ws, "--json")
	var fromAPI map[string]any
	var fromCLI struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal(api, &fromAPI); err != nil {
		t.Fatalf("%v: %s", err, api)
	}
	if err := json.Unmarshal([]byte(cliOut), &fromCLI); err != nil || len(fromCLI.Sessions) != 1 {
		t.Fatalf("orca sessions --json: %v: %s", err, cliOut)
	}
	fromList := fromCLI.Sessions[0]
	for _, k := range []string{"opens", "why_not"} {
		delete(fromList, k)
	}
	for _, k := range []string{"running_turn", "parked", "transcript"} {
		delete(fromAPI, k)
	}
	if !reflect.DeepEqual(fromAPI, fromList) {
		t.Errorf("one session, two forms:\norca sessions --json: %v\nGET /v1/sessions/s:   %v", fromList, fromAPI)
	}
	if totals, _ := fromAPI["totals"].(map[string]any); totals["turns"] != 1.0 || totals["tool_calls"] != 1.0 || totals["wall_time_ms"] == nil {
		t.Errorf("totals: %v", totals)
	}
	// The server kept a checkpoint of its turn, and rewinds it.
	if c, b, _ := call("GET", "/v1/sessions/s/checkpoints", "", token); c != 200 || !strings.Contains(string(b), `"changes":[{"path":"out.txt","kind":"made"}]`) {
		t.Errorf("checkpoints: %d %s", c, b)
	}
	if c, b, _ := call("POST", "/v1/sessions/s/checkpoints/1/rewind", "", token); c != 200 || !strings.Contains(string(b), `"rewound":true`) {
		t.Errorf("rewind: %d %s", c, b)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt after the rewind: %v", err)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d\n%s", c, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("orca serve did not stop")
	}

	// The next start finds the token and does not print it.
	var out2 syncBuffer
	ctx2, cancel2 := context.WithCancel(t.Context())
	go func() {
		code <- execute(ctx2, []string{"serve", "--script", sc, "-w", ws, "--addr", "127.0.0.1:0"}, strings.NewReader(""), &out2, &stderr, options{configDir: cfgDir})
	}()
	out2.waitFor(t, "token: in "+tokenFile, 1)
	if strings.Contains(out2.String(), token) {
		t.Error("the second start printed the token")
	}
	cancel2()
	<-code
}

// Flags that name a session or a budget are the API's business: a usage
// error, as is an address that cannot be listened on, or no stream.
func TestServeUsageErrors(t *testing.T) {
	sc := writeScript(t, `{"text": "x"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--session", "s"}, "--session does not apply"},
		{[]string{"--budget-tokens", "5"}, "--budget-tokens does not apply"},
		{[]string{"--addr", "256.0.0.1:99999"}, "--addr 256.0.0.1:99999"},
		{[]string{"--max-streams", "0"}, "--max-streams 0: want at least 1"},
	} {
		_, stderr, code := orca(t, t.Context(), "", append([]string{"serve", "--script", sc, "-w", t.TempDir()}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, stderr)
		}
	}
}

// A token in $ORCA_SERVE_TOKEN too short to guard anything is a usage
// error, before anything listens.
func TestServeRefusesAShortToken(t *testing.T) {
	ws := t.TempDir()
	sc := writeScript(t, `{"text": "never"}`)
	env := func(k string) string {
		if k == serve.TokenEnv {
			return "short"
		}
		return ""
	}
	_, stderr, code := orcaWith(t, t.Context(), options{configDir: t.TempDir(), getenv: env}, "", "serve", "--script", sc, "-w", ws, "--addr", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(stderr, "$ORCA_SERVE_TOKEN is 5 characters: a token has at least 16 characters") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}
