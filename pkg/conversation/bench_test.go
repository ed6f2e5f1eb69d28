package conversation

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/parley-dev/parley/test/fixtures"
	"github.com/parley-dev/parley/test/support/benchcpu"
)

// bigClaudeTranscript repeats the fixture's lines, renumbering uuids, message ids and tool ids,
// until the transcript holds at least size bytes.
func bigClaudeTranscript(tb testing.TB, size int) []byte {
	tb.Helper()
	base := fixtures.Read(tb, fixtures.ClaudeMain)
	ids := [][]byte{}
	for _, re := range []string{`"uuid":"`, `"parentUuid":"`, `"id":"msg_`, `"id":"toolu_`, `"tool_use_id":"toolu_`} {
		for rest := base; ; {
			i := bytes.Index(rest, []byte(re))
			if i < 0 {
				break
			}
			rest = rest[i+len(re):]
			j := bytes.IndexByte(rest, '"')
			ids = append(ids, rest[:j])
			rest = rest[j:]
		}
	}
	var out bytes.Buffer
	for copyNo := 0; out.Len() < size; copyNo++ {
		chunk := base
		for _, id := range ids {
			chunk = bytes.ReplaceAll(chunk, id, fmt.Appendf(nil, "%s-%d", id, copyNo))
		}
		out.Write(chunk)
	}
	return out.Bytes()
}

func bigState(tb testing.TB, size int) State {
	tb.Helper()
	s, err := ImportClaudeJSONL(bigClaudeTranscript(tb, size))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// benchThroughput runs op once per iteration over an input of size bytes and reports wall-clock
// MB/s, allocations and MB per CPU second (see internal/benchcpu).
func benchThroughput(b *testing.B, size int, op func() error) {
	b.Helper()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b, float64(size)/1e6, "MB/cpu-s")
}

func BenchmarkImportClaudeJSONL(b *testing.B) {
	data := bigClaudeTranscript(b, 10<<20)
	benchThroughput(b, len(data), func() error {
		_, err := ImportClaudeJSONL(data)
		return err
	})
}

func BenchmarkSnapshotMarshal(b *testing.B) {
	s := bigState(b, 10<<20)
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	benchThroughput(b, len(data), func() error {
		_, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: time.Now()})
		return err
	})
}

func BenchmarkSnapshotUnmarshal(b *testing.B) {
	s := bigState(b, 10<<20)
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	benchThroughput(b, len(data), func() error {
		_, err := UnmarshalSnapshot(data)
		return err
	})
}

// Method-less mirrors of State, Message and Subagent (whose JSON methods delegate to
// go-json-experiment/json) so the baseline below really runs encoding/json.
type (
	v1State struct {
		SchemaVersion string       `json:"schemaVersion"`
		SessionID     string       `json:"sessionId,omitzero"`
		CWD           string       `json:"cwd,omitzero"`
		System        *v1Message   `json:"system,omitzero"`
		Messages      []v1Message  `json:"messages,omitzero"`
		Subagents     []v1Subagent `json:"subagents,omitzero"`
		Records       []RawRecord  `json:"records,omitzero"`
	}
	v1Message struct {
		ID        string    `json:"id"`
		Seq       int64     `json:"seq,omitzero"`
		ParentID  string    `json:"parentId,omitzero"`
		Role      Role      `json:"role"`
		Blocks    []Block   `json:"blocks,omitzero"`
		Name      string    `json:"name,omitzero"`
		Model     string    `json:"model,omitzero"`
		Usage     Usage     `json:"usage,omitzero"`
		Turn      int       `json:"turn,omitzero"`
		CreatedAt time.Time `json:"createdAt,omitzero"`
		Flags     Flags     `json:"flags,omitzero"`
		Source    Source    `json:"source,omitzero"`
	}
	v1Subagent struct {
		ToolUseID   string         `json:"toolUseId,omitzero"`
		AgentID     string         `json:"agentId,omitzero"`
		Status      SubagentStatus `json:"status,omitzero"`
		Description string         `json:"description,omitzero"`
		Messages    []v1Message    `json:"messages,omitzero"`
		Subagents   []v1Subagent   `json:"subagents,omitzero"`
	}
)

// BenchmarkSnapshotUnmarshalStdlibBaseline decodes the same snapshot's payload with
// encoding/json (v1) alone, without the digest check: the codec Parley did not choose.
func BenchmarkSnapshotUnmarshalStdlibBaseline(b *testing.B) {
	s := bigState(b, 10<<20)
	s.Adapters = nil // v1 cannot decode the interface slice; the fixture-based state has none
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	benchThroughput(b, len(data), func() error {
		var doc struct {
			Payload v1State `json:"payload"`
		}
		return stdjson.Unmarshal(data, &doc)
	})
}

// BenchmarkReduceDelta streams text deltas into the last message of a conversation of about
// 1,000 messages: the reducer's hot path while an agent streams.
func BenchmarkReduceDelta(b *testing.B) {
	s := bigState(b, 1<<20)
	s.Messages = s.Messages[:min(len(s.Messages), 1000)]
	last := s.Messages[len(s.Messages)-1]
	s, err := Reduce(s, Event{Type: EventBlockUpsert, Message: &Message{ID: last.ID}, Block: &Block{Type: BlockText, ID: "streaming", Status: BlockPending}})
	if err != nil {
		b.Fatal(err)
	}
	ev := Event{Type: EventBlockDelta, MessageID: last.ID, BlockID: "streaming", Delta: "token "}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Reduce(s, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(s.Messages)), "messages")
}

// BenchmarkReduceReplay rebuilds a conversation of about 1,000 messages from its events.
func BenchmarkReduceReplay(b *testing.B) {
	s := bigState(b, 1<<20)
	s.Messages = s.Messages[:min(len(s.Messages), 1000)]
	events := Events(&s)
	shell := Shell(&s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReduceAll(shell, events); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(events)), "events")
}

// BenchmarkApplyDelta is BenchmarkReduceDelta on a state the caller owns (State.Apply).
func BenchmarkApplyDelta(b *testing.B) {
	s := bigState(b, 1<<20)
	s.Messages = s.Messages[:min(len(s.Messages), 1000)]
	last := s.Messages[len(s.Messages)-1]
	if err := s.Apply(Event{Type: EventBlockUpsert, Message: &Message{ID: last.ID}, Block: &Block{Type: BlockText, ID: "streaming", Status: BlockPending}}); err != nil {
		b.Fatal(err)
	}
	ev := Event{Type: EventBlockDelta, MessageID: last.ID, BlockID: "streaming", Delta: "token "}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 { // keep the streamed text from growing without bound
			s.Messages[len(s.Messages)-1].Blocks[len(last.Blocks)].Text = ""
		}
		if err := s.Apply(ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkApplyReplay is BenchmarkReduceReplay with State.Apply.
func BenchmarkApplyReplay(b *testing.B) {
	s := bigState(b, 1<<20)
	s.Messages = s.Messages[:min(len(s.Messages), 1000)]
	events := Events(&s)
	b.ReportAllocs()
	for b.Loop() {
		owned := Shell(&s)
		for i := range events {
			if err := owned.Apply(events[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
}
