package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
)

// cacheBudget bounds the decoded objects one store keeps in memory, all
// conversations together.
const cacheBudget = 64 << 20

// log is the History of one conversation.
type log struct {
	store   *Store
	name    string
	objects *ownedObjects
	opts    Options

	cache  scopedCache
	sealed sealedLists

	// commitMu serialises this handle's commits, epoch swaps and retention;
	// the fields below it are the writer's view and are guarded by it.
	commitMu sync.Mutex
	loaded   bool
	m        manifest
	ver      string
	// created: this handle's Open created the index (see JustCreated).
	created bool
	// ids maps every id of the current epoch (tag idsTag) up to idsThrough.
	ids        map[string]uint64
	idsTag     string
	idsThrough uint64
	// orphans are tail objects of failed commit attempts, removed once the
	// index proves they can never be committed.
	orphans []string

	// sealMu guards the background seal (background.go): whether one runs, and the
	// range the last one sealed that no commit has used yet.
	sealMu     sync.Mutex
	sealing    bool
	bgSealed   *sealedRange
	background sync.WaitGroup

	qmu      sync.Mutex
	queue    []*request
	flushing bool
	gone     bool
}

var _ history.History = (*log)(nil)

func newLog(s *Store, name string, objects Objects, owned bool) *log {
	return &log{store: s, name: name, objects: newOwnedObjects(objects, owned), opts: s.opts, cache: scopedCache{s.cache, name + "/"}}
}

// adoptOwner puts owner on what the handle writes from now on, if it was
// opened without one.
func (h *log) adoptOwner(owner *metav1.OwnerReference) error {
	if owner == nil {
		return nil
	}
	return h.objects.adopt(func() (Objects, error) { return h.store.backend.Objects(h.name, owner) })
}

// markDeleted fails appends from now on; the history was deleted or the
// store closed.
func (h *log) markDeleted() {
	h.qmu.Lock()
	defer h.qmu.Unlock()
	h.gone = true
}

// sync brings the writer's view up to date with the index: the manifest and
// its version, and the ids of every committed entry of the current epoch.
func (h *log) sync(ctx context.Context) error {
	if !h.loaded {
		m, ver, err := h.loadManifest(ctx)
		if errors.Is(err, history.ErrNotFound) {
			return fmt.Errorf("history %q: %w: %w", h.name, errIndexGone, err)
		}
		if err != nil {
			return err
		}
		h.m, h.ver, h.loaded = m, ver, true
		h.removeOrphans(ctx)
	}
	// The writer keeps the open entries decoded: its commits carry them on.
	open, err := h.m.open.decoded(h.m.openFirst())
	if err != nil {
		h.loaded = false
		return err
	}
	h.m.open = open
	if h.idsTag != h.m.Tag {
		h.ids, h.idsTag, h.idsThrough = map[string]uint64{}, h.m.Tag, 0
	}
	if h.idsThrough >= h.m.LastSeq {
		return nil
	}
	cur, _ := h.m.epochByNumber(0)
	entries, err := h.readRange(ctx, h.m, cur, h.idsThrough+1, h.m.LastSeq)
	if err != nil {
		h.loaded = false
		return err
	}
	for _, e := range entries {
		h.ids[e.ID] = e.Seq
	}
	h.idsThrough = h.m.LastSeq
	return nil
}

// removeOrphans deletes this handle's failed tail objects that the fresh
// index shows are dead: not in the tail and ending at or below the last
// committed sequence (or of another epoch), so no index can ever point at
// them. (A tail object may start with entries committed before it, which the
// open tail carried: only its end tells whether its commit can still land.)
func (h *log) removeOrphans(ctx context.Context) {
	if len(h.orphans) == 0 {
		return
	}
	referenced := map[string]bool{}
	for _, t := range h.m.Tail {
		referenced[t.Key] = true
	}
	kept := h.orphans[:0]
	for _, key := range h.orphans {
		dk, ok := parseDataKey(key)
		dead := ok && !referenced[key] && (dk.tag != h.m.Tag || dk.last <= h.m.LastSeq)
		if dead && h.objects.Delete(ctx, key) == nil {
			continue
		}
		kept = append(kept, key)
	}
	h.orphans = kept
}
