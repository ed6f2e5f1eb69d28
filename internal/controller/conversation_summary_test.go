package controller

import (
	"context"
	"testing"
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/internal/session"
	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

// An idle conversation gets no interval Checkpoint after the first: the history's head lies
// past its last message (the initialisation marker, an adapter report), and the figure the
// policy compares with a Checkpoint's status.sequence must be the last message's, as the
// Checkpoint controller records it.
func TestIntervalCheckpointsOfAnIdleHistory(t *testing.T) {
	ctx := context.Background()
	conv := testConv(withSession(mintedID), func(c *parleyv1alpha1.Conversation) {
		c.Spec.Checkpoints = &parleyv1alpha1.CheckpointPolicy{Interval: dur(time.Hour)}
		c.Spec.Context.Tokenizer = parleyv1alpha1.TokenizerApproximate
	})
	h, err := memory.New(memory.Options{}).Open(ctx, "h", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	appendRecords := func(records ...history.Record) {
		t.Helper()
		if _, err := journal.AppendAll(ctx, h, records); err != nil {
			t.Fatal(err)
		}
	}
	message := func(id string, role conversation.Role) history.Record {
		t.Helper()
		r, err := journal.MessageRecord(&conversation.Message{
			ID: id, Role: role,
			Blocks: []conversation.Block{{Type: conversation.BlockText, Text: id}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	marker, err := journal.InitializedRecord()
	if err != nil {
		t.Fatal(err)
	}
	adapter, err := journal.AdapterRecord("a1", &conversation.ClaudeAgentSDKState{SessionID: "sdk"})
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(message("u1", conversation.RoleUser), message("a1", conversation.RoleAssistant), marker, adapter)

	live, err := (&session.Sessions{Stores: oneHistory{h}}).Open(ctx, conv, false)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := summarise(ctx, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.sequence != 4 || sum.lastMessageSeq != 2 {
		t.Fatalf("summary sequence %d lastMessageSeq %d, want 4 2", sum.sequence, sum.lastMessageSeq)
	}
	// The first interval's Checkpoint, as the Checkpoint controller wrote it: the sequence of
	// the last message of its snapshot.
	first := checkpoint{
		name: "c-at-1", reason: parleyv1alpha1.CheckpointScheduled, age: time.Hour,
		phase: parleyv1alpha1.CheckpointReady, seq: 2,
	}.object()

	plan := decideCheckpoints(conv, []parleyv1alpha1.Checkpoint{first}, created.Add(150*time.Minute), sum.turns, sum.lastMessageSeq)
	if len(plan.create) != 0 {
		t.Errorf("idle history: created %+v", plan.create)
	}

	appendRecords(message("u2", conversation.RoleUser))
	if sum, err = summarise(ctx, live, nil); err != nil {
		t.Fatal(err)
	}
	plan = decideCheckpoints(conv, []parleyv1alpha1.Checkpoint{first}, created.Add(150*time.Minute), sum.turns, sum.lastMessageSeq)
	if len(plan.create) != 1 || plan.create[0].name != "c-at-2" {
		t.Errorf("after a new message: created %+v, want c-at-2", plan.create)
	}
}

// oneHistory is a session.Stores that holds one history.
type oneHistory struct{ h history.History }

func (o oneHistory) Open(context.Context, *parleyv1alpha1.Conversation, bool) (history.History, error) {
	return o.h, nil
}

func (o oneHistory) Delete(context.Context, *parleyv1alpha1.Conversation) error { return nil }
