package blackbox_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// forcedCompactionInterval: an agent asking for a compaction every second must not make the
// manager call the (paid) summarizer every second, nor leave a Checkpoint each time.
func forcedCompactionInterval(ctx context.Context, t *testing.T, e *env) {
	ns := e.namespace(ctx, t, "compact")
	e.create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-key"}, StringData: map[string]string{"apiKey": randomKey()}})
	agent := e.agentToken(ctx, t, ns)
	const requests = 8
	// run grows the conversation by about 330 tokens a second, asking for a compaction each
	// time when force says so, and returns the summarizer calls and Compaction Checkpoints.
	run := func(name string, force bool) (calls, compactions int) {
		t.Helper()
		llm := newRecorder(t)
		conv := withSummarizer(historyOnly(ns, name), llm.URL, "llm-key")
		e.conversation(ctx, t, conv)
		for i := range requests {
			if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, name)+"/messages", agent,
				appendBody(fmt.Sprintf("c%d", i), 6, strings.Repeat("words ", 50))); err != nil || res.StatusCode >= 300 {
				t.Fatalf("append: %v %v %s", err, res, body)
			}
			if force {
				if res, body, err := e.do(ctx, http.MethodPost, convPath(ns, name)+"/compact", agent, nil); err != nil || res.StatusCode != http.StatusAccepted {
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
		if force && calls == 0 {
			_ = e.admin.Get(ctx, client.ObjectKeyFromObject(conv), conv)
			t.Fatalf("no summarizer call at all: the case tests nothing (conditions %+v, manager log %s)", conv.Status.Conditions, e.logPath)
		}
		return calls, compactions
	}
	// The same growth without asking: the threshold alone.
	unforced, _ := run("quiet", false)
	calls, compactions := run("chatty", true)
	t.Logf("%d forced compaction requests about a second apart: %d summarizer calls, %d Compaction Checkpoints (the same growth unforced: %d calls)",
		requests, calls, compactions, unforced)
	if calls > unforced+1 {
		inFlight(t, "%d forced compactions in %s made %d summarizer calls and left %d Compaction Checkpoints: no minimum interval",
			requests, time.Duration(requests)*1100*time.Millisecond, calls, compactions)
	}
}
