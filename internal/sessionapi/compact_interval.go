package sessionapi

import (
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// DefaultMinCompactionInterval is the least time between two forced compactions of one
// conversation asked through the Session API. Each costs a Compaction Checkpoint and, with
// the Summarize strategy, a paid model call; the threshold compaction needs no request.
const DefaultMinCompactionInterval = 5 * time.Minute

// nextForcedCompaction is the earliest time conv may ask for a forced compaction again:
// interval after the later of its last request (parley.dev/compact-requested-at) and its last
// compaction (status.lastCompaction). Zero when it has had neither.
func nextForcedCompaction(conv *parleyv1alpha1.Conversation, interval time.Duration) time.Time {
	var last time.Time
	if v, ok := conv.Annotations[parleyv1alpha1.AnnotationCompactRequestedAt]; ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			last = t
		}
	}
	if lc := conv.Status.LastCompaction; lc != nil && lc.Time != nil && lc.Time.After(last) {
		last = lc.Time.Time
	}
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(interval)
}

func (s *Server) minCompactionInterval() time.Duration {
	if s.MinCompactionInterval > 0 {
		return s.MinCompactionInterval
	}
	return DefaultMinCompactionInterval
}
