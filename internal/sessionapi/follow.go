package sessionapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/wire"
)

// Follow settings: how often a stream looks for new messages, how long one write may block
// (a client slower than that is cut off and resumes with Last-Event-ID, never buffered without
// bound), and how long one stream lasts before the client is asked to reconnect.
const (
	followPoll        = 250 * time.Millisecond
	followWriteWindow = 10 * time.Second
	followMaxDuration = 10 * time.Minute
)

// follow streams messages as Server-Sent Events: one "message" event per new message, its id
// the message's sequence, starting after ?after= or the Last-Event-ID header. Messages are
// sent when they appear; later changes to a sent message (streamed deltas) are not resent.
// A compaction ends the stream with an "epoch" event; the client re-reads from the start.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, req *request) *wire.Problem {
	after, err := uintParam(r.URL.Query().Get("after"), 0)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after, err = strconv.ParseUint(id, 10, 64)
	}
	if err != nil {
		return problem(400, wire.ProblemMalformed, "Bad Request", "after and Last-Event-ID must be sequence numbers")
	}
	if p := historyReady(req.conv, true); p != nil {
		return p
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// Once the stream started an error can only end it; the client resumes from its last id.
	if err := s.stream(w, r, req, rc, after); err != nil {
		logf.FromContext(r.Context()).V(1).Info("follow stream ended", "reason", err.Error())
	}
	return nil
}

var errStreamDone = errors.New("stream ended")

// stream writes new messages until the client goes, the epoch moves or the stream is too old.
// A batch holds at most a page of messages and is written only within the answer budgets, as
// a read's answer is; a batch they refuse waits for the next poll.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *request, rc *http.ResponseController, after uint64) error {
	deadline := time.Now().Add(followMaxDuration)
	epoch := uint64(0)
	id, page := req.caller.identity(), s.limits().MaxPage
	for first := true; ; first = false {
		var batch []json.RawMessage
		var seqs []uint64
		moved, more := false, false
		p := s.withView(r, req, func(v *journal.View) *wire.Problem {
			if first {
				epoch = v.Epoch
			}
			if v.Epoch != epoch {
				moved = true
				return nil
			}
			msgs := v.State.Messages
			i := sort.Search(len(msgs), func(i int) bool { return uint64(msgs[i].Seq) > after })
			end := min(len(msgs), i+page)
			more = end < len(msgs)
			for ; i < end; i++ {
				data, err := json.Marshal(&msgs[i])
				if err != nil {
					continue
				}
				batch, seqs = append(batch, data), append(seqs, uint64(msgs[i].Seq))
			}
			return nil
		})
		if p != nil {
			return p
		}
		_ = rc.SetWriteDeadline(time.Now().Add(followWriteWindow))
		if moved {
			_, _ = fmt.Fprintf(w, "event: epoch\ndata: {}\n\n")
			_ = rc.Flush()
			return errStreamDone
		}
		written, err := s.writeBatch(w, rc, id, batch, seqs)
		if err != nil {
			return err
		}
		if written {
			after = seqs[len(seqs)-1]
		}
		if time.Now().After(deadline) {
			return errStreamDone
		}
		if written && more {
			continue
		}
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-time.After(followPoll):
		}
	}
}

// writeBatch writes a batch of messages as events, if the answer budgets hold it, and
// flushes the stream (an empty batch too: a client gone is noticed).
func (s *Server) writeBatch(w http.ResponseWriter, rc *http.ResponseController, id string, batch []json.RawMessage, seqs []uint64) (written bool, err error) {
	if len(batch) > 0 {
		n := batchBytes(batch)
		if s.answers.acquireAlone(id, n) != admitted {
			return false, rc.Flush()
		}
		defer s.answers.release(id, n)
		for i := range batch {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: message\ndata: %s\n\n", seqs[i], batch[i]); err != nil {
				return false, err
			}
		}
		written = true
	}
	return written, rc.Flush()
}

// batchBytes is what a batch holds.
func batchBytes(batch []json.RawMessage) int64 {
	var n int64
	for _, b := range batch {
		n += int64(len(b))
	}
	return n
}
