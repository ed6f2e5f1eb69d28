package blackbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/test/support/cluster"
)

// refused fails t unless err is the admission policy's refusal.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s was admitted, want refused", what)
		return
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want Forbidden by the admission policy", what, err)
	}
}

// updateLatest updates c's latest version of conv with change, as a person retrying after a
// conflict does: the manager writes the Conversation meanwhile, and a conflict would come
// before admission is asked.
func updateLatest(ctx context.Context, c client.Client, conv *parleyv1alpha1.Conversation, change func(*parleyv1alpha1.Conversation)) error {
	var err error
	for range 5 {
		latest := &parleyv1alpha1.Conversation{}
		if err = c.Get(ctx, client.ObjectKeyFromObject(conv), latest); err != nil {
			return err
		}
		change(latest)
		if err = c.Update(ctx, latest); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// agentNeedsPodCreate: a person bound only to Parley's conversation editor role may not make
// the manager run a pod for them.
func agentNeedsPodCreate(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "authors")
	e.bindRole(ctx, t, ns, "ClusterRole", editorRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "eve"})
	eve := e.user("eve")

	refused(t, "an editor's Conversation with an agent", eve.Create(ctx, withAgent(historyOnly(ns, "eve-agent"), "")))
	refused(t, "an editor's Conversation with an agent as another ServiceAccount",
		eve.Create(ctx, withAgent(historyOnly(ns, "eve-agent-sa"), "agent")))

	// Without an agent it is admitted; adding one later is not.
	plain := historyOnly(ns, "eve-plain")
	if err := eve.Create(ctx, plain); err != nil {
		t.Fatalf("an editor's Conversation without an agent: %v", err)
	}
	refused(t, "an editor adding an agent by update", updateLatest(ctx, eve, plain, func(c *parleyv1alpha1.Conversation) { withAgent(c, "") }))
	patch := []byte(`{"spec":{"agent":{"template":{"spec":{"containers":[{"name":"agent","image":"registry.example/agent:1"}]}}}}}`)
	refused(t, "an editor adding an agent by merge patch", eve.Patch(ctx, plain.DeepCopy(), client.RawPatch("application/merge-patch+json", patch)))

	// An agent someone allowed set up: the editor may not change its template.
	owned := withAgent(historyOnly(ns, "owned"), "")
	e.create(ctx, t, owned)
	refused(t, "an editor changing the image of an agent", updateLatest(ctx, eve, owned, func(c *parleyv1alpha1.Conversation) {
		c.Spec.Agent.Template.Spec.Containers[0].Image = "registry.example/eve:1"
		c.Spec.Agent.Template.Spec.HostNetwork = true
	}))

	pods := &corev1.PodList{}
	if err := e.admin.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if strings.Contains(c.Image, "eve") || strings.HasPrefix(p.Name, "eve-") {
				t.Errorf("pod %s runs %s for the editor", p.Name, c.Image)
			}
		}
	}
}

// recorder is an OpenAI-compatible summarizer that records what it was sent.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "METHOD path authorization-header"
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path+" "+req.Header.Get("Authorization")+req.Header.Get("X-Api-Key")+" "+string(body))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"summaries-1",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"a summary"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	}))
	t.Cleanup(r.Close)
	return r
}

// seen is how many requests arrived, and how many carried key.
func (r *recorder) seen(key string) (all, withKey int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.requests {
		if strings.Contains(s, key) {
			withKey++
		}
	}
	return len(r.requests), withKey
}

func randomKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "sk-blackbox-" + hex.EncodeToString(b)
}

