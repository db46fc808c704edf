package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/orca-agent/orca/llm/anthropic"
)

// receiver is an OTLP/HTTP receiver: it decodes the protobuf payloads the
// real exporters send, as a collector does, and refuses requests without
// the header OTEL_EXPORTER_OTLP_HEADERS gives.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	traces  []*colltrace.ExportTraceServiceRequest
	metrics []*collmetrics.ExportMetricsServiceRequest
	bad     []string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		if err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" || req.Header.Get("Authorization") != "Bearer t0ken" {
			r.fail(req.Method + " " + req.URL.Path + " " + req.Header.Get("Content-Type") + " " + req.Header.Get("Authorization"))
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var resp proto.Message
		switch req.URL.Path {
		case "/v1/traces":
			m := &colltrace.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(body, m); err != nil {
				r.fail("traces: " + err.Error())
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.mu.Lock()
			r.traces = append(r.traces, m)
			r.mu.Unlock()
			resp = &colltrace.ExportTraceServiceResponse{}
		case "/v1/metrics":
			m := &collmetrics.ExportMetricsServiceRequest{}
			if err := proto.Unmarshal(body, m); err != nil {
				r.fail("metrics: " + err.Error())
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.mu.Lock()
			r.metrics = append(r.metrics, m)
			r.mu.Unlock()
			resp = &collmetrics.ExportMetricsServiceResponse{}
		default:
			r.fail("path " + req.URL.Path)
			http.NotFound(w, req)
			return
		}
		b, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) fail(what string) {
	r.mu.Lock()
	r.bad = append(r.bad, what)
	r.mu.Unlock()
}

// spans returns every span received, with its resource's service.name.
func (r *receiver) spans() (spans []*tracepb.Span, services []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" {
					services = append(services, a.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return spans, services
}

func (r *receiver) metricNames() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := map[string]bool{}
	for _, req := range r.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names[m.Name] = true
				}
			}
		}
	}
	return names
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// `orca run` with OTEL_EXPORTER_OTLP_ENDPOINT exports one trace of the
// turn and its fork, and the metrics, over OTLP/HTTP, before it exits.
func TestTelemetryOverOTLP(t *testing.T) {
	rcv := newReceiver(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(sc, []byte(`{"routes": {
  "main": [
    {"tool_calls": [{"name": "Glob", "input": {"pattern": "*.txt"}}], "usage": {"input_tokens": 120, "output_tokens": 7}},
    {"tool_calls": [{"name": "Task", "input": {"description": "look", "prompt": "find a.txt", "subagent_type": "general-purpose"}}]},
    {"text": "done"}
  ],
  "subagent": [{"text": "a.txt is there"}]
}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.srv.URL, // http://127.0.0.1:port
		"OTEL_SERVICE_NAME":           "orca-under-test",
		"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=Bearer%20t0ken",
	}
	o := options{configDir: t.TempDir(), getenv: func(k string) string { return env[k] }}
	stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", sc, "-w", ws, "--permission-mode", "bypass", "find a.txt")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// Close flushed: everything is there when run returns.
	spans, services := rcv.spans()
	if len(rcv.bad) > 0 {
		t.Fatalf("the receiver refused: %v", rcv.bad)
	}
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		if string(s.TraceId) != string(spans[0].TraceId) {
			t.Errorf("span %q is in another trace", s.Name)
		}
	}
	root, fork, task := byName["invoke_agent orca"], byName["invoke_agent general-purpose"], byName["execute_tool Task"]
	if len(root) != 1 || len(fork) != 1 || len(task) != 1 || len(byName["execute_tool Glob"]) != 1 || len(byName["chat"]) != 4 {
		names := make([]string, 0, len(spans))
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("spans: %v", names)
	}
	if string(task[0].ParentSpanId) != string(root[0].SpanId) || string(fork[0].ParentSpanId) != string(task[0].SpanId) {
		t.Errorf("nesting: task's parent %x (root %x), fork's parent %x (task %x)", task[0].ParentSpanId, root[0].SpanId, fork[0].ParentSpanId, task[0].SpanId)
	}
	if got := spanAttr(root[0], "gen_ai.provider.name"); got != "script" {
		t.Errorf("provider %q", got)
	}
	if sid := spanAttr(root[0], "gen_ai.conversation.id"); sid == "" || spanAttr(fork[0], "gen_ai.conversation.id") != sid {
		t.Errorf("conversation id %q (fork %q)", sid, spanAttr(fork[0], "gen_ai.conversation.id"))
	}
	if len(services) == 0 || services[0] != "orca-under-test" {
		t.Errorf("service.name %v", services)
	}
	names := rcv.metricNames()
	if !names["gen_ai.client.token.usage"] || !names["gen_ai.client.operation.duration"] {
		t.Errorf("metrics %v", names)
	}
}

// Without an endpoint nothing is set up: the same run sends nothing.
func TestTelemetryOffWithoutEndpoint(t *testing.T) {
	rcv := newReceiver(t)
	env := map[string]string{"OTEL_SERVICE_NAME": "orca-under-test", "OTEL_TRACES_EXPORTER": "otlp"}
	o := options{configDir: t.TempDir(), getenv: func(k string) string { return env[k] }}
	_, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--script", writeScript(t, `{"text": "hi"}`), "-w", t.TempDir(), "hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if spans, _ := rcv.spans(); len(spans) > 0 {
		t.Errorf("%d spans sent without an endpoint", len(spans))
	}
	env["OTEL_EXPORTER_OTLP_PROTOCOL"], env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http/json", rcv.srv.URL
	_, stderr, code = orcaWith(t, t.Context(), o, "", "run", "--script", writeScript(t, `{"text": "hi"}`), "-w", t.TempDir(), "hello")
	if code == 0 || !strings.Contains(stderr, "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("an unusable protocol: exit %d, stderr %q", code, stderr)
	}
}

// The spans hold to the GenAI conventions (semconv 1.41), as a real OTLP
// exporter sends them: the message attributes validate against the
// conventions' own JSON schemas (gen_ai.output.messages with its required
// finish_reason), every span names the provider, a chat span its server
// and the response's id, an execute_tool span the tool's description.
func TestTelemetrySpansHoldToTheConventions(t *testing.T) {
	rcv := newReceiver(t)
	api := newClaudeAPI(t, use("Glob", map[string]string{"pattern": "*.txt"}), say("It is a.txt."))
	ws := t.TempDir()
	writeFileAt(t, ws, "a.txt", "x")
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":                        rcv.srv.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":                         "Authorization=Bearer%20t0ken",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
	}
	o := options{configDir: t.TempDir(), getenv: func(k string) string { return env[k] }}
	if stdout, stderr, code := orcaWith(t, t.Context(), o, "", "run", "--provider", "anthropic", "--base-url", api.URL, "-w", ws, "--permission-mode", "bypass", "which file?"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	schemas := map[string]*jsonschema.Schema{}
	for attr, file := range map[string]string{"gen_ai.input.messages": "gen-ai-input-messages.json", "gen_ai.output.messages": "gen-ai-output-messages.json", "gen_ai.system_instructions": "gen-ai-system-instructions.json"} {
		f, err := os.Open(filepath.Join("testdata", "semconv", file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(file, doc); err != nil {
			t.Fatal(err)
		}
		if schemas[attr], err = c.Compile(file); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := strings.Cut(strings.TrimPrefix(api.URL, "http://"), ":")
	spans, _ := rcv.spans()
	validated := map[string]int{}
	for _, s := range spans {
		if spanAttr(s, "gen_ai.provider.name") != "anthropic" {
			t.Errorf("span %q: gen_ai.provider.name %q", s.Name, spanAttr(s, "gen_ai.provider.name"))
		}
		for attr, sch := range schemas {
			raw := spanAttr(s, attr)
			if raw == "" {
				continue
			}
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
			if err == nil {
				err = sch.Validate(v)
			}
			if err != nil {
				t.Errorf("span %q: %s does not hold to the conventions' schema: %v\n%s", s.Name, attr, err, raw)
			}
			validated[attr]++
		}
		switch op := spanAttr(s, "gen_ai.operation.name"); op {
		case "chat":
			if spanAttr(s, "server.address") != host || intAttr(s, "server.port") != port || !strings.HasPrefix(spanAttr(s, "gen_ai.response.id"), "msg_") {
				t.Errorf("chat span: server %q:%q, response id %q", spanAttr(s, "server.address"), intAttr(s, "server.port"), spanAttr(s, "gen_ai.response.id"))
			}
		case "execute_tool":
			if !strings.Contains(spanAttr(s, "gen_ai.tool.description"), "glob") && !strings.Contains(spanAttr(s, "gen_ai.tool.description"), "Glob") {
				t.Errorf("execute_tool span: description %q", spanAttr(s, "gen_ai.tool.description"))
			}
		}
	}
	if validated["gen_ai.input.messages"] < 2 || validated["gen_ai.output.messages"] < 3 || validated["gen_ai.system_instructions"] < 2 {
		t.Errorf("message attributes validated: %v (want the two chat spans' and the agent's)", validated)
	}
}

// intAttr is an integer attribute of s, as a string ("" if none).
func intAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return fmt.Sprint(a.Value.GetIntValue())
		}
	}
	return ""
}
