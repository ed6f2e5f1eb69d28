package blackbox_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// unstorableIDsAreRefused: an agent sends ids no store keeps (a message id of 600 bytes, an
// Idempotency-Key that is not UTF-8). The answer is 422 problem+json, the caller's mistake,
// never the 503 that clients retry for ever; the conversation keeps taking appends.
func unstorableIDsAreRefused(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "ids")
	conv := historyOnly(ns, "ids")
	e.conversation(ctx, t, conv)
	agent := e.agentToken(ctx, t, ns)
	long := strings.Repeat("x", 600)
	res, body, err := e.do(ctx, http.MethodPost, convPath(ns, conv.Name)+"/messages", agent,
		[]byte(`{"messages":[{"id":"`+long+`","role":"user","blocks":[{"type":"text","text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusUnprocessableEntity || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("a message id of %d bytes: %d %s %.300s, want 422 problem+json", len(long), res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, e.url+convPath(ns, conv.Name)+"/adapter-state",
		strings.NewReader(`{"type":"claude-agent-sdk","state":{"sessionId":"s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Idempotency-Key", "key\xff\xfe")
	res, err = e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an Idempotency-Key that is not UTF-8: %d, want 422", res.StatusCode)
	}
	if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, conv.Name)+"/messages", agent, appendBody("ok", 1, "hello")); err != nil || res.StatusCode >= 300 {
		t.Fatalf("an append after them: %v %v %s", err, res, body)
	}
}
