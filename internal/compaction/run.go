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
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/compact"
	"github.com/parley-dev/parley/pkg/history"
)

// conflictAttempts bounds the reads and rewrites of one job when the history moves under it.
const conflictAttempts = 3

// SecretKeyAPIKey is the key of the summarizer Secret that holds the API key.
const SecretKeyAPIKey = "apiKey"

// defaultKeepRecentMessages applies when spec.context.keepRecentMessages is unset (the CRD
// defaults it too).
const defaultKeepRecentMessages = 10

// Default endpoints of the providers, when spec.context.summarizer.endpoint is unset.
var defaultEndpoints = map[parleyv1alpha1.SummarizerProvider]string{
	parleyv1alpha1.SummarizerOpenAI:    "https://api.openai.com",
	parleyv1alpha1.SummarizerAnthropic: "https://api.anthropic.com",
}

// Strategy maps the API's strategy to the library's (the CRD defaults an unset one to
// SlidingWindow).
func Strategy(s parleyv1alpha1.CompactionStrategy) compact.Strategy {
	switch s {
	case parleyv1alpha1.CompactionClearToolResults:
		return compact.StrategyClearToolResults
	case parleyv1alpha1.CompactionSummarize:
		return compact.StrategySummarize
	case parleyv1alpha1.CompactionNone:
		return compact.StrategyNone
	default:
		return compact.StrategySlidingWindow
	}
}

// run does one job: read the epoch from the cached view, compact it, write the new epoch.
// Each step can be repeated after a restart: a request for an epoch the history has left is
// done, and the new epoch is written by one compare-and-swap.
func (r *Runner) run(ctx context.Context, req Request) (out Outcome) {
	conv := &parleyv1alpha1.Conversation{}
	defer func() { out.Strategy = string(Strategy(conv.Spec.Context.Strategy)) }()
	if err := r.Client.Get(ctx, req.Conversation, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return Outcome{Request: req, Result: ResultSuperseded}
		}
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("reading the Conversation: %w", err))
	}
	if !conv.DeletionTimestamp.IsZero() || conv.Status.SessionID == "" {
		return Outcome{Request: req, Result: ResultSuperseded}
	}
	h, err := r.Stores.Open(ctx, conv, false)
	if err != nil {
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("opening the history: %s", historystore.Message(err)))
	}
	key, err := historystore.Key(conv)
	if err != nil {
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, err)
	}
	var summarizer compact.Summarizer
	if Strategy(conv.Spec.Context.Strategy) == compact.StrategySummarize {
		if summarizer, err = r.summarizer(ctx, conv); err != nil {
			return failed(req, parleyv1alpha1.ReasonCompactionFailed, err)
		}
	}
	for range conflictAttempts {
		out, err := r.attempt(ctx, req, conv, key, h, summarizer)
		if errors.Is(err, history.ErrConflict) {
			continue // the epoch moved or grew under the write: read it again
		}
		return out
	}
	return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("the history kept moving during %d attempts", conflictAttempts))
}

// attempt reads, compacts and writes once; an ErrConflict asks run to read again.
func (r *Runner) attempt(ctx context.Context, req Request, conv *parleyv1alpha1.Conversation, key string, h history.History, summarizer compact.Summarizer) (Outcome, error) {
	var snap *journal.Snapshot
	err := r.Views.With(ctx, key, conv.Status.SessionID, req.Tokenizer, h, func(v *journal.View) error {
		if v.Epoch == req.Epoch {
			snap = v.Snapshot()
		}
		return nil
	})
	if err != nil {
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("reading the history: %s", historystore.Message(err))), nil
	}
	if snap == nil {
		return Outcome{Request: req, Result: ResultSuperseded}, nil
	}
	spec := conv.Spec.Context
	maxTokens := 0
	if spec.MaxTokens != nil {
		maxTokens = int(*spec.MaxTokens)
	}
	pct := int(spec.CompactAtPercent)
	if !req.Force && !compact.Due(snap.Tokens, maxTokens, pct) {
		return Outcome{Request: req, Result: ResultNothingToCompact}, nil
	}
	keep := int(spec.KeepRecentMessages)
	if keep <= 0 {
		keep = defaultKeepRecentMessages
	}
	// Messages the Checkpoint does not hold are never folded: they count as recent.
	uncovered := 0
	for i := len(snap.State.Messages) - 1; i >= 0 && snap.State.Messages[i].Seq > req.CheckpointSequence; i-- {
		uncovered++
	}
	if uncovered > keep {
		return Outcome{Request: req, Result: ResultStaleCheckpoint}, nil
	}
	strategy := Strategy(spec.Strategy)
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
		return failed(req, reason, err), nil
	}
	if rec.MessagesFolded == 0 {
		return Outcome{Request: req, Result: ResultNothingToCompact}, nil
	}
	record := &journal.Compaction{
		Time: r.Clock.Now().UTC(), Strategy: string(rec.Strategy), TokensBefore: rec.TokensBefore, TokensAfter: rec.TokensAfter,
		MessagesFolded: rec.MessagesFolded, Checkpoint: req.Checkpoint, FromEpoch: snap.Epoch, Through: snap.Sequence,
		SummarizerUsage: rec.SummaryUsage,
	}
	records, err := epochRecords(record, result, snap.Epoch+1)
	if err != nil {
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, err), nil
	}
	head, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: snap.Epoch, Through: snap.Sequence, Records: records})
	if err != nil {
		if errors.Is(err, history.ErrConflict) {
			return Outcome{}, err
		}
		return failed(req, parleyv1alpha1.ReasonCompactionFailed, fmt.Errorf("writing epoch %d: %s", snap.Epoch+1, historystore.Message(err))), nil
	}
	// The view of the new epoch from the counts already made: the reconcile that records the
	// compaction reads only the entries carried after Through. Best effort: a view that cannot
	// be seeded is rebuilt from the store by the next read.
	counts := make(map[string]int, len(result.Messages))
	for i := range result.Messages {
		counts[result.Messages[i].ID] = snap.Counter.CountMessage(&result.Messages[i])
	}
	_ = r.Views.Seed(key, conv.Status.SessionID, req.Tokenizer, head.Epoch, records, counts)
	return Outcome{Request: req, Result: ResultCompacted, Record: record}, nil
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
