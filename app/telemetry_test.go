package app_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/middleware"
)

// Telemetry is set up from the OTEL_* variables the Config's Getenv
// reads: its middleware joins the chains, and Close exports what the
// turn traced before it returns.
func TestTelemetryFromTheEnvironment(t *testing.T) {
	var traces atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			traces.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	script := write(t, t.TempDir(), "script.json", `{"responses": [{"text": "done"}]}`)
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/v1/traces"}
	a, err := app.Open(t.Context(), app.Config{Workspace: t.TempDir(), ConfigDir: "-", NoSettings: true, Model: app.ModelConfig{Script: script},
		Telemetry: true, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.Services().Middleware.Names(middleware.LLMExecution), "telemetry") {
		t.Errorf("llm_execution chain: %v", a.Services().Middleware.Names(middleware.LLMExecution))
	}
	s, err := a.Session(t.Context(), app.SessionOptions{ID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if traces.Load() == 0 {
		t.Error("Close returned before the spans were exported")
	}
}

// Without an endpoint, nothing is set up; a variable that cannot be used
// is a ConfigError naming it.
func TestTelemetryOffOrRefused(t *testing.T) {
	script := write(t, t.TempDir(), "script.json", `{"responses": [{"text": "done"}]}`)
	open := func(env map[string]string) (*app.App, error) {
		return app.Open(t.Context(), app.Config{Workspace: t.TempDir(), ConfigDir: "-", NoSettings: true, Model: app.ModelConfig{Script: script},
			Telemetry: true, Getenv: func(k string) string { return env[k] }})
	}
	a, err := open(map[string]string{"OTEL_SERVICE_NAME": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if names := a.Services().Middleware.Names(middleware.LLMExecution); len(names) != 0 {
		t.Errorf("telemetry set up without an endpoint: %v", names)
	}
	a.Close()
	_, err = open(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "zipkin"})
	var ce *app.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "OTEL_TRACES_EXPORTER") {
		t.Errorf("err = %v, want a ConfigError naming OTEL_TRACES_EXPORTER", err)
	}
}
