package tokens

import (
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/test/fixtures"
)

// A real Claude Code transcript records, per assistant message, the usage of the first
// streamed chunk (output_tokens 1 or 3 for answers of a hundred tokens and more) and,
// sometimes, the final one. The counter must use the latter and ignore the former.
func TestReportedUsageOnARealTranscript(t *testing.T) {
	s, err := conversation.ImportClaudeJSONL(fixtures.Read(t, fixtures.ClaudeMain))
	if err != nil {
		t.Fatal(err)
	}
	text, err := NewTextCounter(Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	withUsage := NewMessageCounter(text)
	ownCount := NewMessageCounter(text, WithReportedUsage(false))
	used, ignored := 0, 0
	for i := range s.Messages {
		m := &s.Messages[i]
		got, own := withUsage.CountMessage(m), ownCount.CountMessage(m)
		switch {
		case m.Role != conversation.RoleAssistant || m.Usage.Output == 0:
			if got != own {
				t.Errorf("%s (%s, no output usage): %d, want our count %d", m.ID, m.Role, got, own)
			}
		case got == MessageOverhead+int(m.Usage.Output):
			used++
			if m.Usage.Output < int64(own)/2 {
				t.Errorf("%s: used a partial report of %d tokens for content we count at %d", m.ID, m.Usage.Output, own)
			}
		case got == own:
			ignored++
		default:
			t.Errorf("%s: %d is neither the report (%d) nor our count (%d)", m.ID, got, m.Usage.Output, own)
		}
	}
	if used == 0 || ignored == 0 {
		t.Errorf("reports used %d, ignored %d: the fixture has both kinds", used, ignored)
	}
}
