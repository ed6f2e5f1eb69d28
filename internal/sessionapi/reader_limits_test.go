package sessionapi

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
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

// holdAnswer starts a read by token that never reads its answer, and returns once the
// answer waits to be written; release lets it be written.
func holdAnswer(t *testing.T, h http.Handler, token, path string) (release func()) {
	t.Helper()
	stuck := &stuckWriter{header: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		r := httptest.NewRequest(http.MethodGet, "/v1/namespaces/ns/conversations/c"+path, http.NoBody)
		r.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(stuck, r)
	}()
	select {
	case <-stuck.blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("the read never wrote its answer")
	}
	var once sync.Once
	release = func() { once.Do(func() { close(stuck.release); <-served }) }
	t.Cleanup(release)
	return release
}

// followIDs opens a follow stream as token and sends the id of every message event it reads.
func followIDs(t *testing.T, url, token, query string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	res := openFollow(ctx, t, url, token, query)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the follow answered %d", res.StatusCode)
	}
	ids := make(chan string, 100)
	go func() {
		defer func() { _ = res.Body.Close() }()
		lines := bufio.NewScanner(res.Body)
		for lines.Scan() {
			if id, ok := strings.CutPrefix(lines.Text(), "id: "); ok {
				ids <- id
			}
		}
	}()
	return ids
}

// TestFollowBatchesAreHeldWithinTheAnswerBudget: what a follow stream writes counts toward
// the answer budgets as a read's answer does: while the identity's share is held by an answer
// its client does not read, its stream sends nothing, and goes on once the answer is written.
func TestFollowBatchesAreHeldWithinTheAnswerBudget(t *testing.T) {
	srv, _ := testServer(t)
	srv.Auth, srv.Limits = tokenUsers(), Limits{AnswerBytesInFlightPerIdentity: 1}
	h := srv.Handler()
	web := httptest.NewServer(h)
	t.Cleanup(web.Close)

	release := holdAnswer(t, h, "alice", "/messages")
	ids := followIDs(t, web.URL, "alice", "")
	select {
	case id := <-ids:
		t.Fatalf("the stream sent message %s while the identity's answer budget was held", id)
	case <-time.After(time.Second):
	}
	release()
	wantIDs(t, ids, 1, 4, "once the answer was written")
}

// wantIDs reads the message ids first..last from ids, in order.
func wantIDs(t *testing.T, ids <-chan string, first, last int, why string) {
	t.Helper()
	for want := first; want <= last; want++ {
		select {
		case id := <-ids:
			if id != strconv.Itoa(want) {
				t.Fatalf("message %s, want %d", id, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d never came %s", want, why)
		}
	}
}

// TestFollowSendsAPageAtATime: a stream starting far behind sends the history a page at a
// time, so one batch never holds more than a page read would: with room in the replica's
// answer budget for about one message beside an answer held, it still sends every message.
func TestFollowSendsAPageAtATime(t *testing.T) {
	srv, _ := testServer(t)
	srv.Auth = tokenUsers()
	h := srv.Handler()
	text := strings.Repeat("x", 4<<10)
	msgs := make([]string, 0, 4)
	for i := range 4 {
		msgs = append(msgs, fmt.Sprintf(`{"id":"big%d","role":"user","blocks":[{"type":"text","text":%q}]}`, i, text))
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/namespaces/ns/conversations/c/messages",
		strings.NewReader(`{"messages":[`+strings.Join(msgs, ",")+`]}`))
	req.Header.Set("Authorization", "Bearer writer")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("appending: %d %s", rec.Code, rec.Body)
	}
	page := httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodGet, "/v1/namespaces/ns/conversations/c/messages?after=4&limit=1", http.NoBody)
	req.Header.Set("Authorization", "Bearer writer")
	h.ServeHTTP(page, req)
	one := int64(page.Body.Len())

	// A fresh server (the same history) whose budget holds an answer of one message and
	// about one more message: the four together do not fit.
	srv2 := &Server{
		Reader: srv.Reader, Writer: srv.Writer, Sessions: srv.Sessions, Auth: tokenUsers(),
		Limits: Limits{MaxPage: 1, AnswerBytesInFlight: 2*one + 100},
	}
	h2 := srv2.Handler()
	web := httptest.NewServer(h2)
	t.Cleanup(web.Close)
	holdAnswer(t, h2, "bob", "/messages?after=4&limit=1")
	wantIDs(t, followIDs(t, web.URL, "alice", "&after=4"), 5, 8, "(its batch did not fit the budget)")
}

// TestReadersCannotCutTheAgentOffItsConversation: readers holding every follow stream a
// conversation allows leave its own agent pod's stream admitted (its identity's bound still
// applies), while another reader's is 429.
func TestReadersCannotCutTheAgentOffItsConversation(t *testing.T) {
	srv, conv := testServer(t)
	srv.Limits = Limits{FollowsPerConversation: 1}
	conv.Status.Agent = &parleyv1alpha1.AgentStatus{PodName: "c-agent-1", PodUID: "pod-uid"}
	if err := srv.Writer.Update(t.Context(), conv); err != nil {
		t.Fatal(err)
	}
	srv.Auth = tokenUsers()
	srv.Auth.Client = interceptor.NewClient(srv.Auth.Client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if tr, ok := obj.(*authnv1.TokenReview); ok && tr.Spec.Token == "agent-pod" {
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"parley"}, User: authnv1.UserInfo{
					Username: "system:serviceaccount:ns:agent", UID: "sa-uid",
					Extra: map[string]authnv1.ExtraValue{extraPodName: {"c-agent-1"}, extraPodUID: {"pod-uid"}},
				}}
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(web.Close)
	followIDs(t, web.URL, "alice", "")
	if code := followCode(t, web.URL, "bob"); code != http.StatusTooManyRequests {
		t.Errorf("another reader's follow of a conversation whose streams are taken: %d, want 429", code)
	}
	if code := followCode(t, web.URL, "agent-pod"); code != http.StatusOK {
		t.Errorf("the conversation's agent pod's follow while readers hold its streams: %d, want 200", code)
	}
}

// followCode opens a follow stream as token and returns its status, closing the stream.
func followCode(t *testing.T, url, token string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := openFollow(ctx, t, url, token, "")
	defer func() { _ = res.Body.Close() }()
	return res.StatusCode
}

// openFollow opens a follow stream of ns/c as token, for as long as ctx lasts.
func openFollow(ctx context.Context, t *testing.T, url, token, query string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/namespaces/ns/conversations/c/messages?follow=true"+query, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
