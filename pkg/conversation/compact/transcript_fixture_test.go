package compact

import (
	"testing"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/test/fixtures"
)

// checkConvertible makes sure a compacted state still renders for each provider and exports
// as a Claude transcript (the stand-ins are mid-conversation system messages).
func checkConvertible(t *testing.T, strategy Strategy, s *conversation.State) {
	t.Helper()
	if _, err := conversation.ToOpenAI(s); err != nil {
		t.Fatalf("%s: ToOpenAI: %v", strategy, err)
	}
	if _, err := conversation.ToAnthropic(s); err != nil {
		t.Fatalf("%s: ToAnthropic: %v", strategy, err)
	}
	if _, err := conversation.ExportClaude(s, conversation.ClaudeExportOptions{}); err != nil {
		t.Fatalf("%s: ExportClaude: %v", strategy, err)
	}
}

// The strategies keep their promises on real transcripts too: a Claude Code session (where
// a user message sits between the results of one assistant message's calls) and an
// OpenCode export, at budgets from a tenth of the state to all of it; and what they return
// still converts to the OpenAI and Anthropic formats and exports to Claude JSONL.
func TestStrategiesOnRealTranscripts(t *testing.T) {
	imports := map[string]func([]byte) (conversation.State, error){
		fixtures.ClaudeMain: conversation.ImportClaudeJSONL,
		fixtures.OpenCode:   conversation.ImportOpenCode,
	}
	counter, err := tokens.New(tokens.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	for path, importer := range imports {
		s, err := importer(fixtures.Read(t, path))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(s.Messages) < 5 {
			t.Fatalf("%s: only %d messages", path, len(s.Messages))
		}
		total := counter.CountState(&s)
		folded := 0
		for _, share := range []int{10, 30, 50, 70, 90, 100} {
			for keep := range 4 {
				p := Policy{Budget: total * share / 100, KeepRecentMessages: keep, Counter: counter, Summarizer: fixedSummary("short summary"), SummaryMaxTokens: 20}
				for _, strategy := range []Strategy{StrategySlidingWindow, StrategyClearToolResults, StrategySummarize} {
					checkStrategy(t, strategy, &s, p)
					out, rec, _ := Compact(t.Context(), strategy, &s, p)
					if rec.MessagesFolded > 0 {
						folded++
					}
					checkConvertible(t, strategy, out)
				}
			}
		}
		if folded == 0 {
			t.Errorf("%s: no strategy compacted anything", path)
		}
	}
}
