package sessionapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/wire"
)

// An id the store cannot keep (longer than a record id may be, or not UTF-8: a header is not
// decoded as JSON) is the caller's mistake: 422 problem+json, never the 503 that tells every
// client to retry the same request for ever.
func TestUnstorableIdsAreRefused(t *testing.T) {
	long := strings.Repeat("x", 600)
	text := `"blocks":[{"type":"text","text":"x"}]`
	for name, tc := range map[string]struct {
		method, path, body, idempotencyKey string
	}{
		"a message id":                 {"POST", "/messages", `{"messages":[{"id":"` + long + `","role":"user",` + text + `}]}`, ""},
		"an event id":                  {"POST", "/events", `{"events":[{"id":"` + long + `","event":{"type":"session:idle"}}]}`, ""},
		"an imported message id":       {"POST", "/import", `{"id":"i","part":0,"state":{"messages":[{"id":"` + long + `","role":"user",` + text + `}]}}`, ""},
		"a long idempotency key":       {"PUT", "/adapter-state", `{"type":"claude-agent-sdk","state":{"sessionId":"s"}}`, long},
		"an idempotency key not UTF-8": {"PUT", "/adapter-state", `{"type":"claude-agent-sdk","state":{"sessionId":"s"}}`, "key\xff\xfe"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := testServer(t)
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, "/v1/namespaces/ns/conversations/c"+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer writer")
			if tc.idempotencyKey != "" {
				req.Header.Set(wire.IdempotencyKeyHeader, tc.idempotencyKey)
			}
			srv.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusUnprocessableEntity || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%s %s: %d %s %s, want 422 problem+json", tc.method, tc.path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		})
	}
}
