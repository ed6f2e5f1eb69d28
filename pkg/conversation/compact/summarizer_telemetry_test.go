package compact

import (
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The Anthropic SDK traces its calls with the global OpenTelemetry tracer provider, and puts
// the request and the answer in the spans when ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE
// is "content". A summarizer call is the conversation: the manager's environment must not be
// able to turn that on, so neither SDK makes spans.
func TestSummarizersMakeNoSpans(t *testing.T) {
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY", "true")
	t.Setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(provider)
	t.Cleanup(func() {
		otel.SetTracerProvider(previous)
		_ = provider.Shutdown(t.Context())
	})
	for provider, body := range map[string]string{ProviderOpenAI: openAIOK, ProviderAnthropic: anthropicOK} {
		fp := newFakeProvider(t, reply{status: http.StatusOK, body: body})
		s := newTestSummarizer(t, provider, testConfig(fp.server.URL))
		if _, err := s.Summarize(t.Context(), SummaryRequest{Messages: foldedMessages()}); err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		if h := fp.calls()[0].header.Get("Traceparent"); h != "" {
			t.Errorf("%s: traceparent %q sent to the provider", provider, h)
		}
	}
	for _, span := range recorder.Ended() {
		t.Errorf("span %q made", span.Name())
		for _, a := range span.Attributes() {
			if strings.Contains(a.Value.String(), secretText) {
				t.Errorf("span %q quotes the conversation in %s", span.Name(), a.Key)
			}
		}
	}
}
