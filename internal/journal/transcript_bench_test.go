package journal

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation/tokens"
	"github.com/parley-dev/parley/test/fixtures"
	"github.com/parley-dev/parley/test/support/benchcpu"
)

// BenchmarkTranscriptRefresh measures what a Session API read or a reconcile pays after an
// agent mirrored a few more lines: a Refresh that reads them and rebuilds the messages from
// the whole transcript (the Claude importer reads whole files). The transcript is the
// fixture's lines repeated with fresh uuids, of about 1 and 10 MB; the counter's cache spares
// the token counts of messages that did not change.
func BenchmarkTranscriptRefresh(b *testing.B) {
	base := fileLines(fixtures.Read(b, fixtures.ClaudeMain))
	for _, size := range []int{1 << 20, 10 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			h := newHistory(b)
			v := NewView("session", newCounter(b, tokens.Cl100kBase))
			total, copyNo := 0, 0
			batch := func() []jsontext.Value {
				out := make([]jsontext.Value, 0, len(base))
				for _, l := range base {
					l = bytes.ReplaceAll(l, []byte(`"uuid":"`), fmt.Appendf(nil, `"uuid":"%d-`, copyNo))
					l = bytes.ReplaceAll(l, []byte(`"parentUuid":"`), fmt.Appendf(nil, `"parentUuid":"%d-`, copyNo))
					l = bytes.ReplaceAll(l, []byte(`"id":"msg_`), fmt.Appendf(nil, `"id":"msg_%d-`, copyNo))
					out = append(out, l)
					total += len(l)
				}
				copyNo++
				return out
			}
			for total < size {
				appendAll(b, h, transcriptRecords(b, "", fmt.Sprint(copyNo), batch()...)...)
			}
			if err := v.Refresh(b.Context(), h); err != nil {
				b.Fatal(err)
			}
			cpu := benchcpu.Start()
			for b.Loop() {
				b.StopTimer()
				appendAll(b, h, transcriptRecords(b, "", fmt.Sprint(copyNo), batch()[:3]...)...)
				b.StartTimer()
				if err := v.Refresh(b.Context(), h); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time includes the three lines' append (small beside the rebuild).
			cpu.Report(b, float64(total)/1e6, "MB/cpu-s")
			b.ReportMetric(float64(total)/1e6, "transcript-MB")
			b.ReportMetric(float64(v.Messages()), "messages")
		})
	}
}
