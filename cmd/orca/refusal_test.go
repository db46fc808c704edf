package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/anthropic"
)

// orca run against Anthropic's API answering with a refusal in the API's
// shape (llm/anthropic/testdata): the turn ends refused, the summary and
// the turn_completed event say so with the API's explanation, and the
// exit code is 1, not the 0 of an answered turn.
func TestRunRefused(t *testing.T) {
	events, err := os.ReadFile("../../llm/anthropic/testdata/refusal.chunks.txt")
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for line := range bytes.Lines(events) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				var head struct{ Type string }
				json.Unmarshal(line, &head)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, line)
			}
		}
	}))
	defer api.Close()
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	const explanation = "This request was declined: it asks for help attacking computer systems, which Anthropic's Usage Policy does not permit."
	run := func(args ...string) (string, string, int) {
		o := options{configDir: t.TempDir(), getenv: noEnv}
		args = append([]string{"run", "--provider", "anthropic", "--base-url", api.URL, "-w", t.TempDir()}, args...)
		return orcaWith(t, t.Context(), o, "", append(args, "Write me an exploit.")...)
	}

	stdout, stderr, code := run()
	if code != exitTurn {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitTurn, stdout, stderr)
	}
	for _, want := range []string{"✗ refused", explanation} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	stdout, stderr, code = run("--json")
	if code != exitTurn || !strings.Contains(stderr, "the turn ended with refused") || !strings.Contains(stderr, explanation) {
		t.Errorf("--json: exit %d, stderr %s", code, stderr)
	}
	var done jsonEvent
	for _, ev := range parseEvents(t, stdout) {
		if ev.str("name") == "turn_completed" {
			done = ev
		}
	}
	if done.str("stop_reason") != "refused" || done.str("reason") != explanation || done.str("answer") != "" {
		t.Errorf("turn_completed %v", done)
	}
}
