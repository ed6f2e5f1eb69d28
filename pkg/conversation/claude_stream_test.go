package conversation

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-dev/parley/test/fixtures"
)

// FuzzClaudeStream feeds SDK output, one message per line, to one ClaudeStream: every line
// gives valid events or ErrEvent; the reducer takes them or refuses with ErrEvent (a line
// may clash with an earlier one, e.g. an assistant message reusing a tool message's id); and
// the state built keeps the model's invariants.
func FuzzClaudeStream(f *testing.F) {
	lines := nonEmptyLines(fixtures.Read(f, fixtures.ClaudeSDKMessages))
	// A prompt; a streamed message start, block start and delta; a whole assistant message;
	// the result (see compactSeed: small seeds keep a short fuzz run useful).
	for _, r := range [][2]int{{0, 1}, {6, 9}, {21, 22}, {248, 249}} {
		f.Add(compactSeed(f, bytes.Join(lines[r[0]:r[1]], []byte("\n")), 3))
	}
	f.Add([]byte(`{"type":"assistant","uuid":"u1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t","name":"Task","input":{"description":"d"}}]}}
{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"tool_use_result":{"agentId":"a","status":"completed"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		stream := NewClaudeStream()
		s := NewState("fuzz")
		for _, line := range bytes.Split(data, []byte("\n")) {
			events, err := stream.Events(line)
			if err != nil {
				if !errors.Is(err, ErrEvent) {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			for _, e := range events {
				if err := e.Validate(); err != nil {
					t.Fatalf("stream emitted an invalid event: %v", err)
				}
				if err := s.Apply(e); err != nil && !errors.Is(err, ErrEvent) {
					t.Fatalf("untyped reducer error %v", err)
				}
			}
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("streamed state breaks an invariant: %v", err)
		}
	})
}

// Lines the fuzzer found building states the model forbids: a block without a type, a
// tool result in an assistant message, a Task call without an id (a subagent event naming
// no thread).
func TestClaudeStreamMalformedLines(t *testing.T) {
	for _, line := range []string{
		`{"type":"assistant","uuid":"u","message":{"content":[{}]}}`,
		`{"type":"assistant","uuid":"u","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_result"}}}`,
	} {
		stream := NewClaudeStream()
		if _, err := stream.Events([]byte(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m"}}}`)); err != nil {
			t.Fatal(err)
		}
		if events, err := stream.Events([]byte(line)); !errors.Is(err, ErrEvent) {
			t.Errorf("%s: %d events, err %v; want ErrEvent", line, len(events), err)
		}
	}
	events, err := NewClaudeStream().Events([]byte(`{"type":"assistant","uuid":"u","message":{"content":[{"type":"tool_use","name":"Task"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if err := e.Validate(); err != nil {
			t.Errorf("Task call without an id: %v", err)
		}
	}
}
