package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/middleware"
)

// chat is the llm_execution middleware: a chat span around one attempt
// of a model call, in the context of the execution that makes it, and
// the metrics of the attempt.
func (t *Telemetry) chat(ctx context.Context, req *llm.Request, next middleware.LLMNext) (*llm.Response, error) {
	start := time.Now()
	// A fallback of another provider's names its own.
	provider := t.provider
	if req.Metadata.Provider != "" {
		provider = ProviderName(req.Metadata.Provider)
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIConversationID(req.Metadata.TraceID),
		AttrFeature.String(req.Metadata.Feature),
	}
	if req.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(req.Model))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if req.Metadata.Component != "" {
		attrs = append(attrs, semconv.GenAIAgentName(req.Metadata.Component))
	}
	attrs = append(attrs, t.server...)
	if t.capture {
		if req.System != "" {
			attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(systemJSON(req.System)))
		}
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(inputMessagesJSON(req.Messages)))
	}
	name := "chat"
	if req.Model != "" {
		name += " " + req.Model
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := next(ctx, req)

	// The metrics' attributes: low-cardinality ones only.
	mattrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider)}
	if req.Model != "" {
		mattrs = append(mattrs, semconv.GenAIRequestModel(req.Model))
	}
	if err != nil {
		et := errorType(err)
		var le *llm.Error
		if errors.As(err, &le) && le.Kind != "" {
			et = string(le.Kind)
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		span.SetStatus(codes.Error, err.Error())
		mattrs = append(mattrs, semconv.ErrorTypeKey.String(et))
		t.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(mattrs...))
		return resp, err
	}
	if resp.Model != "" {
		span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
		mattrs = append(mattrs, semconv.GenAIResponseModel(resp.Model))
	}
	if resp.ID != "" {
		span.SetAttributes(semconv.GenAIResponseID(resp.ID))
	}
	if resp.StopReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(finishReason(resp.StopReason)))
	}
	span.SetAttributes(usageAttrs(resp.Usage)...)
	if t.capture {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputMessagesJSON(resp.Message, finishReason(resp.StopReason))))
	}
	t.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(mattrs...))
	u := resp.Usage
	in := append(mattrs[:len(mattrs):len(mattrs)], semconv.GenAITokenTypeInput)
	t.tokens.Record(ctx, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, metric.WithAttributes(in...))
	out := append(mattrs[:len(mattrs):len(mattrs)], semconv.GenAITokenTypeOutput)
	t.tokens.Record(ctx, u.OutputTokens, metric.WithAttributes(out...))
	return resp, nil
}

// systemJSON is a system prompt as gen_ai.system_instructions holds it:
// a JSON array of parts.
func systemJSON(s string) string {
	b, _ := json.Marshal([]struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}{{"text", s}})
	return string(b)
}