// summarizerKeyNeedsSecretGet: a person who may not read a Secret never gets its apiKey sent
// to an endpoint of theirs, by creating a Conversation or by moving another's summarizer.
func summarizerKeyNeedsSecretGet(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "summaries")
	key := randomKey()
	e.create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: summarizerSecret}, StringData: map[string]string{"apiKey": key}})
	e.bindRole(ctx, t, ns, "ClusterRole", editorRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "eve"})
	eve := e.user("eve")
	legit, stolen := newRecorder(t), newRecorder(t)

	refused(t, "an editor's summarizer with a Secret they may not read",
		eve.Create(ctx, withSummarizer(historyOnly(ns, "eve-summarized"), stolen.URL)))

	// The owner's conversation compacts through the legitimate endpoint: the recorder sees the
	// key, so it would see it at the other endpoint too.
	owned := withSummarizer(historyOnly(ns, "summarized"), legit.URL)
	e.conversation(ctx, t, owned)
	agent := e.agentToken(ctx, t, ns)
	// grow appends turns past the compaction threshold: the summarizer is called without a
	// forced compaction (those are spaced minutes apart).
	grow := func(what string) {
		t.Helper()
		if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, owned.Name)+"/messages", agent,
			appendBody(fmt.Sprintf("m%d", time.Now().UnixNano()), 30, strings.Repeat("words ", 50))); err != nil || res.StatusCode >= 300 {
			t.Fatalf("%s: append: %v %v %s", what, err, res, body)
		}
	}
	grow("the owner's compaction")
	e.eventually(ctx, t, "the legitimate summarizer receives the key", func() error {
		if _, n := legit.seen(key); n == 0 {
			return fmt.Errorf("no request with the key yet")
		}
		return nil
	})

	if err := eve.Get(ctx, client.ObjectKeyFromObject(owned), owned); err != nil {
		t.Fatal(err)
	}
	// Patches, not updates: the manager writes the Conversation meanwhile, and an update of
	// this copy would fail with a conflict before admission is asked.
	moved := owned.DeepCopy()
	moved.Spec.Context.Summarizer.Endpoint = stolen.URL
	refused(t, "an editor moving another's summarizer to their endpoint", eve.Patch(ctx, moved, client.MergeFrom(owned)))
	renamed := owned.DeepCopy()
	renamed.Spec.Context.Summarizer.Endpoint = strings.Replace(stolen.URL, "127.0.0.1", "localhost", 1)
	refused(t, "an editor moving another's summarizer (another spelling)", eve.Patch(ctx, renamed, client.MergeFrom(owned)))
	// The editor may still change what needs no Secret.
	ttl := owned.DeepCopy()
	ttl.Spec.Lifetime.TTL = &metav1.Duration{Duration: 48 * time.Hour}
	if err := eve.Patch(ctx, ttl, client.MergeFrom(owned)); err != nil {
		t.Errorf("an editor changing the TTL: %v, want admitted", err)
	}

	calls, _ := legit.seen(key)
	grow("a compaction after the attempts")
	e.eventually(ctx, t, "the summarizer is called again after the attempts", func() error {
		if n, _ := legit.seen(key); n == calls {
			return fmt.Errorf("still %d calls", n)
		}
		return nil
	})
	if all, n := stolen.seen(key); all > 0 {
		t.Errorf("the editor's endpoint received %d requests, %d with the key", all, n)
	}
}

