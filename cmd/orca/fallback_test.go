package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/openai"
)

// The settings' "fallbackModel" (Claude Code's key) names the chain when
// no --fallback-model does: a primary rate limited on every try falls
// over to it. `orca sessions show` names the model that served each
// answer, in text and JSON; the events price the call by that model
// (gpt-6.1-terra: $1 per million input tokens).
func TestRunFallbackFromSettings(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	primary := newFakeModelAPI(t, true, reply{rateLimited: true})
	second := newFakeModelAPI(t, false, reply{text: "Answered by the fallback.", inputTokens: 1_000_000})
	t.Setenv(openai.APIKeyEnv, "sk-test")
	t.Setenv(openai.BaseURLEnv, second.URL+"/v1")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	writeFileAt(t, o.configDir, "orca/settings.json", `{"provider": "anthropic", "model": "claude-opus-5-5", "fallbackModel": ["claude-opus-5-5", "openai:gpt-6.1-terra"]}`)
	ws := t.TempDir()
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--base-url", primary.URL, "-w", ws, "--json", "hi")
	if code != 0 || !strings.Contains(stdout, "Answered by the fallback.") || len(second.seen()) != 1 {
		t.Fatalf("exit %d, primary %d requests, fallback %d\nstdout:\n%s\nstderr:\n%s", code, len(primary.seen()), len(second.seen()), stdout, stderr)
	}
	var completed jsonEvent
	for _, e := range parseEvents(t, stdout) {
		if e.str("name") == "llm_call_completed" {
			completed = e
		}
	}
	if cost, _ := completed["cost_usd"].(float64); completed.str("model") != "gpt-6.1-terra" || cost < 1 || cost > 1.001 {
		t.Errorf("llm_call_completed: %v", completed)
	}
	id := lastEvent(t, stdout).str("session_id")
	out, stderr, code := orcaWith(t, t.Context(), o, "", "sessions", "show", "-w", ws, id)
	if code != 0 || !strings.Contains(out, " · gpt-6.1-terra\n   Answered by the fallback.") || !regexp.MustCompile(`\n  gpt-6\.1-terra +1 call +1000050 tokens +\$1\.00`).MatchString(out) {
		t.Errorf("sessions show: exit %d\n%s%s", code, out, stderr)
	}
	out, _, _ = orcaWith(t, t.Context(), o, "", "sessions", "show", "-w", ws, id, "--json")
	if !strings.Contains(out, `"role": "assistant",
      "model": "gpt-6.1-terra"`) || !strings.Contains(out, `"models": [
    {
      "model": "gpt-6.1-terra",
      "calls": 1,`) {
		t.Errorf("sessions show --json:\n%s", out)
	}
}

// A primary that fails after some of its answer streamed does not fall
// over: the user saw the half answer, and the failure is the turn's (the
// fallback is never asked).
func TestRunNoFallbackAfterStreaming(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	primary := newFakeModelAPI(t, true, reply{text: "Half an ans", overloadedMidStream: true})
	second := newFakeModelAPI(t, false, reply{text: "Answered by the fallback."})
	t.Setenv(openai.APIKeyEnv, "sk-test")
	t.Setenv(openai.BaseURLEnv, second.URL+"/v1")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", primary.URL, "--model", "claude-opus-5-5",
		"--fallback-model", "openai:gpt-6.1-terra", "-w", t.TempDir(), "--json", "hi")
	if code != exitTurn || len(second.seen()) != 0 || !strings.Contains(stdout, `"stop_reason":"failed"`) || !strings.Contains(stderr, "Overloaded") {
		t.Errorf("exit %d, primary %d requests, fallback %d\nstdout:\n%s\nstderr:\n%s", code, len(primary.seen()), len(second.seen()), stdout, stderr)
	}
}
