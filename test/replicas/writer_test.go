package replicas_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// ack is one acknowledged append: the ids sent and the sequences the API answered.
type ack struct {
	ids  []string
	seqs []uint64
	// uncertain: an earlier attempt of this batch failed with its outcome unknown (the
	// connection broke after the request was sent), so the store may have taken it before
	// the retry did.
	uncertain bool
	// ackedAt is when the answer came; retriedAt, for an uncertain batch, when the first
	// attempt after the broken one was sent.
	ackedAt, retriedAt time.Time
}

// appender writes one conversation through both replicas: every writer sends its batches in
// order, each batch (fixed ids) retried against the other replica until one acknowledges it.
type appender struct {
	namespace, name string
	// clients talk to replica 0 and 1; they do not retry on their own.
	clients [2]*parleyclient.Client

	acked    atomic.Int64 // acknowledged appends (batches)
	attempts atomic.Int64
	refused  atomic.Int64 // connection refused: the replica was down, nothing was sent
	cut      atomic.Int64 // the connection broke or timed out after the request was sent
	problems sync.Map     // HTTP status -> *atomic.Int64, retryable answers (429, 503)

	mu   sync.Mutex
	acks []ack
}

// batch is writer w's k-th append: a user message and the assistant's answer.
func batch(w, k int) []conversation.Message {
	id := fmt.Sprintf("w%d-%05d", w, k)
	text := func(suffix string, role conversation.Role, s string) conversation.Message {
		return conversation.Message{ID: id + suffix, Role: role, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: s}}}
	}
	return []conversation.Message{
		text("-u", conversation.RoleUser, "question "+id),
		text("-a", conversation.RoleAssistant, "answer "+id),
	}
}

// write runs writer w until stop is closed, finishing the batch it has begun. A batch that
// cannot be acknowledged before ctx ends, or an answer no retry can fix, is an error.
func (a *appender) write(ctx context.Context, w int, stop <-chan struct{}) error {
	for k := 0; ; k++ {
		select {
		case <-stop:
			return nil
		default:
		}
		msgs := batch(w, k)
		replica := (w + k) % 2 // both replicas take appends of every writer
		uncertain := false
		var retriedAt time.Time
		for {
			if ctx.Err() != nil {
				return fmt.Errorf("writer %d: batch %d not acknowledged before the deadline", w, k)
			}
			a.attempts.Add(1)
			if uncertain && retriedAt.IsZero() {
				retriedAt = time.Now()
			}
			resp, err := a.clients[replica].Append(ctx, a.namespace, a.name, msgs)
			if err == nil {
				ids := make([]string, len(msgs))
				for i := range msgs {
					ids[i] = msgs[i].ID
				}
				a.mu.Lock()
				a.acks = append(a.acks, ack{ids: ids, seqs: resp.Sequences, uncertain: uncertain, ackedAt: time.Now(), retriedAt: retriedAt})
				a.mu.Unlock()
				a.acked.Add(1)
				break
			}
			var p *wire.Problem
			switch {
			case errors.As(err, &p) && retryable(p.Status):
				n, _ := a.problems.LoadOrStore(p.Status, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			case errors.As(err, &p):
				return fmt.Errorf("writer %d: batch %d: replica %d answered %d: %w", w, k, replica, p.Status, err)
			case errors.Is(err, syscall.ECONNREFUSED):
				a.refused.Add(1)
			default:
				a.cut.Add(1)
				uncertain = true
			}
			replica = 1 - replica // the same batch, same ids, to the other replica
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// problemCounts reports the retryable answers by status.
func (a *appender) problemCounts() map[int]int64 {
	out := map[int]int64{}
	a.problems.Range(func(k, v any) bool {
		out[k.(int)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// storedBeforeRetry counts the uncertain batches stored before their retry was sent: another
// append with a higher sequence was acknowledged before the retry began, and sequences are
// assigned in order, so this batch's were taken by the attempt that was cut (by a kill or the
// answer-dropping proxy). The retry then found them stored: the case where a lost answer would
// tempt a store to write twice. A lower bound: it cannot see every such batch.
func storedBeforeRetry(acks []ack) int {
	byTime := slices.Clone(acks)
	slices.SortFunc(byTime, func(x, y ack) int { return x.ackedAt.Compare(y.ackedAt) })
	n := 0
	for _, b := range acks {
		if !b.uncertain || len(b.seqs) == 0 {
			continue
		}
		last := slices.Max(b.seqs)
		for _, o := range byTime {
			if !o.ackedAt.Before(b.retriedAt) {
				break
			}
			if len(o.seqs) > 0 && slices.Min(o.seqs) > last {
				n++
				break
			}
		}
	}
	return n
}
