package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// forcedCompactionInterval: an agent (through the Session API) or an editor (through the
// annotation) asking for a compaction every second must not make the
// manager call the (paid) summarizer every second, nor leave a Checkpoint each time.
func forcedCompactionInterval(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "compact")
	e.create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: summarizerSecret}, StringData: map[string]string{"apiKey": randomKey()}})
	agent := e.agentToken(ctx, t, ns)
	e.bindRole(ctx, t, ns, "ClusterRole", editorRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "eve"})
	editor := e.user("eve")
	const requests = 8
	// run grows the conversation by about 330 tokens a second, asking for a compaction each
	// time by the Session API or by the annotation it sets (through the Kubernetes API, as an
	// editor may), and returns the summarizer calls and Compaction Checkpoints.
	run := func(name string, ask asking) (calls, compactions int) {
		t.Helper()
		llm := newRecorder(t)
		conv := withSummarizer(historyOnly(ns, name), llm.URL)
		e.conversation(ctx, t, conv)
		for i := range requests {
			if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, name)+"/messages", agent,
				appendBody(fmt.Sprintf("c%d", i), 6, strings.Repeat("words ", 50))); err != nil || res.StatusCode >= 300 {
				t.Fatalf("append: %v %v %s", err, res, body)
			}
			switch ask {
			case byAnnotation:
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, parleyv1alpha1.AnnotationCompactRequestedAt, time.Now().UTC().Format(time.RFC3339))
				if err := editor.Patch(ctx, &parleyv1alpha1.Conversation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
					client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					t.Fatalf("an editor annotates: %v", err)
				}
			case bySessionAPI:
				// 202, or 429 with Retry-After once a compaction ran a moment ago.
				res, body, err := e.do(ctx, http.MethodPost, convPath(ns, name)+"/compact", agent, nil)
				if err != nil || (res.StatusCode != http.StatusAccepted && (res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "")) {
					t.Fatalf("compact: %v %v %s", err, res, body)
				}
			}
			time.Sleep(1100 * time.Millisecond) // a request in a new second is a new request
		}
		time.Sleep(5 * time.Second)
		calls, _ = llm.seen("")
		ckpts := &parleyv1alpha1.CheckpointList{}
		if err := e.admin.List(ctx, ckpts, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, c := range ckpts.Items {
			if c.Spec.Reason == parleyv1alpha1.CheckpointCompaction && c.Spec.ConversationRef.Name == name {
				compactions++
			}
		}
		if ask != notAsking && calls == 0 {
			_ = e.admin.Get(ctx, client.ObjectKeyFromObject(conv), conv)
			t.Fatalf("no summarizer call at all: the case tests nothing (conditions %+v, manager log %s)", conv.Status.Conditions, e.logPath)
		}
		return calls, compactions
	}
	// The same growth without asking: the threshold alone.
	unforced, _ := run("quiet", notAsking)
	calls, compactions := run("chatty", bySessionAPI)
	annotated, annotatedCompactions := run("annotated", byAnnotation)
	t.Logf("%d compactions asked for by annotation about a second apart: %d summarizer calls, %d Compaction Checkpoints",
		requests, annotated, annotatedCompactions)
	if annotated > unforced+1 {
		t.Errorf("an editor annotating %s %d times in %s made %d summarizer calls and left %d Compaction Checkpoints, want no more than the threshold's %d and one",
			parleyv1alpha1.AnnotationCompactRequestedAt, requests, time.Duration(requests)*1100*time.Millisecond, annotated, annotatedCompactions, unforced)
	}
	t.Logf("%d forced compaction requests about a second apart: %d summarizer calls, %d Compaction Checkpoints (the same growth unforced: %d calls)",
		requests, calls, compactions, unforced)
	if calls > unforced+1 {
		t.Errorf("%d forced compactions in %s made %d summarizer calls and left %d Compaction Checkpoints, want no more than the threshold's %d and one",
			requests, time.Duration(requests)*1100*time.Millisecond, calls, compactions, unforced)
	}
}

// asking is how a compaction is asked for.
type asking int

const (
	notAsking asking = iota
	bySessionAPI
	byAnnotation
)
