package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/sessionapi"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/metricstext"
)

// The Session API attacked as cmd/manager wires it: the flags parsed by bindFlags with their
// defaults (only the address, plain HTTP and a short re-authorisation interval given), the
// manager built by managerOptions and setupManager, on a real API server (envtest) whose
// TokenReviews and SubjectAccessReviews are counted at the API server.

const limitsNS = "limits"

type wiredAPI struct {
	url      string
	host     string // the API server
	harness  client.Client
	apiHC    *http.Client
	token    string // a ServiceAccount allowed to read and write every conversation of limitsNS
	accessLg *syncBuffer
}

func startWiredAPI(t *testing.T) *wiredAPI {
	t.Helper()
	logs := &syncBuffer{}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs)))
	cfg, stopEnv, err := kubeenv.StartWithCRDs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopEnv)
	port, err := managerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	bindFlags(fs, &o)
	if err := fs.Parse([]string{
		"--session-api-bind-address=" + fmt.Sprintf("127.0.0.1:%d", port), "--session-api-insecure",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false",
		"--session-api-follow-reauthorize=1s",
	}); err != nil {
		t.Fatal(err)
	}
	restCfg := withRates(rest.CopyConfig(cfg), o)
	opts := managerOptions(o)
	opts.Controller = config.Controller{SkipNameValidation: ptrTo(true)}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := setupManager(ctx, restCfg, mgr, o); err != nil {
		t.Fatal(err)
	}
	if err := kubeenv.StartManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	harness, _, err := kubeenv.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apiHC, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &wiredAPI{url: fmt.Sprintf("http://127.0.0.1:%d", port), host: cfg.Host, harness: harness, apiHC: apiHC, accessLg: logs}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: limitsNS}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: limitsNS, Name: "history"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/" + sessionapi.HistorySubresource}, Verbs: []string{"get", "create"},
		}}},
	} {
		w.create(t, obj)
	}
	w.token = w.serviceAccount(t, "agent")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Session API did not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return w
}

func ptrTo[T any](v T) *T { return &v }

func (w *wiredAPI) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := w.harness.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// serviceAccount creates ServiceAccount name in limitsNS, bound to the history Role, and
// returns a token of it for audience parley.
func (w *wiredAPI) serviceAccount(t *testing.T, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: limitsNS, Name: name}}
	w.create(t, sa)
	w.create(t, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: limitsNS, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "history"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: limitsNS, Name: name}},
	})
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{wire.Audience}}}
	if err := w.harness.SubResource("token").Create(context.Background(), sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// conversation creates a Conversation with a ConfigMap history and waits until it is available.
func (w *wiredAPI) conversation(t *testing.T, name string) {
	t.Helper()
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: limitsNS, Name: name},
		Spec:       parleyv1alpha1.ConversationSpec{History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}}},
	}
	w.create(t, conv)
	deadline := time.Now().Add(30 * time.Second)
	for !meta.IsStatusConditionTrue(conv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no history after 30 s", name)
		}
		time.Sleep(50 * time.Millisecond)
		if err := w.harness.Get(context.Background(), client.ObjectKeyFromObject(conv), conv); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *wiredAPI) path(conv string) string {
	return w.url + "/v1/namespaces/" + limitsNS + "/conversations/" + conv
}

// get sends a GET with token and returns the response (body drained).
func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res
}

// tokenReviews is how many TokenReviews the API server has answered.
func (w *wiredAPI) tokenReviews(t *testing.T) float64 {
	t.Helper()
	m, err := metricstext.Scrape(context.Background(), w.apiHC, strings.TrimSuffix(w.host, "/")+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return m.Sum("apiserver_request_total", "resource", "tokenreviews", "verb", "POST")
}

// hammer sends n GETs from 8 clients at once and counts the answers by status.
func hammer(t *testing.T, n int, request func(i int) *http.Response) map[int]int {
	var mu sync.Mutex
	counts := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				res := request(i)
				mu.Lock()
				counts[res.StatusCode]++
				mu.Unlock()
				if res.StatusCode == http.StatusTooManyRequests {
					if res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != wire.ProblemContentType {
						t.Errorf("429 without Retry-After or problem+json: %v", res.Header)
					}
				}
			}
		})
	}
	wg.Wait()
	return counts
}

