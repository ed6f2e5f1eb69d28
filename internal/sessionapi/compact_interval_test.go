package sessionapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

func TestNextForcedCompaction(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	requested := func(t time.Time) func(*parleyv1alpha1.Conversation) {
		return func(c *parleyv1alpha1.Conversation) {
			c.Annotations = map[string]string{parleyv1alpha1.AnnotationCompactRequestedAt: t.Format(time.RFC3339)}
		}
	}
	compacted := func(t time.Time) func(*parleyv1alpha1.Conversation) {
		return func(c *parleyv1alpha1.Conversation) {
			c.Status.LastCompaction = &parleyv1alpha1.CompactionRecord{Time: &metav1.Time{Time: t}}
		}
	}
	for name, tc := range map[string]struct {
		with []func(*parleyv1alpha1.Conversation)
		want time.Time
	}{
		"never asked, never compacted": {},
		"after the last request":       {with: []func(*parleyv1alpha1.Conversation){requested(at)}, want: at.Add(time.Minute)},
		"after the last compaction":    {with: []func(*parleyv1alpha1.Conversation){compacted(at)}, want: at.Add(time.Minute)},
		"after the later of both": {
			with: []func(*parleyv1alpha1.Conversation){requested(at), compacted(at.Add(30 * time.Second))}, want: at.Add(90 * time.Second),
		},
		"an unreadable request counts as none": {
			with: []func(*parleyv1alpha1.Conversation){func(c *parleyv1alpha1.Conversation) {
				c.Annotations = map[string]string{parleyv1alpha1.AnnotationCompactRequestedAt: "yesterday"}
			}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			conv := &parleyv1alpha1.Conversation{}
			for _, w := range tc.with {
				w(conv)
			}
			if got := nextForcedCompaction(conv, time.Minute); !got.Equal(tc.want) {
				t.Errorf("next forced compaction at %v, want %v", got, tc.want)
			}
		})
	}
}

// TestForcedCompactionTooSoon: a forced compaction asked for within the interval of the last
// one is refused with 429 and a Retry-After that says when it may be asked again.
func TestForcedCompactionTooSoon(t *testing.T) {
	srv, _ := testServer(t)
	srv.MinCompactionInterval = 10 * time.Minute
	ask := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/namespaces/ns/conversations/c/compact", http.NoBody)
		req.Header.Set("Authorization", "Bearer agent")
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	if rec := ask(); rec.Code != http.StatusAccepted {
		t.Fatalf("the first request answered %d, want 202", rec.Code)
	}
	rec := ask()
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a second request at once answered %d, want 429", rec.Code)
	}
	if got, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || got < 590 || got > 600 {
		t.Errorf("Retry-After %q, want the seconds left of the 10 minutes", rec.Header().Get("Retry-After"))
	}
}

// staleReader answers every Conversation read with conv, as a cache that has not seen the
// latest writes yet does.
type staleReader struct {
	client.Reader
	conv *parleyv1alpha1.Conversation
}

func (r staleReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.conv.DeepCopyInto(obj.(*parleyv1alpha1.Conversation))
	return nil
}

// A request recorded a moment ago, by another replica or by this one, that the cache has not
// seen yet still counts: the request is written only over the version checked, and once the
// API server says the Conversation changed, it is read from there and refused (429).
func TestForcedCompactionTooSoonWhileTheCacheIsBehind(t *testing.T) {
	srv, conv := testServer(t)
	srv.MinCompactionInterval = 10 * time.Minute
	stale := &parleyv1alpha1.Conversation{}
	if err := srv.Writer.Get(t.Context(), client.ObjectKeyFromObject(conv), stale); err != nil {
		t.Fatal(err)
	}
	srv.Reader = staleReader{Reader: srv.Reader, conv: stale}
	// The other replica's request, which the cache has not seen.
	other := stale.DeepCopy()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, parleyv1alpha1.AnnotationCompactRequestedAt, time.Now().UTC().Format(time.RFC3339))
	if err := srv.Writer.Patch(t.Context(), other, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/namespaces/ns/conversations/c/compact", http.NoBody)
	req.Header.Set("Authorization", "Bearer agent")
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a request while the cache missed the other replica's: %d %s, want 429", rec.Code, rec.Body)
	}
}
