package classifier

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// WithTracerProvider records a span per backend call (its retry included)
// with tp: the backend and the outcome, as the metrics name it, under the
// caller's span (the check's). Without it, nothing is recorded.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// callSpanName is the span of one backend call.
const callSpanName = "toolgate.classifier.call"

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/toolgate/toolgate/classifier")
}

// endCallSpan records a call's outcome, never its error text: errors can
// quote the model's answer.
func endCallSpan(span trace.Span, outcome string, failed bool) {
	span.SetAttributes(attribute.String("toolgate.classifier.outcome", outcome))
	if failed {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
