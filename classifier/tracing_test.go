package classifier

import (
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate/fakellm"
)

// TestCallSpans: each backend call is a span under the caller's, with the
// backend and the outcome; a failed call is an error span.
func TestCallSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet(t)
		broken := n.serve(t, "broken.test", fakellm.Always(fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}))
		good := n.serve(t, "good.test", fakellm.Always(fakellm.Reply{Reason: "from the second"}))
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		c := newMemClassifier(t, testConfig(broken.URL(), good.URL()), WithHTTPClient(n.client()), WithTracerProvider(tp))

		ctx, parent := tp.Tracer("test").Start(t.Context(), "check")
		if _, err := c.Classify(ctx, input("Bash", "x", "")); err != nil {
			t.Fatal(err)
		}
		parent.End()

		type call struct{ backend, outcome string }
		var got []call
		for _, s := range exp.GetSpans() {
			if s.Name != callSpanName {
				continue
			}
			attrs := attribute.NewSet(s.Attributes...)
			b, _ := attrs.Value("toolgate.classifier.backend")
			o, _ := attrs.Value("toolgate.classifier.outcome")
			got = append(got, call{b.AsString(), o.AsString()})
			if s.Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("%s: parent %v, want the caller's span", b.AsString(), s.Parent.SpanID())
			}
			if failed := s.Status.Code == codes.Error; failed != (o.AsString() != outcomeAllow) {
				t.Errorf("%s: status %v with outcome %s", b.AsString(), s.Status, o.AsString())
			}
		}
		want := []call{{"primary", outcomeServerError}, {"secondary", outcomeAllow}}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("call spans %v, want %v", got, want)
		}
	})
}
