package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parley-dev/parley/pkg/history"
)

// Retain implements history.History. It first drops epochs from the index
// (compare-and-swap), then deletes objects that no index can reach:
// dropped or abandoned epochs, dead tail objects, duplicate sealed segments
// and unwanted checkpoints. Objects a concurrent writer may still commit
// (newer epoch tags, tail objects past the head) are left alone.
func (h *log) Retain(ctx context.Context, policy history.Retention) error {
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	h.background.Wait() // this handle's seal in flight, so the listing below sees it
	h.loaded = false
	m, err := h.trimEpochs(ctx, max(policy.KeepEpochs, 0))
	if err != nil {
		return err
	}
	infos, err := h.objects.List(ctx, "")
	if err != nil {
		return err
	}
	for _, key := range garbage(m, infos, policy.KeepCheckpoint) {
		if err := h.objects.Delete(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

func (h *log) trimEpochs(ctx context.Context, keep int) (manifest, error) {
	for attempt := range h.opts.MaxAttempts {
		if attempt > 0 {
			backoff(ctx, attempt)
		}
		m, ver, err := h.loadManifest(ctx)
		if err != nil || len(m.Old) <= keep {
			return m, err
		}
		m = m.successor()
		m.Old = append([]epochRef(nil), m.Old[len(m.Old)-keep:]...)
		_, err = h.objects.Replace(ctx, indexKey, m.encode(), ver)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, history.ErrConflict) {
			return manifest{}, err
		}
	}
	return manifest{}, fmt.Errorf("trim epochs: %w", history.ErrConflict)
}

// garbage returns the keys that no reader or writer can still need.
func garbage(m manifest, infos []ObjectInfo, keepCheckpoint func(history.Digest) bool) []string {
	retained := map[string]epochRef{m.Tag: {Epoch: m.Epoch, Tag: m.Tag, LastSeq: m.LastSeq}}
	for _, o := range m.Old {
		retained[o.Tag] = o
	}
	inTail := map[string]bool{}
	for _, t := range m.Tail {
		inTail[t.Key] = true
	}
	sealedByTag := map[string][]dataKey{}
	var out []string
	for _, info := range infos {
		key := info.Key
		if hex, ok := strings.CutPrefix(key, checkpointPrefix); ok {
			if keepCheckpoint != nil && !keepCheckpoint(history.Digest("sha256:"+hex)) {
				out = append(out, key)
			}
			continue
		}
		dk, ok := parseDataKey(key)
		if !ok {
			continue
		}
		_, isRetained := retained[dk.tag]
		switch {
		case !isRetained:
			// A tag numbered past the current epoch may belong to a swap in flight.
			if epochOfTag(dk.tag) <= m.Epoch {
				out = append(out, key)
			}
		case dk.tail && dk.tag != m.Tag:
			out = append(out, key) // old epochs are fully sealed
		case dk.tail:
			// Dead once the index passed its end: the commit that wrote it expected an
			// index ending before its fresh entries, which can no longer be current.
			if !inTail[key] && dk.last <= m.LastSeq {
				out = append(out, key)
			}
		default:
			sealedByTag[dk.tag] = append(sealedByTag[dk.tag], dk)
		}
	}
	for tag, keys := range sealedByTag {
		through := retained[tag].LastSeq
		if tag == m.Tag {
			through = m.SealedThrough
		}
		out = append(out, redundantSegments(tag, keys, through)...)
	}
	return out
}

// redundantSegments picks one chain of sealed segments covering 1..through
// and returns the others that lie entirely within it (left by sealers that
// crashed or lost a race). Segments reaching past through are left alone:
// a seal may be about to commit them.
func redundantSegments(tag string, keys []dataKey, through uint64) []string {
	chain := map[dataKey]bool{}
	for seq := uint64(1); seq <= through; {
		dk, ok := covering(keys, seq)
		if !ok {
			return nil // a gap: keep everything, reads will report it
		}
		chain[dk] = true
		seq = dk.last + 1
	}
	var out []string
	for _, dk := range keys {
		if !chain[dk] && dk.last <= through {
			out = append(out, sealedKey(tag, dk.first, dk.last))
		}
	}
	return out
}

func epochOfTag(tag string) uint64 {
	num, _, _ := strings.Cut(strings.TrimPrefix(tag, "e"), "-")
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Usage implements history.History.
func (h *log) Usage(ctx context.Context) (history.Usage, error) {
	m, _, err := h.loadManifest(ctx)
	if err != nil {
		return history.Usage{}, err
	}
	infos, err := h.objects.List(ctx, "")
	if err != nil {
		return history.Usage{}, err
	}
	u := history.Usage{Head: m.head(), Epochs: 1 + len(m.Old), Objects: len(infos)}
	for _, info := range infos {
		u.StoredBytes += info.Size
		if strings.HasPrefix(info.Key, checkpointPrefix) {
			u.Checkpoints++
		}
	}
	return u, nil
}
