package telemetry_test

import (
	"strings"
	"testing"

	"github.com/orca-agent/orca/telemetry"
)

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// Off unless an endpoint is named, and then only the signals that are
// not turned off.
func TestFromEnvIsOffUnlessConfigured(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"nothing":      {},
		"no endpoint":  {"OTEL_SERVICE_NAME": "svc", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", telemetry.CaptureContentEnv: "true"},
		"sdk disabled": {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		"both none":    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
	} {
		tel, err := telemetry.FromEnv(t.Context(), getenv(env), telemetry.Options{})
		if tel != nil || err != nil {
			t.Errorf("%s: %v, %v; want off", name, tel, err)
		}
	}
}

// A variable that cannot be used is an error that names it.
func TestFromEnvNamesTheBadVariable(t *testing.T) {
	base := "http://127.0.0.1:4318"
	for want, env := range map[string]map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL":         {"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":  {"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
		"OTEL_TRACES_EXPORTER":                {"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_TRACES_EXPORTER": "console"},
		"OTEL_EXPORTER_OTLP_ENDPOINT":         {"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "ftp://127.0.0.1/x"},
		"OTEL_EXPORTER_OTLP_HEADERS":          {"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		"OTEL_RESOURCE_ATTRIBUTES":            {"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_RESOURCE_ATTRIBUTES": "a=%zz"},
	} {
		tel, err := telemetry.FromEnv(t.Context(), getenv(env), telemetry.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, %v; want an error naming %s", env, tel, err, want)
			tel.Shutdown(t.Context())
		}
	}
}

// gRPC is the other protocol; content capture is the conventions'
// variable.
func TestFromEnvGRPCAndCapture(t *testing.T) {
	tel, err := telemetry.FromEnv(t.Context(), getenv(map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
		"OTEL_METRICS_EXPORTER": "none", telemetry.CaptureContentEnv: "true",
	}), telemetry.Options{})
	if err != nil || tel == nil {
		t.Fatalf("FromEnv: %v, %v", tel, err)
	}
	if !tel.CaptureContent() {
		t.Error("content capture is off")
	}
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown with nothing to export: %v", err)
	}
}
