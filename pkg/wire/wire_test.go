package wire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestConversationPath(t *testing.T) {
	if got := ConversationPath("team-a", "conv-1"); got != "/v1/namespaces/team-a/conversations/conv-1" {
		t.Errorf("ConversationPath = %q", got)
	}
}

func TestProblemIsAnErrorSayingWhatWentWrong(t *testing.T) {
	var err error = &Problem{Type: ProblemConflict, Title: "Conflict", Status: 409, Detail: "message u1 exists with other content"}
	if got := err.Error(); got != "Conflict: message u1 exists with other content" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&Problem{Title: "Forbidden", Status: 403}).Error(); got != "Forbidden" {
		t.Errorf("Error() without a detail = %q", got)
	}
	var p *Problem
	if !errors.As(err, &p) || p.Status != 409 {
		t.Errorf("errors.As found %+v", p)
	}
}

// The bodies are the API's wire format (docs/session-api.md): the field names and what is left
// out when empty are what other clients send and read.
func TestBodiesOnTheWire(t *testing.T) {
	turn := int64(2)
	for name, tc := range map[string]struct {
		body any
		want string
	}{
		"a reset without an id or keepSystem": {ResetRequest{}, `{}`},
		"a reset with both":                   {ResetRequest{ID: "r1", KeepSystem: true}, `{"id":"r1","keepSystem":true}`},
		"a reset's answer keeps cleared 0":    {ResetResponse{}, `{"cleared":0}`},
		"a checkpoint of the latest turn":     {CheckpointRequest{}, `{}`},
		"a checkpoint of a turn":              {CheckpointRequest{Name: "k", Turn: &turn}, `{"name":"k","turn":2}`},
		"the last page has no next":           {MessagesPage{Epoch: 1}, `{"epoch":1,"messages":null}`},
		"a problem without a detail":          {Problem{Type: ProblemNotFound, Title: "Not Found", Status: 404}, `{"type":"https://parley.dev/problems/not-found","title":"Not Found","status":404}`},
		"a transcript batch":                  {TranscriptAppendRequest{Entries: []json.RawMessage{json.RawMessage(`{"type":"user"}`)}}, `{"entries":[{"type":"user"}]}`},
		"a missing transcript":                {TranscriptPage{Epoch: 1}, `{"epoch":1,"exists":false,"entries":null}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}
