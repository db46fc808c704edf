package main

import (
	"encoding/json"
	"strings"
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
	// A provider that serves another's models lists those.
	stdout, _, code = orcaWith(t, t.Context(), o, "", "models", "--provider", "vertex")
	if code != 0 || !strings.Contains(stdout, "gemini") || strings.Contains(stdout, "openai") {
		t.Errorf("vertex: exit %d\n%s", code, stdout)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "models", "--provider", "nope")
	if code != exitUsage || !strings.Contains(stderr, "--provider nope: the catalog has no models of it (it has anthropic, gemini, openai)") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}
