package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-dev/parley/pkg/history"
)

const (
	defaultPageLimit = 1000
	// readAttempts: a read may race with a seal that deletes the tail
	// objects it was about to fetch; it then starts again from a fresh index.
	readAttempts = 4
)

func (h *log) loadManifest(ctx context.Context) (manifest, string, error) {
	data, ver, err := h.objects.Get(ctx, indexKey)
	if err != nil {
		return manifest{}, "", err
	}
	m, err := h.store.decodeManifest(ctx, data)
	return m, ver, err
}

// Read implements history.History.
func (h *log) Read(ctx context.Context, opts history.ReadOptions) (history.Page, error) {
	from := max(opts.From, 1)
	limit := opts.Limit
	if limit <= 0 {
		limit = defaultPageLimit
	}
	var err error
	for range readAttempts {
		var m manifest
		if m, _, err = h.loadManifest(ctx); err != nil {
			return history.Page{}, err
		}
		ref, ok := m.epochByNumber(opts.Epoch)
		if !ok {
			return history.Page{}, fmt.Errorf("epoch %d: %w", opts.Epoch, history.ErrNotFound)
		}
		page := history.Page{Epoch: ref.Epoch, Head: m.head()}
		if from > ref.LastSeq {
			return page, nil
		}
		to := min(ref.LastSeq, from+uint64(limit)-1)
		page.Entries, err = h.readRange(ctx, m, ref, from, to)
		if errors.Is(err, history.ErrNotFound) {
			continue
		}
		if err != nil {
			return history.Page{}, err
		}
		if to < ref.LastSeq {
			page.Next = to + 1
		}
		return page, nil
	}
	return history.Page{}, fmt.Errorf("read kept racing with concurrent seals: %w", history.ErrUnavailable)
}

// Head implements history.History.
func (h *log) Head(ctx context.Context) (history.Head, error) {
	m, _, err := h.loadManifest(ctx)
	if err != nil {
		return history.Head{}, err
	}
	return m.head(), nil
}

// JustCreated implements history.JustCreated: the head of a history this handle's Open
// created, while no record has been committed through the handle, without a read.
func (h *log) JustCreated() (history.Head, bool) {
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	if !h.created || !h.loaded || h.m.LastSeq != 0 {
		return history.Head{}, false
	}
	return h.m.head(), true
}

// readRange returns entries from..to of an epoch as the manifest m sees it.
// ErrNotFound means an object vanished under a concurrent seal: reload m.
func (h *log) readRange(ctx context.Context, m manifest, ref epochRef, from, to uint64) ([]history.Entry, error) {
	sealedThrough, openFirst := ref.LastSeq, ref.LastSeq+1
	var tail []tailRef
	if ref.Tag == m.Tag {
		sealedThrough, tail, openFirst = m.SealedThrough, m.Tail, m.openFirst()
	}
	out := make([]history.Entry, 0, min(to-from+1, 1<<16))
	for seq := from; seq <= to; {
		if seq >= openFirst {
			// The rest is in the index itself.
			entries, err := m.open.from(openFirst, seq)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if e.Seq > to {
					break
				}
				out = append(out, e)
			}
			return out, nil
		}
		var key string
		var dk dataKey
		var err error
		if seq <= sealedThrough {
			key, dk, err = h.sealedCovering(ctx, ref.Tag, seq, sealedThrough)
		} else {
			key, dk, err = tailCovering(tail, seq)
		}
		if err != nil {
			return nil, err
		}
		entries, err := h.entries(ctx, key, dk)
		if err != nil {
			if !dk.tail && errors.Is(err, history.ErrNotFound) {
				// Retain deleted a redundant segment this handle's listing
				// still names: list again on the retry.
				h.sealed.forget(dk.tag)
			}
			return nil, err
		}
		for _, e := range entries[seq-dk.first:] {
			if e.Seq > to {
				break
			}
			out = append(out, e)
		}
		seq = dk.last + 1
	}
	return out, nil
}

func tailCovering(tail []tailRef, seq uint64) (string, dataKey, error) {
	for _, t := range tail {
		dk, ok := parseDataKey(t.Key)
		if ok && dk.first <= seq && seq <= dk.last {
			return t.Key, dk, nil
		}
	}
	return "", dataKey{}, fmt.Errorf("%w: index has no tail object for sequence %d", history.ErrCorrupt, seq)
}

// sealedCovering finds a sealed segment holding seq. Several may (a sealer
// that crashed before moving the index leaves a duplicate); all of them hold
// the same committed records, so any will do: take the longest.
func (h *log) sealedCovering(ctx context.Context, tag string, seq, sealedThrough uint64) (string, dataKey, error) {
	for attempt := range 2 {
		keys, ok := h.sealed.get(tag)
		if !ok || attempt > 0 {
			var err error
			if keys, err = h.listSealed(ctx, tag); err != nil {
				return "", dataKey{}, err
			}
		}
		if dk, found := covering(keys, seq); found {
			return sealedKey(tag, dk.first, dk.last), dk, nil
		}
	}
	return "", dataKey{}, fmt.Errorf("%w: no sealed segment holds sequence %d (sealed through %d)", history.ErrCorrupt, seq, sealedThrough)
}

func covering(keys []dataKey, seq uint64) (dataKey, bool) {
	var best dataKey
	found := false
	for _, dk := range keys {
		if dk.first <= seq && seq <= dk.last && (!found || dk.last > best.last) {
			best, found = dk, true
		}
	}
	return best, found
}

func (h *log) listSealed(ctx context.Context, tag string) ([]dataKey, error) {
	infos, err := h.objects.List(ctx, sealedPrefix(tag))
	if err != nil {
		return nil, err
	}
	keys := make([]dataKey, 0, len(infos))
	for _, info := range infos {
		if dk, ok := parseDataKey(info.Key); ok && !dk.tail && dk.tag == tag {
			keys = append(keys, dk)
		}
	}
	h.sealed.set(tag, keys)
	return keys, nil
}

// entries returns the decoded entries of one immutable object, checking that
// they are exactly the sequences its key names.
func (h *log) entries(ctx context.Context, key string, dk dataKey) ([]history.Entry, error) {
	if entries, ok := h.cache.get(key); ok {
		return entries, nil
	}
	data, _, err := h.objects.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	entries, err := h.store.decodeSegment(ctx, data, dk.last-dk.first+1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if uint64(len(entries)) != dk.last-dk.first+1 {
		return nil, fmt.Errorf("%w: %s holds %d entries", history.ErrCorrupt, key, len(entries))
	}
	for i, e := range entries {
		if e.Seq != dk.first+uint64(i) {
			return nil, fmt.Errorf("%w: %s entry %d has sequence %d", history.ErrCorrupt, key, i, e.Seq)
		}
	}
	h.cache.put(key, entries)
	return entries, nil
}
