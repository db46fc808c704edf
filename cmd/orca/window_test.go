package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/openai"
)

// A 120-call turn whose tool results are 3 KB each, against a server
// whose window is 90 KB of request — smaller than orca's catalog says of
// the model, as a proxy's or a local server's may be —, through the CLI on
// both wire shapes: at most two requests are refused as too long (the
// first teaches the window, and compaction keeps under it); the window is
// kept in the workspace's store, so the next run is refused none; and a
// run told the window by the settings' "models" (what the catalog lists)
// is refused none either.
func TestRunLearnsTheWindow(t *testing.T) {
	const calls, window = 120, 90 << 10
	for _, shape := range []struct {
		name, model string
		anthropic   bool
	}{{"anthropic", "claude-sonnet-4-5", true}, {"openai", "gpt-5", false}} {
		t.Run(shape.name, func(t *testing.T) {
			t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
			t.Setenv(anthropic.BaseURLEnv, "")
			t.Setenv(openai.APIKeyEnv, "sk-test")
			t.Setenv(openai.BaseURLEnv, "")
			ws := t.TempDir()
			for i := 1; i <= calls; i++ {
				line := fmt.Sprintf("file %d: %s\n", i, strings.Repeat("0123456789abcdef", 4))
				if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(line, 3000/len(line))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run := func(t *testing.T, ws, settings string) *fakeModelAPI {
				t.Helper()
				made := 0
				api := newFakeModelAPI(t, shape.anthropic)
				api.window = window
				api.next = func(r fakeRequest) reply {
					tokens := len(r.raw) / 4
					if strings.Contains(r.raw, "You summarise a conversation") {
						return reply{text: "The agent is reading f1.txt to f120.txt one by one; it goes on with the next.", inputTokens: tokens}
					}
					if made == calls {
						return reply{text: "Read them all.", inputTokens: tokens}
					}
					made++
					return reply{tool: "Read", input: fmt.Sprintf(`{"file_path":"f%d.txt"}`, made), inputTokens: tokens}
				}
				base := api.URL
				if !shape.anthropic {
					base += "/v1"
				}
				o := options{configDir: t.TempDir(), getenv: noEnv}
				if settings != "" {
					writeFileAt(t, o.configDir, "orca/settings.json", settings)
				}
				stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", shape.name, "--base-url", base, "--model", shape.model,
					"-w", ws, "--json", "Read every file")
				if code != 0 || !strings.Contains(stdout, `"answer":"Read them all."`) || made != calls {
					t.Fatalf("exit %d after %d calls (%d refused)\nstderr:\n%s\nstdout tail:\n%s", code, made, api.refused, stderr, tail(stdout, 2000))
				}
				return api
			}
			first := run(t, ws, "")
			if first.refused == 0 || first.refused > 2 {
				t.Errorf("first run: %d requests refused as too long (want 1 or 2)", first.refused)
			}
			if again := run(t, ws, ""); again.refused != 0 {
				t.Errorf("the next run in the workspace: %d refused; the window learnt was not kept", again.refused)
			}
			told := t.TempDir()
			for i := 1; i <= calls; i++ {
				b, _ := os.ReadFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)))
				os.WriteFile(filepath.Join(told, fmt.Sprintf("f%d.txt", i)), b, 0o644)
			}
			settings := fmt.Sprintf(`{"models": {%q: {"provider": %q, "context_window": %d}}}`, shape.model, shape.name, window/4)
			if api := run(t, told, settings); api.refused != 0 {
				t.Errorf("told the window by the settings: %d refused", api.refused)
			}
		})
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