func TestSessionAPILimitsAsWired(t *testing.T) {
	w := startWiredAPI(t)
	w.conversation(t, "busy")

	t.Run("a conversation past its rate gets 429", func(t *testing.T) {
		counts := hammer(t, 2000, func(int) *http.Response { return get(t, w.path("busy"), w.token) })
		t.Logf("answers: %v", counts)
		if counts[http.StatusTooManyRequests] == 0 || counts[http.StatusOK] == 0 {
			t.Errorf("2,000 back-to-back requests to one conversation: %v, want some 200 and some 429", counts)
		}
	})

	t.Run("a junk-token flood costs few TokenReviews and spares known callers", func(t *testing.T) {
		time.Sleep(3 * time.Second) // the conversation's bucket refills
		if res := get(t, w.path("busy"), w.token); res.StatusCode != http.StatusOK {
			t.Fatalf("known caller before the flood: %d", res.StatusCode)
		}
		before := w.tokenReviews(t)
		counts := hammer(t, 2000, func(i int) *http.Response {
			if i%100 == 0 { // a known caller, from the same address, in the middle of the flood
				res := get(t, w.path("busy"), w.token)
				if res.StatusCode != http.StatusOK {
					t.Errorf("known caller during the flood: %d", res.StatusCode)
				}
			}
			return get(t, w.path("busy"), fmt.Sprintf("junk-%d-%d", i, time.Now().UnixNano()))
		})
		reviews := w.tokenReviews(t) - before
		t.Logf("answers: %v; TokenReviews: %.0f", counts, reviews)
		if reviews >= 500 {
			t.Errorf("2,000 junk tokens cost %.0f TokenReviews, want fewer than 500", reviews)
		}
		if counts[http.StatusTooManyRequests] == 0 {
			t.Errorf("no 429 for a junk-token flood from one address: %v", counts)
		}
	})

	t.Run("follow streams are capped per conversation and per identity", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		follower := w.serviceAccount(t, "follower")
		for _, name := range []string{"tailed-a", "tailed-b", "tailed-c"} {
			w.conversation(t, name)
		}
		open := func(conv string) int {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.path(conv)+"/messages?follow=true", nil)
			req.Header.Set("Authorization", "Bearer "+follower)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK {
				_ = res.Body.Close()
			}
			return res.StatusCode
		}
		d := sessionapi.DefaultLimits
		for i := range d.FollowsPerConversation {
			if code := open("tailed-a"); code != http.StatusOK {
				t.Fatalf("stream %d of tailed-a: %d", i+1, code)
			}
		}
		if code := open("tailed-a"); code != http.StatusTooManyRequests {
			t.Errorf("stream %d of one conversation: %d, want 429", d.FollowsPerConversation+1, code)
		}
		for i := d.FollowsPerConversation; i < d.FollowsPerIdentity; i++ {
			if code := open("tailed-b"); code != http.StatusOK {
				t.Fatalf("stream %d of the identity: %d", i+1, code)
			}
		}
		if code := open("tailed-c"); code != http.StatusTooManyRequests {
			t.Errorf("stream %d of one identity: %d, want 429", d.FollowsPerIdentity+1, code)
		}
	})

	t.Run("a revoked caller's follow stream ends", func(t *testing.T) {
		revoked := w.serviceAccount(t, "revoked")
		req, _ := http.NewRequest(http.MethodGet, w.path("busy")+"/messages?follow=true", nil)
		req.Header.Set("Authorization", "Bearer "+revoked)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("follow: %d", res.StatusCode)
		}
		ended := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, res.Body)
			close(ended)
		}()
		if err := w.harness.Delete(context.Background(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: limitsNS, Name: "revoked"}}); err != nil {
			t.Fatal(err)
		}
		revokedAt := time.Now()
		// Bound: the re-authorisation interval (1 s here) plus the review cache's TTL.
		select {
		case <-ended:
			t.Logf("the stream ended %s after the revocation", time.Since(revokedAt).Round(time.Millisecond))
		case <-time.After(sessionapi.DefaultReviewTTL + 5*time.Second):
			t.Error("the stream of a caller whose access was revoked is still open")
		}
	})

	t.Run("request bodies in flight are bounded per identity", func(t *testing.T) {
		slow := w.serviceAccount(t, "slow")
		d := sessionapi.DefaultLimits
		held := int(d.BodyBytesInFlightPerIdentity / d.MaxBodyBytes)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		// Each request announces the largest body and sends none of it: it holds its bytes.
		send := func() net.Conn {
			c, err := net.Dial("tcp", strings.TrimPrefix(w.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			_, _ = fmt.Fprintf(c, "POST /v1/namespaces/%s/conversations/busy/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", limitsNS, slow, d.MaxBodyBytes)
			return c
		}
		for range held {
			send()
		}
		time.Sleep(500 * time.Millisecond) // the held requests are admitted
		res, err := http.ReadResponse(bufio.NewReader(send()), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Errorf("request %d of one identity announcing %d body bytes: %d, want 429 with Retry-After", held+1, d.MaxBodyBytes, res.StatusCode)
		}
	})

	t.Run("every request is in the access log, without content", func(t *testing.T) {
		secret := "do-not-log-" + fmt.Sprint(time.Now().UnixNano())
		body := fmt.Sprintf(`{"messages":[{"id":"m1","role":"user","blocks":[{"type":"text","text":%q}]}]}`, secret)
		req, _ := http.NewRequest(http.MethodPost, w.path("busy")+"/messages", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+w.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		time.Sleep(100 * time.Millisecond)
		logs := w.accessLg.String()
		if strings.Contains(logs, secret) {
			t.Error("the access log holds message content")
		}
		var line string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "session-api-access") && strings.Contains(l, `"method":"POST"`) && strings.Contains(l, `"conversation":"busy"`) {
				line = l
			}
		}
		for _, want := range []string{`"user":"system:serviceaccount:limits:agent"`, `"status":`, `"requestBytes":`, `"responseBytes":`, `"durationMs":`, `/messages"`} {
			if !strings.Contains(line, want) {
				t.Errorf("access log line %q lacks %s", line, want)
			}
		}
	})
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAgentAPIURL: the flag wins, else the Service of the manager's namespace; with
// --session-api-insecure the API speaks plain HTTP, and agents are told http://.
func TestAgentAPIURL(t *testing.T) {
	for _, tc := range []struct {
		flag, namespace string
		insecure        bool
		want            string
	}{
		{"", "parley-system", false, "https://parley-session-api.parley-system.svc:8082"},
		{"", "parley-system", true, "http://parley-session-api.parley-system.svc:8082"},
		{"https://api.example.com:8082", "parley-system", false, "https://api.example.com:8082"},
		{"https://api.example.com:8082", "", true, "http://api.example.com:8082"},
		{"http://127.0.0.1:8082", "", true, "http://127.0.0.1:8082"},
		{"", "", false, ""},
	} {
		if got := agentAPIURL(tc.flag, tc.namespace, tc.insecure); got != tc.want {
			t.Errorf("agentAPIURL(%q, %q, %v) = %q, want %q", tc.flag, tc.namespace, tc.insecure, got, tc.want)
		}
	}
}
