package compaction

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/historystore"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/compact"
	"github.com/parley-dev/parley/pkg/history"
)

// SecretKeyAPIKey is the key of the summarizer Secret that holds the API key.
const SecretKeyAPIKey = "apiKey"

// Default endpoints of the providers, when spec.context.summarizer.endpoint is unset.
var defaultEndpoints = map[parleyv1alpha1.SummarizerProvider]string{
	parleyv1alpha1.SummarizerOpenAI:    "https://api.openai.com",
	parleyv1alpha1.SummarizerAnthropic: "https://api.anthropic.com",
}

// strategies maps the API's strategies to the library's.
var strategies = map[parleyv1alpha1.CompactionStrategy]compact.Strategy{
	parleyv1alpha1.CompactionSlidingWindow:    compact.StrategySlidingWindow,
	parleyv1alpha1.CompactionClearToolResults: compact.StrategyClearToolResults,
	parleyv1alpha1.CompactionSummarize:        compact.StrategySummarize,
	parleyv1alpha1.CompactionNone:             compact.StrategyNone,
}

// Strategy is the library's strategy for a context spec: its strategy, the API's default when
// unset (or a value the CRD's enum refuses).
func Strategy(c *parleyv1alpha1.ContextSpec) compact.Strategy {
	if s, ok := strategies[c.GetStrategy()]; ok {
		return s
	}
	return strategies[parleyv1alpha1.DefaultStrategy]
}

// run does one job: read the epoch from the cached view, compact it, write the new epoch, by
// session.Live.Rewrite. Each step can be repeated after a restart: a request for an epoch the
// history has left is done, and the new epoch is written by one compare-and-swap.
func (r *Runner) run(ctx context.Context, req Request) (out Outcome) {
	conv := &parleyv1alpha1.Conversation{}
	defer func() { out.Strategy = string(Strategy(&conv.Spec.Context)) }()
	if err := r.Client.Get(ctx, req.Conversation, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return Outcome{Request: req, Result: ResultSuperseded}
		}
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("reading the Conversation: %w", err))
	}
	if !conv.DeletionTimestamp.IsZero() || conv.Status.SessionID == "" {
		return Outcome{Request: req, Result: ResultSuperseded}
	}
	live, err := r.Sessions.Open(ctx, conv, false)
	if err != nil {
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("opening the history: %s", historystore.Message(err)))
	}
	var summarizer compact.Summarizer
	if Strategy(&conv.Spec.Context) == compact.StrategySummarize {
		if summarizer, err = r.summarizer(ctx, conv); err != nil {
			return failed(req, parleyv1alpha1.ReasonCompactionFailed, err)
		}
	}
	// plan leaves out here what it decided when it writes no epoch (a failure included); it
	// is planned again from scratch when another rewrite moves the epoch under it.
	var record *journal.Compaction
	_, err = live.Rewrite(ctx, func(ctx context.Context, snap *journal.Snapshot) (*session.Epoch, error) {
		var epoch *session.Epoch
		out, record, epoch = r.plan(ctx, req, conv, snap, summarizer)
		return epoch, nil
	})
	var werr *session.WriteError
	switch {
	case errors.Is(err, session.ErrKeptMoving):
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("the history kept moving during %d attempts", session.RewriteAttempts))
	case errors.As(err, &werr):
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("writing epoch %d: %s", werr.Epoch, historystore.Message(werr.Err)))
	case err != nil:
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("reading the history: %s", historystore.Message(err)))
	case record != nil:
		return Outcome{Request: req, Result: ResultCompacted, Record: record}
	}
	return out
}

