package sessionapi

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/parley-dev/parley/internal/metrics"
)

// TestRequestsCountedByRoute: every answer is counted and timed under its route and status
// code, never under a path that names a namespace or a conversation; a follow is a route of
// its own.
func TestRequestsCountedByRoute(t *testing.T) {
	h := (&Server{Auth: &Authorizer{}}).Handler()
	for _, tc := range []struct {
		method, path, route, code string
	}{
		{"POST", "/v1/namespaces/ns/conversations/c/messages", "POST messages", "401"},
		{"GET", "/v1/namespaces/ns/conversations/c/messages?after=3", "GET messages", "401"},
		{"GET", "/v1/namespaces/ns/conversations/c/messages?follow=true", "GET messages (follow)", "401"},
		{"GET", "/v1/namespaces/ns/conversations/c", "GET conversation", "401"},
		{"GET", "/v1/nothing/here", "other", "404"},
	} {
		counter := metrics.SessionAPIRequests.WithLabelValues(tc.route, tc.code)
		before, timedBefore := testutil.ToFloat64(counter), timed(t, tc.route)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, http.NoBody))
		if got := strconv.Itoa(rec.Code); got != tc.code {
			t.Fatalf("%s %s: %s, want %s", tc.method, tc.path, got, tc.code)
		}
		if got := testutil.ToFloat64(counter) - before; got != 1 {
			t.Errorf("%s %s: counted %v times under route %q code %s, want once", tc.method, tc.path, got, tc.route, tc.code)
		}
		if got := timed(t, tc.route) - timedBefore; got != 1 {
			t.Errorf("%s %s: timed %d times under route %q, want once", tc.method, tc.path, got, tc.route)
		}
	}
}

// timed is how many requests of route the duration histogram holds.
func timed(t *testing.T, route string) uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.SessionAPIDuration)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() == route {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
