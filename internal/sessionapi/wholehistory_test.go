package sessionapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/wire"
)

// get serves GET path of the test conversation to h.
func get(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v1/namespaces/ns/conversations/c"+path, http.NoBody)
	req.Header.Set("Authorization", "Bearer reader")
	h.ServeHTTP(rec, req)
	return rec
}

// historyBytes is what a whole-history answer from conv's history costs.
func historyBytes(t *testing.T, srv *Server, conv *parleyv1alpha1.Conversation) int {
	t.Helper()
	live, err := srv.Sessions.Open(t.Context(), conv, false)
	if err != nil {
		t.Fatal(err)
	}
	var size int
	if err := live.With(t.Context(), func(v *journal.View) error { size = int(v.HistoryBytes()); return nil }); err != nil {
		t.Fatal(err)
	}
	return size
}

// resumeAnswers is how many GET …/resume answers came from source (built, cached, refused).
func resumeAnswers(source string) float64 {
	return testutil.ToFloat64(metrics.SessionAPIWholeHistoryAnswers.WithLabelValues("GET resume", source))
}

// TestIdenticalWholeHistoryReadsBuildOnce: 50 clients asking for the same resume bundle at
// once cause one build; the others are served the same answer.
func TestIdenticalWholeHistoryReadsBuildOnce(t *testing.T) {
	srv, _ := testServer(t)
	h := srv.Handler()
	built, cached := resumeAnswers("built"), resumeAnswers("cached")
	bodies := make([]string, 50)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			rec := get(h, "/resume")
			if rec.Code != http.StatusOK {
				t.Errorf("GET /resume: %d %s", rec.Code, rec.Body)
			}
			bodies[i] = rec.Body.String()
		})
	}
	wg.Wait()
	if n := resumeAnswers("built") - built; n != 1 {
		t.Errorf("50 identical GET /resume at once built %v bundles, want 1", n)
	}
	if n := resumeAnswers("cached") - cached; n != 49 {
		t.Errorf("answered %v from the cache, want 49", n)
	}
	for i, b := range bodies {
		if b != bodies[0] {
			t.Fatalf("answer %d differs from the first", i)
		}
	}
}

// TestCachedAnswerFollowsTheHistory: an append makes the next whole-history answer a new one.
func TestCachedAnswerFollowsTheHistory(t *testing.T) {
	srv, _ := testServer(t)
	h := srv.Handler()
	if rec := get(h, "/state"); rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "u3") {
		t.Fatalf("GET /state before the append: %d %s", rec.Code, rec.Body)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/namespaces/ns/conversations/c/messages",
		strings.NewReader(`{"messages":[{"id":"u3","role":"user","blocks":[{"type":"text","text":"next"}]}]}`))
	req.Header.Set("Authorization", "Bearer writer")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("append: %d %s", rec.Code, rec.Body)
	}
	if rec := get(h, "/state"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"u3"`) {
		t.Fatalf("GET /state after the append: %d, want 200 with the appended message: %s", rec.Code, rec.Body)
	}
}

// TestWholeHistoryAnswersPastTheRateGet429: whole-history answers are served within the
// identity's history bytes per second, whether they defeat the cache (another turn each time)
// or not; past them 429 says when to retry and which bound refused, and once that time has
// passed the next is served.
func TestWholeHistoryAnswersPastTheRateGet429(t *testing.T) {
	srv, conv := testServer(t)
	size := historyBytes(t, srv, conv)
	// Three answers at once, then one every 10 s.
	srv.Limits = Limits{HistoryBytesPerIdentity: Rate{PerSecond: float64(size) / 10, Burst: 3 * size}}
	now := time.Unix(1_700_000_000, 0)
	srv.now = func() time.Time { return now }
	h := srv.Handler()
	for _, path := range []string{"/resume?turn=1", "/resume?turn=2", "/state"} {
		if rec := get(h, path); rec.Code != http.StatusOK {
			t.Fatalf("GET %s within the burst: %d %s", path, rec.Code, rec.Body)
		}
	}
	for _, path := range []string{"/transcripts", "/state"} { // to be built, or in the cache
		rec := get(h, path)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("GET %s past the history bytes: %d, want 429", path, rec.Code)
		}
		if got := rec.Header().Get("Retry-After"); got != "10" {
			t.Errorf("GET %s: Retry-After %q, want 10 (one history's bytes at a tenth of them per second)", path, got)
		}
		var p wire.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Header().Get("Content-Type") != wire.ProblemContentType ||
			!strings.Contains(p.Detail, "history bytes per second") {
			t.Errorf("GET %s: the refusal is not problem+json naming its bound: %q %s", path, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	now = now.Add(10 * time.Second)
	if rec := get(h, "/transcripts"); rec.Code != http.StatusOK {
		t.Fatalf("GET /transcripts after Retry-After: %d %s", rec.Code, rec.Body)
	}
	if rec := get(h, "/state"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("GET /state right after: %d, want 429", rec.Code)
	}
}

// TestTranscriptPagesShareOneRendering: a client reading a transcript page by page pays for
// one rendering of it: with history bytes for one answer, every page is served.
func TestTranscriptPagesShareOneRendering(t *testing.T) {
	srv, conv := testServer(t)
	size := historyBytes(t, srv, conv)
	srv.Limits = Limits{HistoryBytesPerIdentity: Rate{PerSecond: 1, Burst: size}}
	h := srv.Handler()
	built := testutil.ToFloat64(metrics.SessionAPIWholeHistoryAnswers.WithLabelValues("GET transcript", "built"))
	pages := 0
	for offset := 0; ; pages++ {
		rec := get(h, "/transcript?limit=1&offset="+strconv.Itoa(offset))
		if rec.Code != http.StatusOK {
			t.Fatalf("page %d of the transcript: %d %s", pages+1, rec.Code, rec.Body)
		}
		var page wire.TranscriptPage
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		if page.Next == 0 {
			break
		}
		offset = page.Next
	}
	if pages < 2 {
		t.Fatalf("the transcript fits one page of one line (%d): the case tests nothing", pages+1)
	}
	if n := testutil.ToFloat64(metrics.SessionAPIWholeHistoryAnswers.WithLabelValues("GET transcript", "built")) - built; n != 1 {
		t.Errorf("%d pages rendered the transcript %v times, want once", pages+1, n)
	}
}

// TestMessagePagesArePaidByTheirBytes: pages of messages are charged their encoded bytes to the
// same bucket as whole-history answers, after they are built; a caller in debt is refused
// before its next page is built, with the time the debt takes to pay.
func TestMessagePagesArePaidByTheirBytes(t *testing.T) {
	srv, _ := testServer(t)
	srv.Limits = Limits{HistoryBytesPerIdentity: Rate{PerSecond: 100, Burst: 10}}
	now := time.Unix(1_700_000_000, 0)
	srv.now = func() time.Time { return now }
	h := srv.Handler()
	for i := range 2 { // the first takes the burst, the second goes into debt
		if rec := get(h, "/messages"); rec.Code != http.StatusOK || rec.Body.Len() <= 10 {
			t.Fatalf("page %d: %d, %d bytes; want 200 and a page larger than the burst", i+1, rec.Code, rec.Body.Len())
		}
	}
	rec := get(h, "/messages")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		!strings.Contains(rec.Body.String(), "history bytes per second") {
		t.Fatalf("a page in debt: %d Retry-After %q %s; want 429 after 1 s naming the bound", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	now = now.Add(time.Second)
	if rec := get(h, "/messages"); rec.Code != http.StatusOK {
		t.Fatalf("after Retry-After: %d %s", rec.Code, rec.Body)
	}
}
