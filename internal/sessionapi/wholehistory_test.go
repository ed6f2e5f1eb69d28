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
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/metrics"
	"github.com/parley-dev/parley/pkg/wire"
)

// get serves GET path of the test conversation to h.
func get(h http.Handler, path string) *httptest.ResponseRecorder {
	return getAs(h, "reader", "/v1/namespaces/ns/conversations/c"+path)
}

// getAs serves GET path to h with token.
func getAs(h http.Handler, token, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, http.NoBody)
	req.Header.Set("Authorization", "Bearer "+token)
	h.ServeHTTP(rec, req)
	return rec
}

// inOtherNamespace makes srv read, beside conv, a Conversation c of namespace other with the
// same history.
func inOtherNamespace(srv *Server, conv *parleyv1alpha1.Conversation) {
	same, other := conv.DeepCopy(), conv.DeepCopy()
	same.ResourceVersion = ""
	other.Namespace, other.UID, other.ResourceVersion = "other", "other-uid", ""
	srv.Reader = fake.NewClientBuilder().WithScheme(srv.Writer.Scheme()).WithObjects(same, other).Build()
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

// TestNamespaceBoundsItsIdentitiesTogether: identities reading conversations of one namespace
// share its history bytes per second: past them a read is 429 though its identity has room,
// naming the namespace's bound; with both past, the refusal names both and Retry-After is the
// longer wait. Another namespace's conversation is still served meanwhile.
func TestNamespaceBoundsItsIdentitiesTogether(t *testing.T) {
	srv, conv := testServer(t)
	inOtherNamespace(srv, conv)
	size := historyBytes(t, srv, conv)
	srv.Auth = tokenUsers()
	srv.Limits = Limits{
		HistoryBytesPerIdentity:  Rate{PerSecond: float64(size) / 10, Burst: 2 * size},
		HistoryBytesPerNamespace: Rate{PerSecond: float64(size) / 20, Burst: 3 * size},
	}
	now := time.Unix(1_700_000_000, 0)
	srv.now = func() time.Time { return now }
	h := srv.Handler()
	const ns, other = "/v1/namespaces/ns/conversations/c", "/v1/namespaces/other/conversations/c"
	for _, read := range []struct{ token, path string }{{"alice", "/resume?turn=1"}, {"alice", "/state"}, {"bob", "/resume?turn=1"}} {
		if rec := getAs(h, read.token, ns+read.path); rec.Code != http.StatusOK {
			t.Fatalf("%s GET %s within both bounds: %d %s", read.token, read.path, rec.Code, rec.Body)
		}
	}
	rec := getAs(h, "bob", ns+"/state")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "20" ||
		!strings.Contains(rec.Body.String(), "this namespace's answers from histories passed its history bytes per second") {
		t.Fatalf("bob past the namespace's bytes, within his own: %d Retry-After %q %s; want 429 after 20 s naming the namespace",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	rec = getAs(h, "alice", ns+"/state")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "20" ||
		!strings.Contains(rec.Body.String(), "this identity's and this namespace's answers from histories passed their history bytes per second") {
		t.Fatalf("alice past both bounds: %d Retry-After %q %s; want 429 after the longer wait, 20 s, naming both",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := getAs(h, "bob", other+"/state"); rec.Code != http.StatusOK {
		t.Fatalf("bob reading another namespace's conversation: %d %s; want 200", rec.Code, rec.Body)
	}
	now = now.Add(20 * time.Second)
	if rec := getAs(h, "bob", ns+"/state"); rec.Code != http.StatusOK {
		t.Fatalf("bob after Retry-After: %d %s", rec.Code, rec.Body)
	}
}

// TestRefusedHistoryChargeTakesNothing: a read one bucket refuses takes nothing from the
// other: a read that needs what the other held before is still served.
func TestRefusedHistoryChargeTakesNothing(t *testing.T) {
	type read struct{ token, path string }
	const ns, other = "/v1/namespaces/ns/conversations/c/state", "/v1/namespaces/other/conversations/c/state"
	for _, tc := range []struct {
		name                string
		identity, namespace int    // bursts, in histories
		refused             read   // after alice's first read of ns
		bound               string // that refused it
		then                read   // served only when the refused read took nothing
	}{
		{"by the namespace", 1, 1, read{"bob", ns}, "this namespace's answers", read{"bob", other}},
		{"by the identity", 1, 2, read{"alice", ns}, "this identity's answers", read{"bob", ns}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conv := testServer(t)
			inOtherNamespace(srv, conv)
			size := historyBytes(t, srv, conv)
			srv.Auth = tokenUsers()
			srv.Limits = Limits{
				HistoryBytesPerIdentity:  Rate{PerSecond: 1, Burst: tc.identity * size},
				HistoryBytesPerNamespace: Rate{PerSecond: 1, Burst: tc.namespace * size},
			}
			now := time.Unix(1_700_000_000, 0)
			srv.now = func() time.Time { return now }
			h := srv.Handler()
			if rec := getAs(h, "alice", ns); rec.Code != http.StatusOK {
				t.Fatalf("alice's first read: %d %s", rec.Code, rec.Body)
			}
			if rec := getAs(h, tc.refused.token, tc.refused.path); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), tc.bound) {
				t.Fatalf("%s GET %s: %d %s; want 429 naming %q", tc.refused.token, tc.refused.path, rec.Code, rec.Body, tc.bound)
			}
			if rec := getAs(h, tc.then.token, tc.then.path); rec.Code != http.StatusOK {
				t.Fatalf("%s GET %s after the refusal: %d %s; want 200 (the refusal took nothing from the other bucket)",
					tc.then.token, tc.then.path, rec.Code, rec.Body)
			}
		})
	}
}

// TestMessagePagesArePaidByTheNamespaceToo: a page of messages is charged to its namespace as
// well as to its reader: another identity of the namespace is refused while it is in debt.
func TestMessagePagesArePaidByTheNamespaceToo(t *testing.T) {
	srv, _ := testServer(t)
	srv.Auth = tokenUsers()
	srv.Limits = Limits{
		HistoryBytesPerIdentity:  Rate{PerSecond: 1 << 20, Burst: 1 << 20},
		HistoryBytesPerNamespace: Rate{PerSecond: 100, Burst: 10},
	}
	now := time.Unix(1_700_000_000, 0)
	srv.now = func() time.Time { return now }
	h := srv.Handler()
	const page = "/v1/namespaces/ns/conversations/c/messages"
	for i := range 2 { // the first takes the namespace's burst, the second puts it into debt
		if rec := getAs(h, "alice", page); rec.Code != http.StatusOK || rec.Body.Len() <= 10 {
			t.Fatalf("alice's page %d: %d, %d bytes; want 200 and a page larger than the namespace's burst", i+1, rec.Code, rec.Body.Len())
		}
	}
	rec := getAs(h, "bob", page)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "this namespace's answers") {
		t.Fatalf("bob's page while the namespace is in debt: %d %s; want 429 naming the namespace", rec.Code, rec.Body)
	}
	now = now.Add(time.Minute)
	if rec := getAs(h, "bob", page); rec.Code != http.StatusOK {
		t.Fatalf("bob's page once the debt is paid: %d %s", rec.Code, rec.Body)
	}
}

// TestConcurrentPagesSeeEachOthersCharges: pages of one conversation asked for all at once are
// charged one after the other under its view, so together they run no deeper into debt than
// one page: past the bucket, the rest are refused rather than built.
func TestConcurrentPagesSeeEachOthersCharges(t *testing.T) {
	measure, _ := testServer(t)
	page := get(measure.Handler(), "/messages").Body.Len()
	srv, conv := testServer(t) // its limits are read when its handler is made
	srv.Limits = Limits{HistoryBytesPerIdentity: Rate{PerSecond: 1, Burst: 2 * page}, HistoryBytesPerNamespace: Rate{PerSecond: 1, Burst: 100 * page}}
	now := time.Unix(1_700_000_000, 0)
	srv.now = func() time.Time { return now }
	h := srv.Handler()
	// The view is held while the clients arrive, as a large page being encoded would hold it:
	// they all wait for it together.
	live, err := srv.Sessions.Open(t.Context(), conv, false)
	if err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = live.With(t.Context(), func(*journal.View) error { close(held); <-release; return nil })
	}()
	<-held
	const clients = 20
	codes := make(chan int, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { codes <- get(h, "/messages").Code })
	}
	time.Sleep(200 * time.Millisecond) // the clients reach the view
	close(release)
	wg.Wait()
	close(codes)
	served := 0
	for c := range codes {
		if c == http.StatusOK {
			served++
		}
	}
	// Two pages from the full bucket, and one more into debt at most.
	if served > 3 {
		t.Errorf("%d of %d pages asked for at once were built and served; the bucket holds two", served, clients)
	}
}
