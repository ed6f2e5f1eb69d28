package sessionapi

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/wire"
)

// A history whose stored bytes failed verification is not a transient failure: the answer is
// 500 history-corrupt without Retry-After, so a client does not retry in a loop (each retry
// would read the hostile bytes again). A store that is down stays 503 with Retry-After.
func TestStoreProblemOfACorruptHistory(t *testing.T) {
	for name, tt := range map[string]struct {
		err        error
		status     int
		typ        string
		retryAfter bool
	}{
		"corrupt":     {fmt.Errorf("segment: %w", history.ErrCorrupt), 500, wire.ProblemHistoryCorrupt, false},
		"unavailable": {fmt.Errorf("get: %w", history.ErrUnavailable), 503, wire.ProblemUnavailable, true},
		// Too much stored history being decoded at once on this replica: not the store's fault.
		"busy": {fmt.Errorf("segment: %w", history.ErrBusy), 503, wire.ProblemOverloaded, true},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeProblem(rec, storeProblem(tt.err), 0)
			p := storeProblem(tt.err)
			if rec.Code != tt.status || p.Type != tt.typ {
				t.Fatalf("answer %d %s, want %d %s", rec.Code, p.Type, tt.status, tt.typ)
			}
			if got := rec.Header().Get("Retry-After") != ""; got != tt.retryAfter {
				t.Fatalf("Retry-After sent: %v, want %v", got, tt.retryAfter)
			}
		})
	}
}

// The same holds once the controller has found the history corrupt: the Session API answers
// from the condition, without reading the history again.
func TestHistoryReadyOfACorruptHistory(t *testing.T) {
	conv := &parleyv1alpha1.Conversation{}
	meta.SetStatusCondition(&conv.Status.Conditions, metav1.Condition{
		Type: parleyv1alpha1.ConditionHistoryAvailable, Status: metav1.ConditionFalse,
		Reason: parleyv1alpha1.ReasonHistoryCorrupt, Message: "segment holds more than 67174400 bytes",
	})
	for _, read := range []bool{true, false} {
		if p := historyReady(conv, read); p == nil || p.Status != 500 || p.Type != wire.ProblemHistoryCorrupt {
			t.Fatalf("read %v: %+v, want 500 %s", read, p, wire.ProblemHistoryCorrupt)
		}
	}
}

// A Checkpoint the API server refused (a full ResourceQuota) is 409 without Retry-After: no
// wait frees room. Any other failure is not this answer's.
func TestCheckpointRefused(t *testing.T) {
	quota := apierrors.NewForbidden(schema.GroupResource{Group: "parley.dev", Resource: "checkpoints"}, "c-reset-1",
		errors.New("exceeded quota: parley-checkpoints, requested: count/checkpoints.parley.dev=1, used: count/checkpoints.parley.dev=0, limited: count/checkpoints.parley.dev=0"))
	p := checkpointRefused("c-reset-1", quota)
	if p == nil || p.Status != 409 || p.Type != wire.ProblemConflict {
		t.Fatalf("answer %+v, want 409 conflict", p)
	}
	if !strings.Contains(p.Detail, "Checkpoint c-reset-1") || !strings.Contains(p.Detail, "exceeded quota: parley-checkpoints") {
		t.Errorf("detail %q names neither the Checkpoint nor the quota", p.Detail)
	}
	rec := httptest.NewRecorder()
	writeProblem(rec, p, 0)
	if rec.Header().Get("Retry-After") != "" {
		t.Error("Retry-After sent")
	}
	if checkpointRefused("x", apierrors.NewServiceUnavailable("etcd")) != nil {
		t.Error("an outage taken for a refusal")
	}
}
