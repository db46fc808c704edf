package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
)

// orca models lists the catalog — as a table, or as JSON with the
// sources — and a provider it lacks is a usage error naming those it has.
func TestModels(t *testing.T) {
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "models", "--json")
	var ms []struct {
		Provider      string `json:"provider"`
		Name          string `json:"name"`
		ContextWindow int64  `json:"context_window"`
		Images        *bool  `json:"images"`
		Source        string `json:"source"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &ms) != nil || len(ms) < 3 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	textOnly := ""
	for _, m := range ms {
		if m.Source == "" {
			t.Errorf("%+v", m)
		}
		if m.Images != nil && !*m.Images {
			textOnly = m.Name
		}
	}
	if textOnly == "" {
		t.Error("no model takes no images")
	}

	stdout, _, code = orcaWith(t, t.Context(), o, "", "models", "--provider", "openai")
	if code != 0 || !strings.HasPrefix(stdout, "PROVIDER  MODEL") || !strings.Contains(stdout, textOnly) || strings.Contains(stdout, "anthropic") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
	// The models Claude Code's aliases stand for are marked.
	if !strings.Contains(stdout, "\nopenai    gpt-6.1-terra = sonnet ") {
		t.Errorf("no alias marked:\n%s", stdout)
	}
	// A provider that serves another's models lists those.
	for p, want := range map[string]string{"vertex": "gemini", "azure": "openai", "anthropic-vertex": "anthropic", "bedrock": "anthropic"} {
		stdout, _, code = orcaWith(t, t.Context(), o, "", "models", "--provider", p)
		if code != 0 || !strings.Contains(stdout, "\n"+want+" ") || strings.Count(stdout, "\n"+want+" ") != strings.Count(stdout, "\n")-1 {
			t.Errorf("%s: exit %d\n%s", p, code, stdout)
		}
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "models", "--provider", "nope")
	if code != exitUsage || !strings.Contains(stderr, "--provider nope: the catalog has no models of it (it has anthropic, gemini, openai)") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// epipe is standard output whose reader went away.
type epipe struct{}

func (epipe) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// orca models | head: the reader went away; orca says nothing of it, and
// ends as a process SIGPIPE kills does.
func TestModelsIntoAClosedPipe(t *testing.T) {
	var stderr strings.Builder
	if code := execute(t.Context(), []string{"models"}, strings.NewReader(""), epipe{}, &stderr, options{configDir: t.TempDir(), getenv: noEnv}); code != exitPipe || stderr.Len() != 0 {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
}
