package main

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/llmtest"
)

// orca run --provider gemini talks to the Gemini API: against a replay of
// a real recorded exchange (charm.land/fantasy's, see
// llmtest.RecordingsEnv) it prints the recorded answer and prices it; with
// no key it is a usage error naming the variable to set, and so is
// --provider vertex without a project.
func TestRunGemini(t *testing.T) {
	for _, v := range []string{gemini.APIKeyEnv, gemini.GoogleAPIKeyEnv, gemini.BaseURLEnv, gemini.ProjectEnv, gemini.LocationEnv} {
		t.Setenv(v, "")
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "gemini", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "set GEMINI_API_KEY") {
		t.Errorf("no key: exit %d\n%s", code, stderr)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "vertex", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION") {
		t.Errorf("vertex: exit %d\n%s", code, stderr)
	}

	replay := llmtest.NewReplay(t, llmtest.Recorded(t, "TestGoogleCommon/gemini-2.5-flash/simple_streaming.yaml"))
	t.Setenv(gemini.APIKeyEnv, "test-key")
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "gemini", "--base-url", replay.URL, "--model", "gemini-2.5-flash",
		"-w", t.TempDir(), "--json", "Say hi in Portuguese")
	if code != 0 || !strings.Contains(stdout, `"text":"Olá!"`) || !strings.Contains(stdout, `"stop_reason":"end_turn"`) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b := replay.Bodies(); len(b) != 1 || !strings.Contains(string(b[0]), `"text":"Say hi in Portuguese"`) {
		t.Errorf("requests: %q", b)
	}
}

// orca run --provider openai-responses talks to OpenAI's Responses API:
// against a replay of a real recorded exchange it prints the recorded
// answer; with no key it is a usage error naming the variable.
func TestRunOpenAIResponses(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai-responses", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "OPENAI_API_KEY") {
		t.Errorf("no key: exit %d\n%s", code, stderr)
	}
	replay := llmtest.NewReplay(t, llmtest.Recorded(t, "TestOpenAIResponsesCommon/openai-gpt-4o-mini/simple_streaming.yaml"))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "openai-responses", "--base-url", replay.URL+"/v1", "--model", "gpt-4o-mini",
		"-w", t.TempDir(), "--json", "Say hi in Portuguese")
	if code != 0 || !strings.Contains(stdout, `Oi!`) || !strings.Contains(stdout, `"stop_reason":"end_turn"`) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b := replay.Bodies(); len(b) != 1 || !strings.Contains(string(b[0]), `"store":false`) || !strings.Contains(string(b[0]), "Say hi in Portuguese") {
		t.Errorf("requests: %q", b)
	}
}
