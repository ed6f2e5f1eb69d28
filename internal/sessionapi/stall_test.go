package sessionapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// oneHistory is a session.Stores holding one history.
type oneHistory struct{ h history.History }

func (o oneHistory) Open(context.Context, *parleyv1alpha1.Conversation, bool) (history.History, error) {
	return o.h, nil
}

func (o oneHistory) Delete(context.Context, *parleyv1alpha1.Conversation) error { return nil }

// stuckWriter is a client that never reads its answer: its first Write blocks until release.
type stuckWriter struct {
	header  http.Header
	status  int
	once    sync.Once
	blocked chan struct{}
	release chan struct{}
}

func (w *stuckWriter) Header() http.Header { return w.header }

func (w *stuckWriter) WriteHeader(code int) { w.status = code }

func (w *stuckWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.blocked) })
	<-w.release
	return len(b), nil
}

// testServer serves one conversation, ns/c, over an in-memory history holding a few
// messages, to any token (TokenReview and SubjectAccessReview always allow).
func testServer(t *testing.T) (*Server, *parleyv1alpha1.Conversation) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := parleyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec:       parleyv1alpha1.ConversationSpec{Context: parleyv1alpha1.ContextSpec{Tokenizer: parleyv1alpha1.TokenizerApproximate}},
		Status: parleyv1alpha1.ConversationStatus{SessionID: "s1", Conditions: []metav1.Condition{{
			Type: parleyv1alpha1.ConditionHistoryAvailable, Status: metav1.ConditionTrue, Reason: parleyv1alpha1.ReasonHistoryReady,
			LastTransitionTime: metav1.Now(),
		}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(conv).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice", UID: "u1"}}
			case *authzv1.SubjectAccessReview:
				o.Status.Allowed = true
			}
			return nil
		},
	}).Build()
	h, err := memory.New(memory.Options{}).Open(t.Context(), "h", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"u1", "a1", "u2", "a2"}
	records := make([]history.Record, 0, len(ids))
	for _, id := range ids {
		role := conversation.RoleUser
		if id[0] == 'a' {
			role = conversation.RoleAssistant
		}
		rec, err := journal.MessageRecord(&conversation.Message{ID: id, Role: role, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: id}}})
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, rec)
	}
	if _, err := h.Append(t.Context(), records); err != nil {
		t.Fatal(err)
	}
	return &Server{Reader: c, Writer: c, Sessions: &session.Sessions{Stores: oneHistory{h}}, Auth: &Authorizer{Client: c}}, conv
}

// TestReaderThatNeverReadsStallsNothing: a client that opens a read and never reads its
// answer does not hold the conversation's view: an append to the same conversation and the
// reconcile's use of the view go on within 2 s while that answer waits to be written.
func TestReaderThatNeverReadsStallsNothing(t *testing.T) {
	for _, path := range []string{"", "/messages", "/state", "/transcripts", "/transcript", "/resume"} {
		t.Run("GET "+path, func(t *testing.T) {
			srv, conv := testServer(t)
			h := srv.Handler()
			stuck := &stuckWriter{header: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
			read := httptest.NewRequest(http.MethodGet, "/v1/namespaces/ns/conversations/c"+path, http.NoBody)
			read.Header.Set("Authorization", "Bearer reader")
			served := make(chan struct{})
			go func() {
				defer close(served)
				h.ServeHTTP(stuck, read)
			}()
			defer func() { close(stuck.release); <-served }()
			select {
			case <-stuck.blocked:
			case <-time.After(5 * time.Second):
				t.Fatal("the read never wrote its answer")
			}
			if stuck.status != http.StatusOK {
				t.Fatalf("the read answered %d, want 200", stuck.status)
			}

			appended := make(chan int, 1)
			go func() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/v1/namespaces/ns/conversations/c/messages",
					strings.NewReader(`{"messages":[{"id":"u3","role":"user","blocks":[{"type":"text","text":"next"}]}]}`))
				req.Header.Set("Authorization", "Bearer writer")
				h.ServeHTTP(rec, req)
				appended <- rec.Code
			}()
			select {
			case code := <-appended:
				if code != http.StatusOK {
					t.Fatalf("the append answered %d, want 200", code)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the append waited more than 2 s on a reader that does not read")
			}

			reconciled := make(chan error, 1)
			go func() {
				live, err := srv.Sessions.Open(t.Context(), conv, false)
				if err == nil {
					err = live.With(t.Context(), func(*journal.View) error { return nil })
				}
				reconciled <- err
			}()
			select {
			case err := <-reconciled:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the reconcile's view access waited more than 2 s on a reader that does not read")
			}
		})
	}
}
