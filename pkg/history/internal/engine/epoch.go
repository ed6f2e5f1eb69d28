package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/parley-dev/parley/pkg/history"
)

// NewEpoch implements history.History. The new epoch's segments are written
// under a fresh tag before the index moves, so a crash leaves only an
// unreferenced tag that Retain removes; the swap itself is one
// compare-and-swap of the index.
func (h *log) NewEpoch(ctx context.Context, req history.EpochRequest) (history.Head, error) {
	for _, rec := range req.Records {
		if err := checkID(rec.ID); err != nil {
			return history.Head{}, err
		}
		if len(rec.Data) > h.opts.maxRecordBytes() {
			return history.Head{}, fmt.Errorf("%w: record %q has %d bytes%s", history.ErrTooLarge, rec.ID, len(rec.Data), h.opts.TooLargeHint)
		}
	}
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	// This handle's seal of the old epoch, if one runs, lands before the swap: nothing of
	// this process writes into the old epoch afterwards.
	h.background.Wait()
	var err error
	var tags []string // of the attempts: an index write may land unanswered
	for attempt := range h.opts.MaxAttempts {
		if attempt > 0 {
			backoff(ctx, attempt)
		}
		var head history.Head
		head, err = h.tryNewEpoch(ctx, req, &tags)
		if err == nil {
			return head, nil
		}
		h.loaded = false
		if !errors.Is(err, errRetrySwap) && !errors.Is(err, history.ErrUnavailable) {
			return history.Head{}, err
		}
	}
	return history.Head{}, err
}

// errRetrySwap: the index moved while the new epoch was being written.
var errRetrySwap = fmt.Errorf("index moved during epoch swap: %w", history.ErrConflict)

func (h *log) tryNewEpoch(ctx context.Context, req history.EpochRequest, tags *[]string) (history.Head, error) {
	m, ver, err := h.loadManifest(ctx)
	if err != nil {
		return history.Head{}, err
	}
	if slices.Contains(*tags, m.Tag) {
		// An earlier attempt swapped; only its answer was lost. (Tags are
		// never reused, so no other writer can have made this one current.)
		h.m, h.ver, h.loaded = m, ver, true
		return m.head(), nil
	}
	if m.Epoch != req.Epoch {
		return history.Head{}, fmt.Errorf("%w: current epoch is %d, not %d", history.ErrConflict, m.Epoch, req.Epoch)
	}
	if req.Through > m.LastSeq {
		return history.Head{}, fmt.Errorf("%w: through %d is past the head %d", history.ErrConflict, req.Through, m.LastSeq)
	}
	cur, _ := m.epochByNumber(0)
	var carried []history.Entry
	if req.Through < m.LastSeq {
		if carried, err = h.readRange(ctx, m, cur, req.Through+1, m.LastSeq); err != nil {
			return history.Head{}, retryOnVanished(err)
		}
	}
	// The old epoch becomes read-only and fully sealed.
	if err := h.sealTail(ctx, m); err != nil {
		return history.Head{}, retryOnVanished(err)
	}

	next := manifest{Format: manifestFormat, Generation: m.Generation + 1, Epoch: m.Epoch + 1, Tag: newEpochTag(m.Epoch + 1)}
	next.Old = append(append([]epochRef(nil), m.Old...), epochRef{Epoch: m.Epoch, Tag: m.Tag, LastSeq: m.LastSeq, Bytes: m.Bytes})
	entries := make([]history.Entry, 0, len(req.Records)+len(carried))
	seen := map[string]bool{}
	add := func(id string, data []byte) {
		if seen[id] {
			return
		}
		seen[id] = true
		entries = append(entries, history.Entry{Seq: uint64(len(entries)) + 1, ID: id, Data: data})
		next.Bytes += int64(len(data))
	}
	for _, rec := range req.Records {
		add(rec.ID, bytes.Clone(rec.Data)) // cached: the caller may reuse its buffer
	}
	for _, e := range carried {
		add(e.ID, e.Data)
	}
	next.LastSeq, next.SealedThrough = uint64(len(entries)), uint64(len(entries))
	*tags = append(*tags, next.Tag)
	h.sealed.set(next.Tag, nil)
	if err := h.writeSealed(ctx, next.Tag, entries, nil); err != nil {
		return history.Head{}, err
	}
	newVer, err := h.objects.Replace(ctx, indexKey, next.encode(), ver)
	if errors.Is(err, history.ErrConflict) {
		return history.Head{}, errRetrySwap
	}
	if err != nil {
		return history.Head{}, err
	}
	for _, t := range m.Tail {
		_ = h.objects.Delete(ctx, t.Key) // sealed in the old epoch above
	}
	h.m, h.ver, h.loaded = next, newVer, true
	return next.head(), nil
}

func retryOnVanished(err error) error {
	if errors.Is(err, history.ErrNotFound) {
		return fmt.Errorf("%w: %w", errRetrySwap, err)
	}
	return err
}