// plan compacts one snapshot of the view: the new epoch and the record that opens it, or the
// outcome of a job that writes nothing (superseded, nothing to compact, a stale Checkpoint, a
// failure).
func (r *Runner) plan(ctx context.Context, req Request, conv *parleyv1alpha1.Conversation, snap *journal.Snapshot,
	summarizer compact.Summarizer,
) (Outcome, *journal.Compaction, *session.Epoch) {
	if snap.Epoch != req.Epoch {
		return Outcome{Request: req, Result: ResultSuperseded}, nil, nil
	}
	spec := conv.Spec.Context
	maxTokens := 0
	if spec.MaxTokens != nil {
		maxTokens = int(*spec.MaxTokens)
	}
	pct := int(spec.GetCompactAtPercent())
	if !req.Force && !compact.Due(snap.Tokens, maxTokens, pct) {
		return Outcome{Request: req, Result: ResultNothingToCompact}, nil, nil
	}
	keep := int(spec.GetKeepRecentMessages())
	// Messages the Checkpoint does not hold are never folded: they count as recent.
	uncovered := 0
	for i := len(snap.State.Messages) - 1; i >= 0 && snap.State.Messages[i].Seq > req.CheckpointSequence; i-- {
		uncovered++
	}
	if uncovered > keep {
		return Outcome{Request: req, Result: ResultStaleCheckpoint}, nil, nil
	}
	strategy := Strategy(&spec)
	policy := compact.Policy{
		Budget:             compact.TargetBudget(maxTokens, pct),
		KeepRecentMessages: keep,
		Counter:            snap.Counter,
		Summarizer:         summarizer,
		Now:                r.Clock.Now(),
	}
	result, rec, err := compact.Compact(ctx, strategy, &snap.State, policy)
	if err != nil {
		reason := parleyv1alpha1.ReasonCompactionFailed
		if strategy == compact.StrategySummarize && !errors.Is(err, compact.ErrInvalidPolicy) {
			reason = parleyv1alpha1.ReasonSummarizerUnavailable
		}
		return failed(req, reason, err), nil, nil
	}
	if rec.MessagesFolded == 0 {
		return Outcome{Request: req, Result: ResultNothingToCompact}, nil, nil
	}
	record := &journal.Compaction{
		Time: r.Clock.Now().UTC(), Strategy: string(rec.Strategy), TokensBefore: rec.TokensBefore, TokensAfter: rec.TokensAfter,
		MessagesFolded: rec.MessagesFolded, Checkpoint: req.Checkpoint, FromEpoch: snap.Epoch, Through: snap.Sequence,
		SummarizerUsage: rec.SummaryUsage,
	}
	records, err := epochRecords(record, result, snap.Epoch+1)
	if err != nil {
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, err), nil, nil
	}
	// The counts already made seed the view of the new epoch: the reconcile that records the
	// compaction reads only the entries carried after Through.
	counts := make(map[string]int, len(result.Messages))
	for i := range result.Messages {
		counts[result.Messages[i].ID] = snap.Counter.CountMessage(&result.Messages[i])
	}
	return Outcome{}, record, &session.Epoch{Records: records, Counts: counts}
}

// epochRecords is what opens the new epoch: the compaction record, the compacted state, and
// the initialisation marker (the history is initialised; nothing is imported again).
func epochRecords(c *journal.Compaction, s *conversation.State, epoch uint64) ([]history.Record, error) {
	first, err := journal.CompactionRecord(c)
	if err != nil {
		return nil, err
	}
	// The prefix keeps this epoch's ids of raw records and adapter reports apart from those
	// of the entries carried after Through.
	state, err := journal.StateRecords(s, "e"+strconv.FormatUint(epoch, 10)+":")
	if err != nil {
		return nil, err
	}
	marker, err := journal.InitializedRecord()
	if err != nil {
		return nil, err
	}
	return append(append([]history.Record{first}, state...), marker), nil
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// summarizer builds the summarizer of spec.context.summarizer, with the API key from its
// Secret (read on every job, so a rotated key is used at the next attempt; never logged).
func (r *Runner) summarizer(ctx context.Context, conv *parleyv1alpha1.Conversation) (compact.Summarizer, error) {
	spec := conv.Spec.Context.Summarizer
	if spec == nil {
		return nil, errors.New("strategy Summarize needs spec.context.summarizer")
	}
	var apiKey string
	if ref := spec.CredentialsSecretRef; ref != nil && ref.Name != "" {
		sec := &corev1.Secret{}
		if err := r.Secrets.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: ref.Name}, sec); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("summarizer Secret %s/%s does not exist", conv.Namespace, ref.Name)
			}
			return nil, fmt.Errorf("reading summarizer Secret %s/%s: %w", conv.Namespace, ref.Name, err)
		}
		key, ok := sec.Data[SecretKeyAPIKey]
		if !ok {
			return nil, fmt.Errorf("summarizer Secret %s/%s has no key %s", conv.Namespace, ref.Name, SecretKeyAPIKey)
		}
		apiKey = string(key)
	}
	endpoint := spec.Endpoint
	if endpoint == "" {
		endpoint = defaultEndpoints[spec.Provider]
	}
	timeout := r.SummarizerTimeout
	if timeout <= 0 {
		timeout = DefaultSummarizerTimeout
	}
	// Two tries per attempt: the Runner's own backoff (minutes) handles longer outages.
	s, err := compact.NewSummarizer(string(spec.Provider), compact.HTTPConfig{
		Endpoint: endpoint, Model: spec.Model, APIKey: apiKey, AttemptTimeout: timeout, MaxAttempts: 2,
	})
	if err != nil {
		return nil, err
	}
	return metered(string(spec.Provider), s), nil
}