// forkNeedsHistoryGet: an author whose rights cover their own conversations only cannot copy
// another's history by a fork, nor open it by pinning its session id.
func forkNeedsHistoryGet(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "forks")
	const secretText = "the victim's secret words"
	victim := historyOnly(ns, "victim")
	e.conversation(ctx, t, victim)
	agent := e.agentToken(ctx, t, ns)
	if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, "victim")+"/messages", agent, appendBody("v", 3, secretText)); err != nil || res.StatusCode >= 300 {
		t.Fatalf("append to the victim: %v %v %s", err, res, body)
	}
	ckpt := &parleyv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim-manual"},
		Spec:       parleyv1alpha1.CheckpointSpec{ConversationRef: parleyv1alpha1.ConversationReference{Name: "victim"}, Reason: parleyv1alpha1.CheckpointManual},
	}
	e.create(ctx, t, ckpt)
	e.eventually(ctx, t, "the victim's Checkpoint is Ready", func() error {
		if err := e.admin.Get(ctx, client.ObjectKeyFromObject(ckpt), ckpt); err != nil {
			return err
		}
		if ckpt.Status.Phase != parleyv1alpha1.CheckpointReady {
			return fmt.Errorf("phase %q", ckpt.Status.Phase)
		}
		return nil
	})
	if err := e.admin.Get(ctx, client.ObjectKeyFromObject(victim), victim); err != nil {
		t.Fatal(err)
	}

	// mallory: a ServiceAccount that may create Conversations and read the history of its own.
	mine := []string{"mine", "fork-named-mine", "alias", "a-0", "a-1", "a-2", "a-3", "a-4"}
	e.create(ctx, t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mallory"}})
	e.create(ctx, t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mallory"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"parley.dev"}, Resources: []string{"conversations"}, Verbs: []string{"create", "get", "list", "watch"}},
		{APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/history"}, Verbs: []string{"get", "create"}, ResourceNames: mine},
		{APIGroups: []string{"parley.dev"}, Resources: []string{"checkpoints"}, Verbs: []string{"get", "list"}},
	}})
	e.bindRole(ctx, t, ns, "Role", "mallory", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "mallory"})
	mallory := e.bearer(t, e.token(ctx, t, ns, "mallory", time.Hour, "", nil))
	malloryAPI := e.token(ctx, t, ns, "mallory", time.Hour, audience, nil)

	fork := func(name, conv string) *parleyv1alpha1.Conversation {
		f := historyOnly(ns, name)
		f.Spec.ForkFrom = &parleyv1alpha1.ForkSource{Checkpoint: ckpt.Name, Conversation: conv}
		return f
	}
	refused(t, "a fork naming the victim", mallory.Create(ctx, fork("fork-named-victim", "victim")))
	refused(t, "a fork naming no conversation", mallory.Create(ctx, fork("fork-unnamed", "")))

	// Naming a conversation of hers with the victim's Checkpoint: admitted, never copied.
	lying := fork("fork-named-mine", "mine")
	if err := mallory.Create(ctx, lying); err != nil {
		t.Fatalf("a fork naming her own conversation: %v (the controller is what refuses it)", err)
	}
	// Pinning the victim's session id on the same ConfigMaps (named by prefix and session id).
	alias := historyOnly(ns, "alias")
	alias.Spec.SessionID = victim.Status.SessionID
	alias.Spec.History.ConfigMap.Name = victim.Name
	if err := mallory.Create(ctx, alias); err != nil {
		t.Logf("a Conversation pinning the victim's session id: refused at admission: %v", err)
		alias = nil
	}
	for _, c := range []*parleyv1alpha1.Conversation{lying, alias} {
		if c == nil {
			continue
		}
		if err := cluster.WaitFor(ctx, e.admin, c, func(cv *parleyv1alpha1.Conversation) bool {
			return meta.FindStatusCondition(cv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable) != nil
		}); err != nil {
			t.Fatalf("%s: no HistoryAvailable condition: %v", c.Name, err)
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		t.Logf("%s: HistoryAvailable=%s %s", c.Name, cond.Status, cond.Reason)
		for _, path := range []string{"/messages", "/resume", "/state", ""} {
			res, body, err := e.do(ctx, http.MethodGet, convPath(ns, c.Name)+path, malloryAPI, nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(body), secretText) {
				t.Errorf("%s: GET %s (%d) gave her the victim's messages", c.Name, path, res.StatusCode)
			}
		}
	}
	if err := e.admin.Get(ctx, client.ObjectKeyFromObject(victim), victim); err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(victim.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable); cond != nil {
		t.Logf("victim (created %s): HistoryAvailable=%s %s", victim.CreationTimestamp.UTC().Format(time.RFC3339), cond.Status, cond.Reason)
	}
	if alias != nil {
		t.Logf("alias created %s", alias.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	sameSecondPin(ctx, t, e, ns, mallory, malloryAPI)
	// And directly: her token reaches only her own conversations.
	if res, _, err := e.do(ctx, http.MethodGet, convPath(ns, "victim")+"/messages", malloryAPI, nil); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("her token reading the victim: %v %v, want 403", err, res)
	}
}

// sameSecondPin: whoever watches Conversations pins a new one's session id (read from its
// status a moment after it is created) on a Conversation whose name sorts first, within the
// same second: creation times have whole seconds, so the tie goes to the name.
func sameSecondPin(ctx context.Context, t *testing.T, e *env, ns string, mallory client.Client, malloryAPI string) {
	t.Helper()
	for i := range 5 {
		victim := historyOnly(ns, fmt.Sprintf("z-victim-%d", i))
		e.create(ctx, t, victim)
		for victim.Status.SessionID == "" {
			time.Sleep(10 * time.Millisecond)
			if err := e.admin.Get(ctx, client.ObjectKeyFromObject(victim), victim); err != nil {
				t.Fatal(err)
			}
		}
		alias := historyOnly(ns, fmt.Sprintf("a-%d", i))
		alias.Spec.SessionID = victim.Status.SessionID
		alias.Spec.History.ConfigMap.Name = victim.Name
		if err := mallory.Create(ctx, alias); err != nil {
			t.Fatalf("a Conversation pinning the victim's session id: %v", err)
		}
		if !alias.CreationTimestamp.Equal(&victim.CreationTimestamp) {
			continue // not the same second: try again
		}
		if err := cluster.WaitFor(ctx, e.admin, alias, func(cv *parleyv1alpha1.Conversation) bool {
			return meta.FindStatusCondition(cv.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable) != nil
		}); err != nil {
			t.Fatalf("%s: no HistoryAvailable condition: %v", alias.Name, err)
		}
		cond := meta.FindStatusCondition(alias.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
		res, _, err := e.do(ctx, http.MethodGet, convPath(ns, alias.Name)+"/messages", malloryAPI, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cond.Status == metav1.ConditionTrue || res.StatusCode == http.StatusOK {
			t.Errorf("%s pinned the session id of %s, created in the same second: HistoryAvailable=%s %s, GET /messages %d: "+
				"it opens the history %s keeps", alias.Name, victim.Name, cond.Status, cond.Reason, res.StatusCode, victim.Name)
		}
		return
	}
	t.Log("no pin landed in the same second as its victim in 5 tries")
}
