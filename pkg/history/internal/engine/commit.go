package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/parley-dev/parley/pkg/history"
)

// request is one Append call waiting for a group commit.
type request struct {
	records []history.Record
	bytes   int64
	seqs    []uint64
	err     error
	done    chan struct{}
}

// Append implements history.History: it queues the records and waits for
// the group commit that makes them durable.
func (h *log) Append(ctx context.Context, records []history.Record) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(records) == 0 {
		return nil, nil
	}
	// The commit may outlive this call (ctx) and its entries stay in the
	// cache: keep a copy, so the caller may reuse its buffers.
	r := &request{records: make([]history.Record, len(records)), done: make(chan struct{})}
	for i, rec := range records {
		if err := checkID(rec.ID); err != nil {
			return nil, err
		}
		if len(rec.Data) > h.opts.maxRecordBytes() {
			return nil, fmt.Errorf("%w: record %q has %d bytes, the limit is %d%s",
				history.ErrTooLarge, rec.ID, len(rec.Data), h.opts.maxRecordBytes(), h.opts.TooLargeHint)
		}
		r.bytes += int64(len(rec.Data))
		r.records[i] = history.Record{ID: rec.ID, Data: bytes.Clone(rec.Data)}
	}
	h.qmu.Lock()
	if h.gone {
		h.qmu.Unlock()
		return nil, history.ErrClosed
	}
	h.queue = append(h.queue, r)
	start := !h.flushing
	h.flushing = true
	h.qmu.Unlock()
	failpoint("queued")
	if start {
		go h.flushLoop()
	}
	select {
	case <-r.done:
		return r.seqs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// flushLoop commits queued requests in batches until the queue is empty.
// While one commit is in flight, new appends queue up and go in the next.
func (h *log) flushLoop() {
	for {
		if h.opts.Linger > 0 {
			time.Sleep(h.opts.Linger)
		}
		batch := h.takeBatch()
		if len(batch) == 0 {
			return
		}
		h.commitBatch(batch)
		for _, r := range batch {
			close(r.done)
		}
	}
}

func (h *log) takeBatch() []*request {
	h.qmu.Lock()
	defer h.qmu.Unlock()
	if len(h.queue) == 0 || h.gone {
		for _, r := range h.queue {
			r.err = history.ErrClosed
			close(r.done)
		}
		h.queue, h.flushing = nil, false
		return nil
	}
	n, records, bytes := 0, 0, int64(0)
	for _, r := range h.queue {
		if n > 0 && (records+len(r.records) > h.opts.MaxBatchRecords || bytes+r.bytes > h.opts.MaxBatchBytes) {
			break
		}
		n, records, bytes = n+1, records+len(r.records), bytes+r.bytes
	}
	batch := h.queue[:n:n]
	h.queue = h.queue[n:]
	return batch
}

// plan is one commit attempt: the entries new to the epoch, and for each
// request the sequence numbers it will get.
type plan struct {
	fresh []history.Entry
	bytes int64
	// stale: a request exceeds the history cap by a view of the index
	// that may be out of date (another process may have freed space).
	stale bool
}

func (h *log) commitBatch(batch []*request) {
	ctx, cancel := context.WithTimeout(h.store.ctx, h.opts.OpTimeout)
	defer cancel()
	h.commitMu.Lock()
	defer h.commitMu.Unlock()

	var err error
	for attempt := range h.opts.MaxAttempts {
		if attempt > 0 {
			backoff(ctx, attempt)
		}
		fresh := !h.loaded // this attempt reads the index
		if err = h.sync(ctx); err != nil {
			if retryable(err) {
				continue
			}
			break
		}
		p := h.plan(batch, fresh)
		if p.stale {
			h.loaded = false // refuse for the cap only on a fresh index
			continue
		}
		if len(p.fresh) == 0 {
			return
		}
		var sealedTail []string
		sealedTail, err = h.tryCommit(ctx, p)
		if err == nil {
			// Sealed: the index no longer points at these. Deleting them must
			// not delay the acknowledgement; leftovers are Retain's job.
			if len(sealedTail) > 0 {
				go h.deleteQuietly(sealedTail)
			}
			return
		}
		h.loaded = false
		if !retryable(err) {
			break
		}
	}
	if errors.Is(err, errIndexGone) {
		// Deleted by another process: the next Open starts afresh (and
		// with Create, creates the history again) instead of sharing this
		// handle's dead view.
		h.store.drop(h)
	}
	switch {
	case ctx.Err() != nil && h.store.ctx.Err() != nil:
		err = history.ErrClosed
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		// The backend outlived OpTimeout, not the caller's context: transient.
		err = fmt.Errorf("%w: commit took longer than %s: %w", history.ErrUnavailable, h.opts.OpTimeout, err)
	}
	for _, r := range batch {
		if r.err == nil {
			r.seqs, r.err = nil, err
		}
	}
}

// retryable: lost a race (or an object vanished under a concurrent seal),
// or a transient failure.
func retryable(err error) bool {
	return errors.Is(err, history.ErrConflict) || errors.Is(err, history.ErrUnavailable) ||
		errors.Is(err, history.ErrNotFound) && !errors.Is(err, errIndexGone)
}

var errIndexGone = errors.New("history index deleted")

func backoff(ctx context.Context, attempt int) {
	d := time.Duration(min(attempt, 20)) * time.Millisecond
	d = d/2 + rand.N(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// plan assigns sequence numbers: known ids keep theirs, new ids continue the
// epoch. A request that would exceed the history cap fails alone, once
// the view of the index is fresh.
func (h *log) plan(batch []*request, freshView bool) plan {
	var p plan
	next := h.m.LastSeq
	inBatch := map[string]uint64{}
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		seqs := make([]uint64, len(r.records))
		var fresh []history.Entry
		var bytes int64
		local := map[string]uint64{}
		for i, rec := range r.records {
			if s, ok := h.ids[rec.ID]; ok {
				seqs[i] = s
			} else if s, ok := inBatch[rec.ID]; ok {
				seqs[i] = s
			} else if s, ok := local[rec.ID]; ok {
				seqs[i] = s
			} else {
				s := next + uint64(len(fresh)) + 1
				local[rec.ID], seqs[i] = s, s
				fresh = append(fresh, history.Entry{Seq: s, ID: rec.ID, Data: rec.Data})
				bytes += int64(len(rec.Data))
			}
		}
		if limit := h.opts.MaxHistoryBytes; limit > 0 && len(fresh) > 0 && h.m.totalBytes()+p.bytes+bytes > limit {
			if !freshView {
				return plan{stale: true}
			}
			r.err = fmt.Errorf("%w: history %q would hold %d bytes, its maxBytes is %d%s",
				history.ErrTooLarge, h.name, h.m.totalBytes()+p.bytes+bytes, limit, h.opts.TooLargeHint)
			continue
		}
		for id, s := range local {
			inBatch[id] = s
		}
		next += uint64(len(fresh))
		p.fresh = append(p.fresh, fresh...)
		p.bytes += bytes
		r.seqs = seqs
	}
	return p
}

// tryCommit writes the fresh entries as tail objects, seals the committed
// tail when it is due, and moves the index by compare-and-swap. It returns
// the tail objects that a successful seal made redundant.
func (h *log) tryCommit(ctx context.Context, p plan) ([]string, error) {
	next := h.m.successor()
	next.Tail = append([]tailRef(nil), h.m.Tail...)
	var sealedTail []string
	if h.sealDue(len(p.fresh)) {
		if err := h.sealTail(ctx, h.m); err != nil {
			return nil, err
		}
		for _, t := range h.m.Tail {
			sealedTail = append(sealedTail, t.Key)
		}
		next.SealedThrough, next.Tail = h.m.LastSeq, nil
		failpoint("sealed")
	}
	var written []string
	for _, chunk := range h.chunk(p.fresh) {
		first, last := chunk[0].Seq, chunk[len(chunk)-1].Seq
		key := tailKey(h.m.Tag, first, last)
		data := encodeEntries(chunk)
		if _, err := h.objects.Create(ctx, key, data); err != nil {
			h.orphans = append(h.orphans, written...)
			return nil, err
		}
		written = append(written, key)
		h.cache.put(key, chunk, int64(len(data)))
		var bytes int64
		for _, e := range chunk {
			bytes += int64(len(e.Data))
		}
		next.Tail = append(next.Tail, tailRef{Key: key, Bytes: bytes})
	}
	next.LastSeq = p.fresh[len(p.fresh)-1].Seq
	next.Bytes += p.bytes
	failpoint("tail-written")

	ver, err := h.objects.Replace(ctx, indexKey, next.encode(), h.ver)
	if err != nil {
		// Whether or not the index moved (a timeout is ambiguous), the next
		// sync tells: committed ids are found and keep their sequences.
		h.orphans = append(h.orphans, written...)
		if errors.Is(err, history.ErrNotFound) {
			return nil, fmt.Errorf("history %q: %w: %w", h.name, errIndexGone, err)
		}
		return nil, err
	}
	h.m, h.ver = next, ver
	for _, e := range p.fresh {
		h.ids[e.ID] = e.Seq
	}
	h.idsThrough = next.LastSeq
	return sealedTail, nil
}

func (h *log) sealDue(freshEntries int) bool {
	if len(h.m.Tail) == 0 {
		return false
	}
	return h.m.tailBytes() >= h.opts.SealBytes || len(h.m.Tail)+min(freshEntries, 1) > h.opts.MaxTailObjects
}

// chunk splits entries into objects that each fit MaxObjectBytes.
func (h *log) chunk(entries []history.Entry) [][]history.Entry {
	var chunks [][]history.Entry
	start, size := 0, footerSize
	for i, e := range entries {
		n := lineSize(e)
		if i > start && size+n > h.opts.MaxObjectBytes {
			chunks = append(chunks, entries[start:i])
			start, size = i, footerSize
		}
		size += n
	}
	return append(chunks, entries[start:])
}

func lineSize(e history.Entry) int { return len(encodeLine(nil, e)) }

// sealTail writes the committed tail of m as sealed segments. Every writer
// packs the same committed entries the same way, and a segment of the same
// range always holds the same records, so an existing key is fine.
func (h *log) sealTail(ctx context.Context, m manifest) error {
	cur, _ := m.epochByNumber(0)
	entries, err := h.readRange(ctx, m, cur, m.SealedThrough+1, m.LastSeq)
	if err != nil {
		return err
	}
	return h.writeSealed(ctx, m.Tag, entries)
}

func (h *log) writeSealed(ctx context.Context, tag string, entries []history.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	var keys []dataKey
	for _, chunk := range h.chunk(entries) {
		dk := dataKey{tag: tag, first: chunk[0].Seq, last: chunk[len(chunk)-1].Seq}
		key := sealedKey(tag, dk.first, dk.last)
		data := encodeEntries(chunk)
		if h.opts.CompressSegments {
			data = compress(data)
		}
		if err := h.createIfAbsent(ctx, key, data); err != nil {
			return err
		}
		h.cache.put(key, chunk, int64(len(data)))
		keys = append(keys, dk)
	}
	if known, ok := h.sealed.get(tag); ok {
		h.sealed.set(tag, append(append([]dataKey(nil), known...), keys...))
	}
	return nil
}

// createIfAbsent writes an immutable object whose key determines its
// content (a sealed segment, a checkpoint): one that exists already is fine.
// A conflict alone does not prove it exists (S3 answers 409 to a create
// racing another upload of the key, which may still fail), so check.
func (h *log) createIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := h.objects.Create(ctx, key, data)
	if err == nil || !errors.Is(err, history.ErrConflict) {
		return err
	}
	if _, _, gerr := h.objects.Get(ctx, key); gerr != nil {
		if errors.Is(gerr, history.ErrNotFound) {
			return err // not there (yet): the caller retries
		}
		return gerr
	}
	return nil
}

func (h *log) deleteQuietly(keys []string) {
	ctx, cancel := context.WithTimeout(h.store.ctx, h.opts.OpTimeout)
	defer cancel()
	for _, key := range keys {
		if h.objects.Delete(ctx, key) != nil {
			return
		}
	}
}

// maxIDBytes bounds a record id; ids are kept in memory for idempotency.
const maxIDBytes = 512

// checkID refuses ids that would not survive the JSON encoding unchanged.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("history: record without an id")
	case len(id) > maxIDBytes:
		return fmt.Errorf("history: record id of %d bytes, the limit is %d", len(id), maxIDBytes)
	case !utf8.ValidString(id):
		return errors.New("history: record id is not valid UTF-8")
	}
	return nil
}
