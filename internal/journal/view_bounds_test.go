package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// endlessEpoch is a history whose index declares a small epoch and whose reads serve pages of
// large records until served bytes have gone by: what a hostile S3 endpoint or bucket may answer.
type endlessEpoch struct {
	history.History
	record history.Record
	served int64
	stop   int64
}

func (h *endlessEpoch) Read(_ context.Context, opts history.ReadOptions) (history.Page, error) {
	from := max(opts.From, 1)
	page := history.Page{Epoch: 1, Head: history.Head{Epoch: 1, Sequence: 1 << 40, Bytes: 1000}}
	for seq := from; seq < from+100; seq++ {
		page.Entries = append(page.Entries, history.Entry{Seq: seq, ID: fmt.Sprintf("m%d", seq), Data: h.record.Data})
		h.served += int64(len(h.record.Data))
	}
	if h.served < h.stop {
		page.Next = from + 100
	}
	return page, nil
}

// TestViewFoldsNoMoreThanAnyHistoryKeeps: a store that declares a small epoch and serves
// records without end makes the view's refresh fail with ErrCorrupt once it passes the most
// any history keeps, instead of holding all of it in memory.
func TestViewFoldsNoMoreThanAnyHistoryKeeps(t *testing.T) {
	defer func(was int64) { maxEpochPayload = was }(maxEpochPayload)
	maxEpochPayload = 1 << 20
	rec, err := MessageRecord(&conversation.Message{
		ID: "m", Role: conversation.RoleUser,
		Blocks: []conversation.Block{{Type: conversation.BlockText, Text: strings.Repeat("x", 10<<10)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &endlessEpoch{record: rec, stop: 16 << 20}
	v := NewView("s", nil)
	err = v.Refresh(t.Context(), h)
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("refreshing from a store serving %d MiB of a declared 1,000-byte epoch: %v, want ErrCorrupt", h.served>>20, err)
	}
	if v.payload > maxEpochPayload+int64(len(rec.Data)) {
		t.Errorf("the view folded %d bytes before refusing, past the bound %d", v.payload, maxEpochPayload)
	}
}

// TestViewBoundIsMaxHistoryBytes: the view's bound is the most any history keeps.
func TestViewBoundIsMaxHistoryBytes(t *testing.T) {
	if maxEpochPayload != parleyv1alpha1.MaxHistoryBytes {
		t.Fatalf("the view's bound %d, MaxHistoryBytes %d", maxEpochPayload, parleyv1alpha1.MaxHistoryBytes)
	}
}
