package conversation

import (
	"errors"
	"testing"

	"github.com/parley-dev/parley/test/fixtures"
)

func TestValidateFixtures(t *testing.T) {
	openCode, err := ImportOpenCode(fixtures.Read(t, fixtures.OpenCode))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]State{"claude": importFixtureSession(t), "opencode": openCode} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if unanswered, orphans := ToolPairing(s.Messages); len(unanswered)+len(orphans) != 0 {
			t.Errorf("%s: unanswered %v, orphans %v", name, unanswered, orphans)
		}
	}
}

func TestValidateFindsViolations(t *testing.T) {
	ok := func() State {
		s := NewState("s")
		s.Messages = []Message{
			{ID: "a", Seq: 1, Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: "hi"}}},
			{ID: "b", Seq: 2, Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, ToolUseID: "t"}}},
			{ID: "c", Seq: 3, Role: RoleTool, Blocks: []Block{{Type: BlockToolResult, ToolUseID: "t"}}},
		}
		return s
	}
	cases := map[string]func(*State){
		"no version":        func(s *State) { s.SchemaVersion = "" },
		"system role":       func(s *State) { s.System = &Message{ID: "x", Role: RoleUser} },
		"empty id":          func(s *State) { s.Messages[1].ID = "" },
		"duplicate id":      func(s *State) { s.Messages[2].ID = "a" },
		"bad role":          func(s *State) { s.Messages[0].Role = "robot" },
		"seq":               func(s *State) { s.Messages[2].Seq = 2 },
		"result in user":    func(s *State) { s.Messages[2].Role = RoleUser },
		"untyped block":     func(s *State) { s.Messages[0].Blocks[0].Type = "" },
		"subagent mistakes": func(s *State) { s.Subagents = []Subagent{{ToolUseID: "t", Messages: []Message{{Role: RoleUser}}}} },
	}
	base := ok()
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, breakIt := range cases {
		s := ok()
		breakIt(&s)
		if err := s.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	unanswered, orphans := ToolPairing([]Message{
		{Role: RoleTool, Blocks: []Block{{Type: BlockToolResult, ToolUseID: "early"}}},
		{Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, ToolUseID: "early"}, {Type: BlockToolUse, ToolUseID: "open"}}},
	})
	if len(unanswered) != 1 || unanswered[0] != "open" || len(orphans) != 1 || orphans[0] != "early" {
		t.Errorf("unanswered %v orphans %v", unanswered, orphans)
	}
}

func TestAppendMessage(t *testing.T) {
	s := NewState("s")
	user := Message{ID: "u1", Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: "hi"}}}
	call := Message{ID: "a1", Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, ToolUseID: "t", ToolName: "f", Input: []byte(`{}`)}}}
	result := Message{ID: "r1", Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: "note"}, {Type: BlockToolResult, ToolUseID: "t", Text: "42"}}}
	for _, m := range []Message{user, call, result} {
		added, err := s.AppendMessage(m)
		if err != nil || !added {
			t.Fatalf("%s: %v %v", m.ID, added, err)
		}
	}
	if r := s.Messages[2]; r.Role != RoleTool || r.Blocks[0].Type != BlockToolResult || r.Seq != 3 || r.Turn != 1 {
		t.Errorf("result %+v", r)
	}
	// A retried append is a no-op; the same id with other content is a conflict.
	added, err := s.AppendMessage(result)
	if err != nil || added || len(s.Messages) != 3 {
		t.Errorf("retry: %v %v (%d messages)", added, err, len(s.Messages))
	}
	changed := user
	changed.Blocks = []Block{{Type: BlockText, Text: "bye"}}
	if _, err := s.AppendMessage(changed); !errors.Is(err, ErrConflict) {
		t.Errorf("conflict: %v", err)
	}
	if _, err := s.AppendMessage(Message{ID: "old", Role: RoleUser, Seq: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("decreasing seq: %v", err)
	}
	if _, err := s.AppendMessage(Message{Role: RoleUser}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no id: %v", err)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
}
