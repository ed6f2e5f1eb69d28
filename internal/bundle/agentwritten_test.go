package bundle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/bundle"
	"github.com/parley-dev/parley/internal/journal"
	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/pkg/history"
)

// An agent names its transcripts (POST /transcript's subpath), and the Claude directory files a
// subagent's transcript by the id its subpath ends in. A subpath the Session API accepts whose
// id cannot name a file leaves that subagent out of the Claude directory; the bundle is still
// built, so the conversation's next agent pod starts.
func TestSubagentIDsTheAgentWroteNeverStopTheBundle(t *testing.T) {
	const sid = "11111111-2222-4333-8444-555555555555"
	counter, err := tokens.New(tokens.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"subagents/agent-a.b", "subagents/agent-" + strings.Repeat("f", 65), "subagents/agent-x y"} {
		t.Run(sub, func(t *testing.T) {
			v := journal.NewView(sid, counter)
			seq := uint64(0)
			for _, subpath := range []string{"", sub} {
				line := `{"type":"user","uuid":"u` + subpath + `","sessionId":"` + sid +
					`","timestamp":"2026-11-23T10:00:00Z","message":{"role":"user","content":"hi"}}`
				recs, err := journal.TranscriptRecords(subpath, "b", []jsontext.Value{jsontext.Value(line)}, time.Unix(0, 0))
				if err != nil {
					t.Fatalf("the Session API's check: %v", err)
				}
				for _, r := range recs {
					seq++
					if err := v.Apply(history.Entry{Seq: seq, ID: r.ID, Data: r.Data}); err != nil {
						t.Fatal(err)
					}
				}
			}
			st := v.State
			files, err := bundle.Build(bundle.Input{
				State: &st, SessionID: sid, Conversation: "c", Namespace: "n",
				Adapter: parleyv1alpha1.AdapterClaudeAgentSDK, WorkingDir: "/workspace",
			})
			if err != nil {
				t.Fatalf("no bundle, so no next agent pod: %v", err)
			}
			for _, p := range files.Paths() {
				if strings.Contains(p, "subagents/") {
					t.Errorf("a transcript file for a subagent id that cannot name one: %s", p)
				}
			}
			if _, ok := files["claude/projects/-workspace/"+sid+".jsonl"]; !ok {
				t.Errorf("no main transcript in %v", files.Paths())
			}
		})
	}
}
