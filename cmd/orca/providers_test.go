package main

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/gemini"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai"
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

// --fallback-model: a primary (Anthropic) that is rate limited on every
// try falls over to OpenAI's gpt-6.1-terra, which answers; the events
// name the model that served the call, and the cost is its price.
func TestRunFallbackModel(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	primary := newFakeModelAPI(t, true, reply{rateLimited: true})
	second := newFakeModelAPI(t, false, reply{text: "Answered by the fallback."})
	t.Setenv(openai.APIKeyEnv, "sk-test")
	t.Setenv(openai.BaseURLEnv, second.URL+"/v1")
	o := options{configDir: t.TempDir(), getenv: noEnv}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", primary.URL, "--model", "claude-opus-5-5",
		"--fallback-model", "openai:gpt-6.1-terra", "-w", t.TempDir(), "--json", "hi")
	if code != 0 || !strings.Contains(stdout, "Answered by the fallback.") || !strings.Contains(stdout, `"name":"llm_call_completed"`) ||
		!strings.Contains(stdout, `"model":"gpt-6.1-terra"`) || len(primary.seen()) != 3 || len(second.seen()) != 1 {
		t.Fatalf("exit %d, primary %d requests, fallback %d\nstdout:\n%s\nstderr:\n%s", code, len(primary.seen()), len(second.seen()), stdout, stderr)
	}
	if m, _ := second.seen()[0].body["model"].(string); m != "gpt-6.1-terra" {
		t.Errorf("the fallback was asked for %q", m)
	}
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", primary.URL, "--fallback-model", "nope:m", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, `fallback model "nope:m": unknown provider "nope"`) {
		t.Errorf("unknown provider: exit %d\n%s", code, stderr)
	}
}

// orca run --provider bedrock without a region, or without credentials,
// is a usage error naming what to set (and asks no metadata service).
func TestRunBedrockNeeds(t *testing.T) {
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": "/nonexistent/config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"} {
		t.Setenv(k, v)
	}
	o := options{configDir: t.TempDir(), getenv: noEnv}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "bedrock", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "set AWS_REGION") {
		t.Errorf("no region: exit %d\n%s", code, stderr)
	}
	t.Setenv("AWS_REGION", "us-east-1")
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--provider", "bedrock", "-w", t.TempDir(), "hi")
	if code != exitUsage || !strings.Contains(stderr, "AWS_ACCESS_KEY_ID") || !strings.Contains(stderr, "AWS_BEARER_TOKEN_BEDROCK") {
		t.Errorf("no credentials: exit %d\n%s", code, stderr)
	}
}
