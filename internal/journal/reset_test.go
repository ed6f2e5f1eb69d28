package journal

import (
	"context"
	"slices"
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/memory"
)

func textMsg(id string, role conversation.Role, text string, seq int64) conversation.Message {
	return conversation.Message{ID: id, Role: role, Seq: seq, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}}}
}

func ids(ms []conversation.Message) []string {
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = ms[i].ID
	}
	return out
}

func TestResetState(t *testing.T) {
	sys := &conversation.Message{ID: SystemRecordID, Role: conversation.RoleSystem, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: "be brief"}}}
	base := func() conversation.State {
		s := conversation.NewState("s1")
		s.CWD, s.System = "/work", sys
		s.Messages = []conversation.Message{
			textMsg("u1", conversation.RoleUser, "hi", 3), textMsg("a1", conversation.RoleAssistant, "hello", 4),
		}
		s.Adapters = conversation.AdapterStates{&conversation.ClaudeAgentSDKState{SessionID: "sdk-1"}}
		return s
	}
	tests := map[string]struct {
		live       func() conversation.State
		held       func() conversation.State
		keepSystem bool
		wantIDs    []string
		wantSystem bool
		cleared    int
		adapters   int
	}{
		"everything held, system dropped": {
			live: base, held: base, wantIDs: []string{}, cleared: 2,
		},
		"everything held, system kept": {
			live: base, held: base, keepSystem: true, wantIDs: []string{}, wantSystem: true, cleared: 2,
		},
		"a message appended after the snapshot is kept": {
			live: func() conversation.State {
				s := base()
				s.Messages = append(s.Messages, textMsg("u2", conversation.RoleUser, "later", 5))
				return s
			},
			held: base, wantIDs: []string{"u2"}, cleared: 2,
		},
		"a message changed after the snapshot (a streamed delta) is kept": {
			live: func() conversation.State {
				s := base()
				s.Messages[1].Blocks[0].Text = "hello there"
				return s
			},
			held: base, wantIDs: []string{"a1"}, cleared: 1,
		},
		"sequence and turn numbers do not count (another epoch)": {
			live: func() conversation.State {
				s := base()
				s.Messages[0].Seq, s.Messages[1].Seq, s.Messages[1].Turn = 1, 2, 1
				return s
			},
			held: base, wantIDs: []string{}, cleared: 2,
		},
		"a snapshot that holds nothing clears nothing": {
			live: base,
			held: func() conversation.State { return conversation.NewState("s1") },
			// The adapter report is not held either: kept.
			wantIDs: []string{"u1", "a1"}, cleared: 0, adapters: 1,
		},
		"an adapter report after the snapshot is kept": {
			live: func() conversation.State {
				s := base()
				s.Adapters = append(s.Adapters, &conversation.ClaudeAgentSDKState{SessionID: "sdk-2"})
				return s
			},
			held: base, wantIDs: []string{}, cleared: 2, adapters: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live, held := tc.live(), tc.held()
			out, cleared := ResetState(&live, &held, tc.keepSystem)
			if got := ids(out.Messages); !slices.Equal(got, tc.wantIDs) {
				t.Errorf("messages %v, want %v", got, tc.wantIDs)
			}
			if (out.System != nil) != tc.wantSystem {
				t.Errorf("system kept = %v, want %v", out.System != nil, tc.wantSystem)
			}
			if cleared != tc.cleared {
				t.Errorf("cleared %d, want %d", cleared, tc.cleared)
			}
			if len(out.Adapters) != tc.adapters {
				t.Errorf("%d adapter reports kept, want %d", len(out.Adapters), tc.adapters)
			}
			if out.CWD != "/work" || out.SessionID != "s1" {
				t.Errorf("session fields not kept: cwd %q, session %q", out.CWD, out.SessionID)
			}
			for _, m := range out.Messages {
				if m.Seq != 0 || m.Turn != 0 {
					t.Errorf("kept message %s keeps its old numbers (seq %d, turn %d)", m.ID, m.Seq, m.Turn)
				}
			}
		})
	}
}

// TestResetEpoch resets a history the way the Session API does (the held state read back
// from a stored snapshot, a new epoch whose records ResetRecords made, an append carried after
// Through) and reads the new epoch: the system prompt, the carried message, the reset record.
func TestResetEpoch(t *testing.T) {
	ctx := context.Background()
	h, err := memory.New(memory.Options{}).Open(ctx, "ns/s", history.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	sys, _ := SystemRecord("be brief")
	marker, _ := InitializedRecord()
	recs := make([]history.Record, 0, 4)
	recs = append(recs, sys, marker)
	for _, m := range []conversation.Message{textMsg("u1", conversation.RoleUser, "hi", 0), textMsg("a1", conversation.RoleAssistant, "hello", 0)} {
		r, err := MessageRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if _, err := AppendAll(ctx, h, recs); err != nil {
		t.Fatal(err)
	}
	vs := &Views{}
	var snap *Snapshot
	if err := vs.With(ctx, "k", "s", "cl100k_base", h, func(v *View) error { snap = v.Snapshot(); return nil }); err != nil {
		t.Fatal(err)
	}
	data, err := conversation.MarshalSnapshot(&snap.State, conversation.SnapshotMetadata{Checkpoint: "c-reset"})
	if err != nil {
		t.Fatal(err)
	}
	held, err := conversation.UnmarshalSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	// An append lands after the view was read: carried by NewEpoch.
	late := textMsg("u2", conversation.RoleUser, "are you there?", 0)
	lateRec, _ := MessageRecord(&late)
	if _, err := h.Append(ctx, []history.Record{lateRec}); err != nil {
		t.Fatal(err)
	}

	state, cleared := ResetState(&snap.State, &held.State, true)
	r := &Reset{ID: "key-1", Checkpoint: "c-reset", FromEpoch: snap.Epoch, Through: snap.Sequence, KeepSystem: true, Cleared: cleared}
	records, err := ResetRecords(r, &state, snap.Epoch+1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.NewEpoch(ctx, history.EpochRequest{Epoch: snap.Epoch, Through: snap.Sequence, Records: records}); err != nil {
		t.Fatal(err)
	}
	if err := vs.With(ctx, "k", "s", "cl100k_base", h, func(v *View) error {
		if v.Epoch != snap.Epoch+1 {
			t.Errorf("epoch %d, want %d", v.Epoch, snap.Epoch+1)
		}
		if got := ids(v.State.Messages); !slices.Equal(got, []string{"u2"}) {
			t.Errorf("messages %v, want the carried u2 only", got)
		}
		if v.State.System == nil || v.State.System.Text() != "be brief" {
			t.Errorf("system prompt not kept: %+v", v.State.System)
		}
		if !v.Initialized {
			t.Error("the new epoch lacks the initialisation marker: the seed would be imported again")
		}
		if v.LastReset == nil || v.LastReset.ID != "key-1" || v.LastReset.Cleared != 2 {
			t.Errorf("LastReset %+v, want id key-1, 2 cleared", v.LastReset)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
