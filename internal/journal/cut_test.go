package journal

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
)

// cutState is three turns; the third waits for its tool call c4. The subagent of c2 belongs
// to turn 1, the one of c4 to turn 3; a subagent without a tool call is kept by every cut.
func cutState() conversation.State {
	s := conversation.NewState("cut")
	s.Messages = numbered(
		msg("u1", conversation.RoleUser, text("go")),
		msg("a1", conversation.RoleAssistant, toolUse("c1", "Bash"), toolUse("c2", "Task")),
		msg("r1", conversation.RoleTool, toolResult("c1", "ok"), toolResult("c2", "done")),
		msg("u2", conversation.RoleUser, text("next")),
		msg("a2", conversation.RoleAssistant, toolUse("c3", "Bash")),
		msg("r2", conversation.RoleTool, toolResult("c3", "ok")),
		msg("u3", conversation.RoleUser, text("last")),
		msg("a3", conversation.RoleAssistant, text("on it"), toolUse("c4", "Task")),
	)
	s.Subagents = []conversation.Subagent{{ToolUseID: "c2"}, {ToolUseID: "c4"}, {AgentID: "free"}}
	raw := func(after, thread string) conversation.RawRecord {
		return conversation.RawRecord{AfterID: after, Thread: thread, Raw: jsontext.Value(`{}`)}
	}
	s.Records = []conversation.RawRecord{raw("", ""), raw("a1", ""), raw("r2", ""), raw("a3", ""), raw("s9", "agent-free")}
	s.Adapters = conversation.AdapterStates{&conversation.ClaudeAgentSDKState{SessionID: "sdk"}}
	return s
}

func withoutLast(s conversation.State, n int) conversation.State {
	s.Messages = s.Messages[:len(s.Messages)-n]
	return s
}

func TestCut(t *testing.T) {
	fixture := fixtureState(t)
	const fixtureSubagent = "toolu_01H79rxPSUkpfuuZFosbzSsv" + "a9b844f" // tool use id, agent id
	tests := map[string]struct {
		state conversation.State
		turn  int

		wantErr       error
		wantTurn      int
		wantMessages  []string // ids; nil: only the count below
		wantCount     int
		wantSubagents []string // tool use id and agent id of each
		wantRecords   []string // after ids
	}{
		"latest complete turn: before the one waiting for a tool": {
			state: cutState(), wantTurn: 2, wantMessages: []string{"u1", "a1", "r1", "u2", "a2", "r2"},
			wantSubagents: []string{"c2", "free"}, wantRecords: []string{"", "a1", "r2", "s9"},
		},
		"explicit turn": {
			state: cutState(), turn: 1, wantTurn: 1, wantMessages: []string{"u1", "a1", "r1"},
			wantSubagents: []string{"c2", "free"}, wantRecords: []string{"", "a1", "s9"},
		},
		"explicit complete turn before an incomplete one": {
			state: cutState(), turn: 2, wantTurn: 2, wantMessages: []string{"u1", "a1", "r1", "u2", "a2", "r2"},
			wantSubagents: []string{"c2", "free"}, wantRecords: []string{"", "a1", "r2", "s9"},
		},
		"explicit incomplete turn": {state: cutState(), turn: 3, wantErr: ErrTurnNotFound},
		"turn beyond the end":      {state: cutState(), turn: 4, wantErr: ErrTurnNotFound},
		"nothing waits: the whole state, with a trailing prompt": {
			state: withoutLast(cutState(), 1), wantTurn: 2, wantMessages: []string{"u1", "a1", "r1", "u2", "a2", "r2", "u3"},
			wantSubagents: []string{"c2", "free"}, wantRecords: []string{"", "a1", "r2", "s9"},
		},
		"the first turn waits: nothing complete yet": {
			state: withoutLast(cutState(), 6), wantMessages: []string{},
			wantSubagents: []string{"free"}, wantRecords: []string{"", "s9"},
		},
		"empty": {state: conversation.NewState("e"), wantMessages: []string{}},
		"fixture: latest": {
			state: fixture, wantTurn: 3, wantCount: 8, wantSubagents: []string{fixtureSubagent},
		},
		"fixture: turn 2": {state: fixture, turn: 2, wantTurn: 2, wantCount: 7, wantSubagents: []string{fixtureSubagent}},
		// In the fixture the user spoke before the second result of turn 1 came back: no
		// prefix ends turn 1 with both its results.
		"fixture: turn 1 is answered only after turn 2's prompt": {state: fixture, turn: 1, wantErr: ErrTurnNotFound},
		"fixture: latest, while turn 2 waits for its tool": {
			state: withoutLast(fixture, 2), wantTurn: 1, wantCount: 5, wantSubagents: []string{fixtureSubagent},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := tc.state
			inMessages := slices.Clone(in.Messages)
			got, turn, err := Cut(&in, tc.turn)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, m := range got.Messages {
				ids = append(ids, m.ID)
			}
			if turn != tc.wantTurn {
				t.Errorf("cut at turn %d, want %d", turn, tc.wantTurn)
			}
			if tc.wantMessages != nil && !slices.Equal(ids, tc.wantMessages) {
				t.Errorf("messages %v, want %v", ids, tc.wantMessages)
			}
			if tc.wantMessages == nil && len(ids) != tc.wantCount {
				t.Errorf("%d messages, want %d", len(ids), tc.wantCount)
			}
			if unanswered, _ := conversation.ToolPairing(got.Messages); len(unanswered) > 0 {
				t.Errorf("the cut leaves tool calls without a result: %v", unanswered)
			}
			var subs []string
			for _, s := range got.Subagents {
				subs = append(subs, s.ToolUseID+s.AgentID)
			}
			if !slices.Equal(subs, tc.wantSubagents) {
				t.Errorf("subagents %v, want %v", subs, tc.wantSubagents)
			}
			if tc.wantRecords != nil {
				var after []string
				for _, r := range got.Records {
					after = append(after, r.AfterID)
				}
				if !slices.Equal(after, tc.wantRecords) {
					t.Errorf("records after %v, want %v", after, tc.wantRecords)
				}
			}
			if len(got.Adapters) != len(in.Adapters) {
				t.Errorf("%d adapter states, want all %d", len(got.Adapters), len(in.Adapters))
			}
			// The cut's slices are its own.
			if len(got.Messages) > 0 {
				got.Messages[0].ID = "changed"
				_ = append(got.Messages[:1], conversation.Message{ID: "grown"})
			}
			if len(got.Adapters) > 0 {
				got.Adapters[0] = nil
			}
			if !slices.EqualFunc(in.Messages, inMessages, func(a, b conversation.Message) bool { return a.ID == b.ID }) ||
				(len(in.Adapters) > 0 && in.Adapters[0] == nil) {
				t.Error("changing the cut changed the state it was cut from")
			}
		})
	}
}

// TokensOf a cut is what the counter says of it, from the counts the view already made.
func TestTokensOfCut(t *testing.T) {
	s := cutState()
	h := newHistory(t)
	appendAll(t, h, stateRecords(t, &s, "")...)
	counter := newCounter(t, "cl100k_base")
	v := fold(t, counter, readAll(t, h))
	for turn := range 3 {
		cut, _, err := Cut(&v.State, turn)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v.TokensOf(&cut), counter.CountState(&cut); got != want {
			t.Errorf("turn %d: TokensOf %d, CountState %d", turn, got, want)
		}
	}
}
