package engine

import "context"

// Sealing in the background keeps appends at one request. Once the unsealed tail is due
// (sealDue), the committed entries it holds are written as sealed segments while appends go
// on; the first commit after that drops them from the index (sealedTo). Only the seal of a
// tail that reached twice its bound happens inside a commit, on its critical path.
//
// It is safe because a sealed segment holds committed entries only, which never change
// within an epoch tag: it may be written at any time by anyone, and Retain leaves segments
// reaching past the index's sealedThrough alone, so none vanishes before the index counts it.

// sealedRange is a chain of sealed segments a background seal wrote: first…last of tag.
type sealedRange struct {
	tag         string
	first, last uint64
}

// sealInBackground starts sealing m's unsealed tail when it is due and no seal is running.
// m is the index this handle just committed; its entries are never modified.
func (h *log) sealInBackground(m manifest) {
	if !h.sealDue(m) {
		return
	}
	h.sealMu.Lock()
	defer h.sealMu.Unlock()
	if h.sealing {
		return
	}
	h.sealing = true
	h.background.Add(1)
	h.store.background.Add(1)
	go func() {
		defer h.store.background.Done()
		defer h.background.Done()
		ctx, cancel := context.WithTimeout(h.store.ctx, h.opts.OpTimeout)
		defer cancel()
		err := h.sealTail(ctx, m)
		h.sealMu.Lock()
		defer h.sealMu.Unlock()
		h.sealing = false
		if err == nil {
			// A failed seal is simply not used: the next due commit starts another, and a
			// tail at twice its bound is sealed inside the commit.
			h.bgSealed = &sealedRange{tag: m.Tag, first: m.SealedThrough + 1, last: m.LastSeq}
		}
	}()
}

// sealedInBackground returns the latest finished background seal, if any.
func (h *log) sealedInBackground() *sealedRange {
	h.sealMu.Lock()
	defer h.sealMu.Unlock()
	return h.bgSealed
}

// consumedBackgroundSeal forgets a background seal once a commit has moved the index past it
// (used or not: an index that could not use it never will, as sealedThrough only grows).
func (h *log) consumedBackgroundSeal(s *sealedRange) {
	if s == nil {
		return
	}
	h.sealMu.Lock()
	defer h.sealMu.Unlock()
	if h.bgSealed == s {
		h.bgSealed = nil
	}
}

// quiesce waits for the commit in flight and the background seal, once no more appends are
// taken (markDeleted): Delete then lists every object there will be.
// (Waits hold commitMu, under which seals start: a WaitGroup's Add must not race its Wait.)
func (h *log) quiesce() {
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	h.background.Wait()
}
