package journal

import (
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// The agent waits for a person after a final answer, or after it reported session:idle; never
// while it calls a tool, streams, or has not answered the person's last message.
func TestAwaitsPerson(t *testing.T) {
	text := func(id string, role conversation.Role, status conversation.BlockStatus) history.Record {
		m := conversation.Message{ID: id, Role: role, Blocks: []conversation.Block{{Type: conversation.BlockText, Text: id, ID: id + "-b", Status: status}}}
		r, err := MessageRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	call := func(id string) history.Record {
		m := conversation.Message{ID: id, Role: conversation.RoleAssistant, Blocks: []conversation.Block{
			{Type: conversation.BlockText, Text: "reading"},
			{Type: conversation.BlockToolUse, ToolUseID: "t1", ToolName: "read", Input: []byte(`{}`)},
		}}
		r, err := MessageRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	idle := func(id string) history.Record {
		r, err := EventRecord(id, &conversation.Event{Type: conversation.EventSessionIdle})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const user, assistant = conversation.RoleUser, conversation.RoleAssistant
	cases := map[string]struct {
		records []history.Record
		want    bool
	}{
		"empty":                           {nil, false},
		"a question unanswered":           {[]history.Record{text("u1", user, "")}, false},
		"a final answer":                  {[]history.Record{text("u1", user, ""), text("a1", assistant, "")}, true},
		"an answer still streaming":       {[]history.Record{text("u1", user, ""), text("a1", assistant, conversation.BlockPending)}, false},
		"a tool call":                     {[]history.Record{text("u1", user, ""), call("a1")}, false},
		"the next question":               {[]history.Record{text("u1", user, ""), text("a1", assistant, ""), text("u2", user, "")}, false},
		"idle after a tool call":          {[]history.Record{text("u1", user, ""), call("a1"), idle("e1")}, true},
		"idle after an unanswered prompt": {[]history.Record{text("u1", user, ""), idle("e1")}, true},
		"a question after idle":           {[]history.Record{text("u1", user, ""), idle("e1"), text("u2", user, "")}, false},
		"idle ends the streaming":         {[]history.Record{text("u1", user, ""), text("a1", assistant, conversation.BlockPending), idle("e1")}, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHistory(t)
			if len(c.records) > 0 {
				appendAll(t, h, c.records...)
			}
			v := NewView("session", nil)
			if err := v.Refresh(t.Context(), h); err != nil {
				t.Fatal(err)
			}
			if got := v.AwaitsPerson(); got != c.want {
				t.Errorf("AwaitsPerson = %v, want %v (messages %+v, idle at %d)", got, c.want, v.State.Messages, v.IdleSeq)
			}
		})
	}
}
