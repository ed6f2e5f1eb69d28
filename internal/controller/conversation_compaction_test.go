package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/names"
)

var compactionNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// compactionScope is a live Conversation whose history holds tokens, in a window of 1000
// tokens compacted at 80 %.
func compactionScope(tokens int, opts ...func(*parleyv1alpha1.Conversation)) *conversationScope {
	maxTokens := int64(1000)
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: 1},
		Spec: parleyv1alpha1.ConversationSpec{
			History: parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
			Context: parleyv1alpha1.ContextSpec{MaxTokens: &maxTokens, CompactAtPercent: 80, Strategy: parleyv1alpha1.CompactionSlidingWindow},
		},
		Status: parleyv1alpha1.ConversationStatus{SessionID: "s"},
	}
	for _, o := range opts {
		o(conv)
	}
	s := newConversationScope(conv, compactionNow)
	s.summary = &historySummary{tokens: tokens, initialized: true, epoch: 1}
	return s
}

func requestedAt(t time.Time) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		c.Annotations = map[string]string{parleyv1alpha1.AnnotationCompactRequestedAt: t.Format(time.RFC3339)}
	}
}

func compactedAt(t time.Time) func(*parleyv1alpha1.Conversation) {
	return func(c *parleyv1alpha1.Conversation) {
		mt := metav1.NewTime(t)
		c.Status.LastCompaction = &parleyv1alpha1.CompactionRecord{Time: &mt, Strategy: parleyv1alpha1.CompactionSlidingWindow}
	}
}

func TestDecideCompaction(t *testing.T) {
	strategy := func(st parleyv1alpha1.CompactionStrategy) func(*parleyv1alpha1.Conversation) {
		return func(c *parleyv1alpha1.Conversation) { c.Spec.Context.Strategy = st }
	}
	tests := map[string]struct {
		scope *conversationScope
		want  compactionTrigger
	}{
		"below the threshold":                  {compactionScope(799), compactionNotDue},
		"at the threshold (compact.Due is >=)": {compactionScope(800), compactionThreshold},
		"past the threshold":                   {compactionScope(950), compactionThreshold},
		"strategy None never compacts":         {compactionScope(2000, strategy(parleyv1alpha1.CompactionNone)), compactionOff},
		"no maxTokens, no window to compact against": {compactionScope(2000, func(c *parleyv1alpha1.Conversation) {
			c.Spec.Context.MaxTokens = nil
		}), compactionOff},
		"compactAtPercent unset means the default 80": {compactionScope(800, func(c *parleyv1alpha1.Conversation) {
			c.Spec.Context.CompactAtPercent = 0
		}), compactionThreshold},
		"requested, never compacted":          {compactionScope(10, requestedAt(compactionNow)), compactionRequested},
		"requested after the last compaction": {compactionScope(10, requestedAt(compactionNow), compactedAt(compactionNow.Add(-time.Minute))), compactionRequested},
		"request already served": {
			compactionScope(10, requestedAt(compactionNow.Add(-time.Minute)), compactedAt(compactionNow)), compactionNotDue,
		},
		"request within the second of the last compaction is served by it": {
			compactionScope(10, requestedAt(compactionNow.Add(500*time.Millisecond)), compactedAt(compactionNow)), compactionNotDue,
		},
		"an unparsable request is no request": {compactionScope(10, func(c *parleyv1alpha1.Conversation) {
			c.Annotations = map[string]string{parleyv1alpha1.AnnotationCompactRequestedAt: "yesterday"}
		}), compactionNotDue},
		"a request with strategy None does nothing": {
			compactionScope(10, requestedAt(compactionNow), strategy(parleyv1alpha1.CompactionNone)), compactionOff,
		},
		"an expired session is left alone": {func() *conversationScope {
			s := compactionScope(2000)
			s.expired = true
			return s
		}(), compactionIdle},
		"an unreadable history is left alone": {func() *conversationScope {
			s := compactionScope(2000)
			s.summary = nil
			return s
		}(), compactionIdle},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := decideCompaction(tc.scope, 0); got != tc.want {
				t.Errorf("decideCompaction = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCompactionCheckpointName(t *testing.T) {
	if got := compactionCheckpointName("chat", 3); got != "chat-compact-e3" {
		t.Errorf("compactionCheckpointName = %q", got)
	}
	long := compactionCheckpointName(stringOf('a', 260), 12)
	if len(long) > names.MaxLength {
		t.Errorf("name of %d characters", len(long))
	}
	if compactionCheckpointName(stringOf('a', 260), 12) != long {
		t.Error("not deterministic")
	}
}

func stringOf(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func TestClearCompactionDegraded(t *testing.T) {
	for reason, wantKept := range map[string]bool{
		parleyv1alpha1.ReasonSummarizerUnavailable: false,
		parleyv1alpha1.ReasonCompactionFailed:      false,
		parleyv1alpha1.ReasonSessionIDMismatch:     true,
	} {
		s := compactionScope(0)
		s.setCondition(parleyv1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, "")
		clearCompactionDegraded(s)
		if kept := s.condition(parleyv1alpha1.ConditionDegraded) != nil; kept != wantKept {
			t.Errorf("%s: Degraded kept = %v, want %v", reason, kept, wantKept)
		}
	}
}

// A forced compaction asked by the annotation waits minInterval after the last compaction, as
// POST …/compact does: editors who set the annotation directly cannot force one per second.
func TestDecideCompactionMinInterval(t *testing.T) {
	const interval = 5 * time.Minute
	tests := map[string]struct {
		scope       *conversationScope
		want        compactionTrigger
		wantRequeue time.Duration
	}{
		"a request sooner than the interval waits for it": {
			compactionScope(10, requestedAt(compactionNow), compactedAt(compactionNow.Add(-time.Minute))), compactionNotDue, 4 * time.Minute,
		},
		"a request past the interval is served": {
			compactionScope(10, requestedAt(compactionNow), compactedAt(compactionNow.Add(-6*time.Minute))), compactionRequested, 0,
		},
		"a first request needs no interval": {
			compactionScope(10, requestedAt(compactionNow)), compactionRequested, 0,
		},
		"a waiting request does not hold back the threshold": {
			compactionScope(900, requestedAt(compactionNow), compactedAt(compactionNow.Add(-time.Minute))), compactionThreshold, 4 * time.Minute,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := decideCompaction(tc.scope, interval); got != tc.want {
				t.Errorf("decideCompaction = %d, want %d", got, tc.want)
			}
			if tc.scope.requeue != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", tc.scope.requeue, tc.wantRequeue)
			}
		})
	}
}
