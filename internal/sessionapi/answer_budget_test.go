package sessionapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// tokenUsers is an Authorizer whose every token is a user of its own name, allowed everything.
func tokenUsers() *Authorizer {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: o.Spec.Token, UID: o.Spec.Token}}
			case *authzv1.SubjectAccessReview:
				o.Status.Allowed = true
			}
			return nil
		},
	}).Build()
	return &Authorizer{Client: c}
}

// TestAnswersHeldAreBounded: an answer waiting for a client that does not read it counts
// toward the answer budgets until it is written, so clients that never read cannot make a
// replica hold answers without bound. Past the identity's share a read is 429, past the
// replica's 503, both problem+json; one answer larger than a bound is still served alone,
// and the budget is given back once the answer is written.
func TestAnswersHeldAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limits    Limits
		otherCode int // what another identity's read gets while the first answer waits
	}{
		{"the identity's share", Limits{AnswerBytesInFlightPerIdentity: 1, AnswerBytesInFlight: 1 << 30}, http.StatusOK},
		{"the replica's", Limits{AnswerBytesInFlightPerIdentity: 1 << 30, AnswerBytesInFlight: 1}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := testServer(t)
			srv.Auth, srv.Limits = tokenUsers(), tc.limits
			h := srv.Handler()
			read := func(w http.ResponseWriter, token string) {
				r := httptest.NewRequest(http.MethodGet, "/v1/namespaces/ns/conversations/c/messages", http.NoBody)
				r.Header.Set("Authorization", "Bearer "+token)
				h.ServeHTTP(w, r)
			}
			stuck := &stuckWriter{header: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
			served := make(chan struct{})
			go func() { defer close(served); read(stuck, "alice") }()
			select {
			case <-stuck.blocked:
			case <-time.After(5 * time.Second):
				t.Fatal("the first read never wrote its answer")
			}
			if stuck.status != http.StatusOK {
				t.Fatalf("the first answer, larger than the bound but alone, is %d, want 200", stuck.status)
			}

			same := httptest.NewRecorder()
			read(same, "alice")
			wantSame := http.StatusTooManyRequests
			if tc.otherCode != http.StatusOK {
				wantSame = tc.otherCode
			}
			if same.Code != wantSame || same.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("a second read of the same identity while its answer waits: %d %q, want %d problem+json",
					same.Code, same.Header().Get("Content-Type"), wantSame)
			}
			other := httptest.NewRecorder()
			read(other, "bob")
			if other.Code != tc.otherCode {
				t.Errorf("another identity's read while the answer waits: %d, want %d", other.Code, tc.otherCode)
			}

			close(stuck.release)
			<-served
			after := httptest.NewRecorder()
			read(after, "alice")
			if after.Code != http.StatusOK {
				t.Errorf("a read once the answer was written: %d, want 200: the budget was not given back", after.Code)
			}
		})
	}
}
