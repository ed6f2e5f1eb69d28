package compact

import (
	"github.com/parley-dev/parley/pkg/conversation"
)

// ClearedToolResult is the text that replaces a cleared tool output.
const ClearedToolResult = "[tool output cleared to save context]"

// ClearToolResults replaces the outputs of old tool calls with ClearedToolResult, oldest
// first, until the state fits Policy.Budget. A cleared result keeps its ToolUseID and IsError,
// so every call still has its answer; the message is flagged FlagToolResultsCleared. The last
// KeepRecentMessages messages are left alone, and so is a result already shorter than the
// placeholder. The tool calls themselves (their arguments) are kept.
func ClearToolResults(s *conversation.State, p Policy) (*conversation.State, Record, error) {
	if s == nil {
		return nil, Record{}, errNilState
	}
	if err := p.validate(false); err != nil {
		return nil, Record{}, err
	}
	_, costs, before := stateCosts(&p, s)
	if before <= p.Budget {
		return unchanged(s, StrategyClearToolResults, before)
	}
	var messages []conversation.Message // copied on the first edit
	after, edited := before, 0
	for i := range recentStart(len(s.Messages), p.KeepRecentMessages) {
		if after <= p.Budget {
			break
		}
		m := &s.Messages[i]
		if !m.HasToolResult() {
			continue
		}
		cleared, changed := clearResults(m)
		if !changed {
			continue
		}
		newCost := p.Counter.CountMessage(&cleared)
		if newCost >= costs[i] {
			continue
		}
		if messages == nil {
			messages = append([]conversation.Message(nil), s.Messages...)
		}
		messages[i] = cleared
		after += newCost - costs[i]
		edited++
	}
	if edited == 0 {
		return unchanged(s, StrategyClearToolResults, before)
	}
	out := withMessages(s, messages)
	return out, Record{Strategy: StrategyClearToolResults, TokensBefore: before, TokensAfter: after, MessagesFolded: edited}, nil
}

// clearResults returns a copy of m whose tool results hold the placeholder, and whether any
// result changed. Other blocks (text a provider put after the results) are kept.
func clearResults(m *conversation.Message) (conversation.Message, bool) {
	out := *m
	out.Blocks = make([]conversation.Block, len(m.Blocks))
	changed := false
	for i, b := range m.Blocks {
		if b.Type == conversation.BlockToolResult && !isCleared(&b) {
			b = conversation.Block{
				Type: conversation.BlockToolResult, ID: b.ID, ToolUseID: b.ToolUseID, IsError: b.IsError,
				Text: ClearedToolResult, Extra: b.Extra,
			}
			changed = true
		}
		out.Blocks[i] = b
	}
	if changed {
		out.Flags |= conversation.FlagToolResultsCleared
		out.Usage = conversation.Usage{} // what the provider reported no longer describes it
	}
	return out, changed
}

func isCleared(b *conversation.Block) bool {
	return b.Text == ClearedToolResult && len(b.Content) == 0
}
