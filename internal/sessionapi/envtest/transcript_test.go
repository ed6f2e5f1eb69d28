package envtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/fixtures"
)

// transcriptCall sends a JSON request and decodes a 2xx answer into out; it returns the status.
func transcriptCall(method, path, token string, body any, out any) int {
	var payload []byte
	if body != nil {
		var err error
		payload, err = json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
	}
	req, err := http.NewRequestWithContext(ctx, method, sessionURL+path, bytes.NewReader(payload))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 2 && out != nil {
		Expect(json.NewDecoder(resp.Body).Decode(out)).To(Succeed())
	}
	return resp.StatusCode
}

// The transcript endpoints without node: what the TypeScript store relies on, tested from Go.
var _ = Describe("Session API transcripts", func() {
	It("stores an agent's transcript lines once by uuid, pages and lists them, refuses bad lines, and shows them as messages", func() {
		ns := env.AgentNamespace()
		mainData, err := os.ReadFile(fixtures.Path(fixtures.ClaudeMain))
		Expect(err).NotTo(HaveOccurred())
		fixture, err := conversation.ImportClaudeSession(mainData)
		Expect(err).NotTo(HaveOccurred())
		conv := env.ConversationWithSession(ns, "lines", fixture.SessionID)
		token := env.AgentToken(ns, "agent", env.AgentPodOf(conv))
		base := wire.ConversationPath(ns, conv.Name)
		var lines []json.RawMessage
		for l := range bytes.SplitSeq(bytes.TrimSpace(mainData), []byte{'\n'}) {
			lines = append(lines, json.RawMessage(l))
		}

		var first, again, rest wire.TranscriptAppendResponse
		Expect(transcriptCall(http.MethodPost, base+"/transcript", token, wire.TranscriptAppendRequest{Batch: "b1", Entries: lines[:6]}, &first)).To(Equal(200))
		Expect(transcriptCall(http.MethodPost, base+"/transcript", token, wire.TranscriptAppendRequest{Batch: "b1", Entries: lines[:6]}, &again)).To(Equal(200))
		Expect(again.Sequences).To(Equal(first.Sequences), "a retried batch is stored once")
		Expect(transcriptCall(http.MethodPost, base+"/transcript", token, wire.TranscriptAppendRequest{Batch: "b2", Entries: lines[6:]}, &rest)).To(Equal(200))

		// Bad lines and subpaths: refused whole.
		var head wire.Conversation
		Expect(transcriptCall(http.MethodGet, base, token, nil, &head)).To(Equal(200))
		status, p, _ := rawCall(http.MethodPost, base+"/transcript", token, []byte(`{"entries":[{"type":"user","uuid":"fine"},{"uuid":"no-type"}]}`))
		Expect(status).To(Equal(422))
		Expect(p.Type).To(Equal(wire.ProblemInvalid))
		status, _, _ = rawCall(http.MethodPost, base+"/transcript", token, []byte(`{"subpath":"../x","entries":[{"type":"user"}]}`))
		Expect(status).To(Equal(422))
		status, _, _ = rawCall(http.MethodGet, base+"/transcript?subpath=..%2Fx", token, nil)
		Expect(status).To(Equal(400))
		var after wire.Conversation
		Expect(transcriptCall(http.MethodGet, base, token, nil, &after)).To(Equal(200))
		Expect(after.Sequence).To(Equal(head.Sequence), "nothing of a refused batch is stored")

		// Pages of 5 lines give back every line as sent.
		var got []json.RawMessage
		for offset := 0; ; {
			var page wire.TranscriptPage
			Expect(transcriptCall(http.MethodGet, fmt.Sprintf("%s/transcript?offset=%d&limit=5", base, offset), token, nil, &page)).To(Equal(200))
			Expect(page.Exists).To(BeTrue())
			got = append(got, page.Entries...)
			if page.Next == 0 {
				break
			}
			offset = page.Next
		}
		Expect(got).To(HaveLen(len(lines)))
		for i := range lines {
			Expect(got[i]).To(MatchJSON(lines[i]), "line %d", i)
		}
		var none wire.TranscriptPage
		Expect(transcriptCall(http.MethodGet, base+"/transcript?subpath=subagents%2Fagent-none", token, nil, &none)).To(Equal(200))
		Expect(none.Exists).To(BeFalse())
		var index wire.TranscriptIndex
		Expect(transcriptCall(http.MethodGet, base+"/transcripts", token, nil, &index)).To(Equal(200))
		Expect(index.SessionID).To(Equal(fixture.SessionID))
		Expect(index.Transcripts).To(HaveLen(1))
		Expect(index.Transcripts[0].Subpath).To(BeEmpty())
		Expect(index.Transcripts[0].Modified).NotTo(BeNil())

		// The lines are the conversation's messages.
		var msgs wire.MessagesPage
		Expect(transcriptCall(http.MethodGet, base+"/messages", token, nil, &msgs)).To(Equal(200))
		ids := make([]string, 0, len(msgs.Messages))
		for _, m := range msgs.Messages {
			ids = append(ids, m.ID)
		}
		want := make([]string, 0, len(fixture.Messages))
		for _, m := range fixture.Messages {
			want = append(want, m.ID)
		}
		Expect(ids).To(Equal(want))
	})
})
