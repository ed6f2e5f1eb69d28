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
	same    func(stored history.Entry, rec history.Record) error
	bytes   int64
	seqs    []uint64
	epoch   uint64
	head    history.Head
	err     error
	done    chan struct{}
}

// Append implements history.History.
func (h *log) Append(ctx context.Context, records []history.Record) ([]uint64, error) {
	res, err := h.AppendWith(ctx, records, history.AppendOptions{})
	return res.Sequences, err
}

// AppendWith implements history.History: it queues the records and waits for
// the group commit that makes them durable.
func (h *log) AppendWith(ctx context.Context, records []history.Record, opts history.AppendOptions) (history.Appended, error) {
	if err := ctx.Err(); err != nil {
		return history.Appended{}, err
	}
	if len(records) == 0 {
		return history.Appended{}, nil
	}
	// The commit may outlive this call (ctx) and its entries stay in the
	// cache: keep a copy, so the caller may reuse its buffers.
	r := &request{records: make([]history.Record, len(records)), same: opts.Same, done: make(chan struct{})}
	for i, rec := range records {
		if err := checkID(rec.ID); err != nil {
			return history.Appended{}, err
		}
		if len(rec.Data) > h.opts.maxRecordBytes() {
			return history.Appended{}, fmt.Errorf("%w: record %q has %d bytes, the limit is %d%s",
				history.ErrTooLarge, rec.ID, len(rec.Data), h.opts.maxRecordBytes(), h.opts.TooLargeHint)
		}
		r.bytes += int64(len(rec.Data))
		r.records[i] = history.Record{ID: rec.ID, Data: bytes.Clone(rec.Data)}
	}
	h.qmu.Lock()
	if h.gone {
		h.qmu.Unlock()
		return history.Appended{}, history.ErrClosed
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
		if r.err != nil {
			return history.Appended{}, r.err
		}
		return history.Appended{Epoch: r.epoch, Sequences: r.seqs, Head: r.head}, nil
	case <-ctx.Done():
		return history.Appended{}, ctx.Err()
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
		var p plan
		if p, err = h.plan(ctx, batch, fresh); err != nil {
			h.loaded = false
			if retryable(err) {
				continue
			}
			break
		}
		if p.stale {
			h.loaded = false // refuse for the cap or a check only on a fresh index
			continue
		}
		if len(p.fresh) == 0 {
			h.acknowledge(batch)
			return
		}
		var sealedTail []string
		sealedTail, err = h.tryCommit(ctx, p)
		if err == nil {
			h.acknowledge(batch)
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

// acknowledge gives every request the commit took the epoch it landed in and the head the
// commit left.
func (h *log) acknowledge(batch []*request) {
	head := h.m.head()
	for _, r := range batch {
		if r.err == nil {
			r.epoch, r.head = h.m.Epoch, head
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
// epoch. A request that would exceed the history cap, or whose check refuses
// a record stored under its id, fails alone, once the view of the index is
// fresh; none of its records is stored.
func (h *log) plan(ctx context.Context, batch []*request, freshView bool) (plan, error) {
	var p plan
	next := h.m.LastSeq
	inBatch := map[string]uint64{}
	planned := map[uint64][]byte{} // data of this commit's fresh entries, by sequence
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		seqs := make([]uint64, len(r.records))
		var fresh []history.Entry
		var bytes int64
		local := map[string]uint64{}
		var refused error
		for i, rec := range r.records {
			s, known := h.ids[rec.ID]
			if !known {
				if s, known = inBatch[rec.ID]; !known {
					s, known = local[rec.ID]
				}
			}
			if !known {
				s = next + uint64(len(fresh)) + 1
				local[rec.ID] = s
				planned[s] = rec.Data
				fresh = append(fresh, history.Entry{Seq: s, ID: rec.ID, Data: rec.Data})
				bytes += int64(len(rec.Data))
			} else if r.same != nil && refused == nil {
				stored, err := h.storedEntry(ctx, s, rec.ID, planned)
				if err != nil {
					return plan{}, err
				}
				refused = r.same(stored, rec)
			}
			seqs[i] = s
		}
		if refused != nil {
			if !freshView {
				return plan{stale: true}, nil
			}
			r.err = refused
			continue
		}
		if limit := h.opts.MaxHistoryBytes; limit > 0 && len(fresh) > 0 && h.m.totalBytes()+p.bytes+bytes > limit {
			if !freshView {
				return plan{stale: true}, nil
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
	return p, nil
}

// storedEntry is the entry a known id names: planned by this commit, or committed (usually
// in the open tail or the cache; read otherwise).
func (h *log) storedEntry(ctx context.Context, seq uint64, id string, planned map[uint64][]byte) (history.Entry, error) {
	if data, ok := planned[seq]; ok {
		return history.Entry{Seq: seq, ID: id, Data: data}, nil
	}
	cur, _ := h.m.epochByNumber(0)
	entries, err := h.readRange(ctx, h.m, cur, seq, seq)
	if err != nil {
		return history.Entry{}, err
	}
	if len(entries) != 1 || entries[0].ID != id {
		return history.Entry{}, fmt.Errorf("%w: sequence %d does not hold %q", history.ErrCorrupt, seq, id)
	}
	return entries[0], nil
}

// tryCommit moves the index by compare-and-swap so that it holds the fresh entries: inside the
// index itself (the open tail) when they fit, which makes the commit one request, or else
// together with the open entries in new tail objects written first. Before that it drops
// what a background seal has put into sealed segments, or seals the unsealed tail itself when
// it reached its bound. It returns the tail objects the new index no longer references.
func (h *log) tryCommit(ctx context.Context, p plan) ([]string, error) {
	next := h.m.successor()
	var redundant []string
	bg := h.sealedInBackground()
	if bg != nil {
		if m, dropped, ok := next.sealedTo(bg.tag, bg.first, bg.last); ok {
			next, redundant = m, dropped
		}
	}
	lines := make([][]byte, len(p.fresh))
	size := 0
	for i, e := range p.fresh {
		lines[i] = encodeLine(e)
		size += len(lines[i])
	}
	inline := next.open.size+size <= h.opts.MaxOpenBytes
	if h.mustSeal(next, inline, len(p.fresh)) {
		if err := h.sealTail(ctx, next); err != nil {
			return nil, err
		}
		m, dropped, _ := next.sealedTo(next.Tag, next.SealedThrough+1, next.LastSeq)
		next, redundant = m, append(redundant, dropped...)
		inline = size <= h.opts.MaxOpenBytes
		failpoint("sealed")
	}
	var written []string
	if inline {
		next.open = next.open.with(p.fresh, lines)
	} else {
		var err error
		if written, err = h.writeTail(ctx, &next, p.fresh, lines); err != nil {
			return nil, err
		}
	}
	next.LastSeq = p.fresh[len(p.fresh)-1].Seq
	next.Bytes += p.bytes
	failpoint("tail-written")

	ver, err := h.objects.Replace(ctx, indexKey, next.encode(), h.ver)
	if err != nil {
		// Whether or not the index moved (a timeout is ambiguous), the next sync tells:
		// committed ids are found and keep their sequences. Tail objects written for this
		// attempt are orphans unless it landed; removeOrphans checks.
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
	h.consumedBackgroundSeal(bg)
	h.sealInBackground(next)
	return redundant, nil
}

// writeTail writes the open entries of m followed by fresh into new tail objects, split to
// fit the backend's objects, and makes m list them instead of carrying the open entries. The
// open entries go first so the sequences stay in order: sealed, tail objects, open tail.
func (h *log) writeTail(ctx context.Context, m *manifest, fresh []history.Entry, freshLines [][]byte) ([]string, error) {
	open, err := m.open.from(m.openFirst(), m.openFirst())
	if err != nil {
		return nil, err
	}
	entries := append(append(make([]history.Entry, 0, len(open)+len(fresh)), open...), fresh...)
	lines := append(append(make([][]byte, 0, len(entries)), m.open.lines...), freshLines...)
	m.Tail = append([]tailRef(nil), m.Tail...)
	var written []string
	for _, r := range h.chunkLines(lines) {
		chunk := entries[r[0]:r[1]]
		first, last := chunk[0].Seq, chunk[len(chunk)-1].Seq
		key := tailKey(m.Tag, first, last)
		data := joinLines(lines[r[0]:r[1]])
		if _, err := h.objects.Create(ctx, key, data); err != nil {
			h.orphans = append(h.orphans, written...)
			return nil, err
		}
		written = append(written, key)
		h.cache.put(key, chunk)
		m.Tail = append(m.Tail, tailRef{Key: key, Bytes: payloadOf(chunk)})
	}
	m.open = openTail{}
	return written, nil
}

// mustSeal: the unsealed tail would pass twice the point at which sealing starts in the
// background (which has normally made room long before): seal it in this commit.
func (h *log) mustSeal(m manifest, inline bool, fresh int) bool {
	if m.pieces() == 0 {
		return false
	}
	pieces := len(m.Tail) + 1 // the open entries and the fresh ones go to tail objects
	if inline {
		pieces = m.pieces() + fresh
	}
	return pieces > 2*h.opts.MaxTailObjects || m.unsealedBytes() >= 2*h.opts.SealBytes
}

// sealDue: the unsealed tail is large enough to be sealed, in the background.
func (h *log) sealDue(m manifest) bool {
	return m.pieces() > 0 && (m.pieces() >= h.opts.MaxTailObjects || m.unsealedBytes() >= h.opts.SealBytes ||
		m.open.size >= h.opts.MaxOpenBytes/2)
}

// chunk splits entries into objects that each fit MaxObjectBytes.
func (h *log) chunk(entries []history.Entry) [][]history.Entry {
	runs := h.chunkLines(encodeAll(entries))
	chunks := make([][]history.Entry, 0, len(runs))
	for _, r := range runs {
		chunks = append(chunks, entries[r[0]:r[1]])
	}
	return chunks
}

// chunkLines splits encoded lines into runs [start, end) whose objects (the lines and the
// footer) each fit MaxObjectBytes; a line too long for any object gets one of its own.
func (h *log) chunkLines(lines [][]byte) [][2]int {
	var runs [][2]int
	start, size := 0, footerSize
	for i, l := range lines {
		if i > start && size+len(l) > h.opts.MaxObjectBytes {
			runs = append(runs, [2]int{start, i})
			start, size = i, footerSize
		}
		size += len(l)
	}
	return append(runs, [2]int{start, len(lines)})
}

func lineSize(e history.Entry) int { return len(encodeLine(e)) }

// sealTail writes the committed tail of m as sealed segments. Every writer
// packs the same committed entries the same way, and a segment of the same
// range always holds the same records, so an existing key is fine. Entries the
// index carries are written from their lines, without encoding them again.
func (h *log) sealTail(ctx context.Context, m manifest) error {
	cur, _ := m.epochByNumber(0)
	entries, err := h.readRange(ctx, m, cur, m.SealedThrough+1, m.LastSeq)
	if err != nil {
		return err
	}
	var lines [][]byte
	if of := m.openFirst(); len(entries) > 0 && entries[0].Seq >= of {
		lines = m.open.lines[entries[0].Seq-of:]
	} else if len(entries) > 0 && len(m.open.lines) > 0 {
		// Tail objects, then the open tail: encode only what precedes the open tail.
		k := int(of - entries[0].Seq)
		lines = append(encodeAll(entries[:k]), m.open.lines...)
	}
	return h.writeSealed(ctx, m.Tag, entries, lines)
}

// writeSealed writes entries as sealed segments of tag; lines are their encoded lines when
// the caller has them (nil: encoded here).
func (h *log) writeSealed(ctx context.Context, tag string, entries []history.Entry, lines [][]byte) error {
	if len(entries) == 0 {
		return nil
	}
	if len(lines) != len(entries) {
		lines = encodeAll(entries)
	}
	var keys []dataKey
	for _, r := range h.chunkLines(lines) {
		chunk := entries[r[0]:r[1]]
		dk := dataKey{tag: tag, first: chunk[0].Seq, last: chunk[len(chunk)-1].Seq}
		key := sealedKey(tag, dk.first, dk.last)
		data := joinLines(lines[r[0]:r[1]])
		if h.opts.CompressSegments {
			data = compress(data)
		}
		if err := h.createIfAbsent(ctx, key, data); err != nil {
			return err
		}
		h.cache.put(key, chunk)
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

// checkID refuses ids that would not survive the JSON encoding unchanged.
func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: a record without an id", history.ErrInvalidRecord)
	case len(id) > history.MaxRecordIDBytes:
		return fmt.Errorf("%w: a record id of %d bytes, the limit is %d", history.ErrInvalidRecord, len(id), history.MaxRecordIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: a record id that is not valid UTF-8", history.ErrInvalidRecord)
	}
	return nil
}
