package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// CaptureContentEnv is the conventions' variable that turns content
// capture on ("true").
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const DefaultServiceName = "orca"

// FromEnv sets telemetry up from the standard OTEL_* environment
// variables, read with getenv (os.Getenv if nil), and returns nil — off,
// nothing set up — unless they name an OTLP endpoint:
//
//   - OTEL_SDK_DISABLED=true: off.
//   - OTEL_EXPORTER_OTLP_ENDPOINT (a base URL: /v1/traces and
//     /v1/metrics are appended over HTTP), or the per-signal
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (used as they are): where to
//     export; a signal without one is not exported.
//   - OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_/_METRICS_PROTOCOL):
//     http/protobuf (the default) or grpc.
//   - OTEL_EXPORTER_OTLP_HEADERS (or _TRACES_/_METRICS_HEADERS):
//     key=value pairs sent with each export.
//   - OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER: otlp (the default) or
//     none.
//   - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the resource
//     (service.name is DefaultServiceName by default).
//   - OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: content
//     capture (Options.CaptureContent).
//
// The exporters and the SDK read the rest of their variables (timeouts,
// certificates, compression, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_METRIC_EXPORT_INTERVAL) from the process's environment, as they
// always do. opts gives the rest (Provider); its providers are replaced
// by FromEnv's, which Shutdown flushes and releases. A variable that
// cannot be used is an error that names it.
func FromEnv(ctx context.Context, getenv func(string) string, opts Options) (*Telemetry, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	traces, err := signalFromEnv(getenv, "TRACES", "/v1/traces")
	if err != nil {
		return nil, err
	}
	metrics, err := signalFromEnv(getenv, "METRICS", "/v1/metrics")
	if err != nil {
		return nil, err
	}
	if traces == nil && metrics == nil {
		return nil, nil
	}
	res, err := resourceFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	var shutdowns []func(context.Context) error
	shutdown := func(ctx context.Context) error {
		var errs []error
		for i := len(shutdowns) - 1; i >= 0; i-- {
			errs = append(errs, shutdowns[i](ctx))
		}
		return errors.Join(errs...)
	}
	opts.TracerProvider, opts.MeterProvider = nil, nil
	if traces != nil {
		exp, err := traces.traceExporter(ctx)
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		shutdowns = append(shutdowns, tp.Shutdown)
		opts.TracerProvider = tp
	}
	if metrics != nil {
		exp, err := metrics.metricExporter(ctx)
		if err != nil {
			shutdown(ctx)
			return nil, err
		}
		mp := metric.NewMeterProvider(metric.WithReader(metric.NewPeriodicReader(exp)), metric.WithResource(res))
		shutdowns = append(shutdowns, mp.Shutdown)
		opts.MeterProvider = mp
	}
	opts.CaptureContent = opts.CaptureContent || strings.EqualFold(strings.TrimSpace(getenv(CaptureContentEnv)), "true")
	opts.shutdown = shutdown
	t, err := New(opts)
	if err != nil {
		shutdown(ctx)
		return nil, err
	}
	return t, nil
}

// signal is where one signal is exported.
type signal struct {
	name     string // TRACES or METRICS
	protocol string // http/protobuf or grpc
	endpoint string // a URL, or host:port for grpc
	headers  map[string]string
}

// signalFromEnv reads one signal's variables; nil: not exported.
func signalFromEnv(getenv func(string) string, name, path string) (*signal, error) {
	exporterVar := "OTEL_" + name + "_EXPORTER"
	switch e := strings.TrimSpace(getenv(exporterVar)); e {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("%s=%s: orca exports otlp or none", exporterVar, e)
	}
	pick := func(key string) (string, string) {
		specific := "OTEL_EXPORTER_OTLP_" + name + "_" + key
		if v := strings.TrimSpace(getenv(specific)); v != "" {
			return v, specific
		}
		general := "OTEL_EXPORTER_OTLP_" + key
		return strings.TrimSpace(getenv(general)), general
	}
	s := &signal{name: name}
	endpoint, endpointVar := pick("ENDPOINT")
	if endpoint == "" {
		return nil, nil
	}
	protocol, protocolVar := pick("PROTOCOL")
	switch protocol {
	case "", "http/protobuf":
		s.protocol = "http/protobuf"
	case "grpc":
		s.protocol = "grpc"
	default:
		return nil, fmt.Errorf("%s=%s: the protocol is http/protobuf or grpc", protocolVar, protocol)
	}
	if s.protocol == "http/protobuf" && endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		// The base endpoint of every signal: each has its own path below.
		endpoint = strings.TrimSuffix(endpoint, "/") + path
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("%s=%s: not an http or https URL", endpointVar, endpoint)
		}
	} else if s.protocol == "http/protobuf" {
		return nil, fmt.Errorf("%s=%s: not a URL (http://host:port)", endpointVar, endpoint)
	}
	s.endpoint = endpoint
	headers, headersVar := pick("HEADERS")
	if headers != "" {
		h, err := parsePairs(headers)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", headersVar, err)
		}
		s.headers = h
	}
	return s, nil
}

func (s *signal) traceExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	if s.protocol == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithHeaders(s.headers)}
		if strings.Contains(s.endpoint, "://") {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(s.endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(s.endpoint), otlptracehttp.WithHeaders(s.headers))
}

func (s *signal) metricExporter(ctx context.Context) (metric.Exporter, error) {
	if s.protocol == "grpc" {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithHeaders(s.headers)}
		if strings.Contains(s.endpoint, "://") {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(s.endpoint))
		} else {
			opts = append(opts, otlpmetricgrpc.WithEndpoint(s.endpoint))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(s.endpoint), otlpmetrichttp.WithHeaders(s.headers))
}

// resourceFromEnv is the resource of OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME (which wins), over DefaultServiceName and the SDK's
// own attributes.
func resourceFromEnv(getenv func(string) string) (*resource.Resource, error) {
	attrs := map[string]string{string(semconv.ServiceNameKey): DefaultServiceName}
	if v := strings.TrimSpace(getenv("OTEL_RESOURCE_ATTRIBUTES")); v != "" {
		pairs, err := parsePairs(v)
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", err)
		}
		for k, v := range pairs {
			attrs[k] = v
		}
	}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		attrs[string(semconv.ServiceNameKey)] = v
	}
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		kvs = append(kvs, attribute.String(k, v))
	}
	// Schemaless: the SDK's defaults carry a schema of their own.
	return resource.Merge(resource.Default(), resource.NewSchemaless(kvs...))
}

// parsePairs parses the W3C-baggage-like lists of OTEL_*_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES: key=value pairs, comma-separated, values
// percent-encoded.
func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", item)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %s: %v", k, err)
		}
		out[k] = dv
	}
	return out, nil
}
