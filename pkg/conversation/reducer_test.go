package conversation

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/test/fixtures"
)

func textBlock(id, text string) *Block { return &Block{Type: BlockText, ID: id, Text: text} }

func upsertEv(thread, msgID string, role Role, b *Block) Event {
	return Event{Type: EventBlockUpsert, ConversationID: thread, Message: &Message{ID: msgID, Role: role}, Block: b}
}

func deltaEv(thread, msgID, blockID, delta string) Event {
	return Event{Type: EventBlockDelta, ConversationID: thread, MessageID: msgID, BlockID: blockID, Delta: delta}
}

func mustReduce(t *testing.T, s State, events ...Event) State {
	t.Helper()
	out, err := ReduceAll(s, events)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReduceBlocks(t *testing.T) {
	s := mustReduce(t, NewState("s"),
		upsertEv("", "m1", RoleUser, textBlock("b1", "hello")),
		upsertEv("", "m2", RoleAssistant, &Block{Type: BlockText, ID: "b2", Status: BlockPending}),
		deltaEv("", "m2", "b2", "Hi"),
		deltaEv("", "m2", "b2", ""),
		deltaEv("", "", "b2", " there"), // empty message id: the last message
		deltaEv("", "m2", "nope", "lost"),
		upsertEv("", "m2", "", &Block{Type: BlockToolUse, ID: "b3", ToolUseID: "t1", ToolName: "Bash", Input: []byte(`{}`)}),
		deltaEv("", "m2", "b3", `{"cmd"`), // non-text block: ignored
		upsertEv("", "m3", RoleUser, &Block{Type: BlockToolResult, ID: "b4", ToolUseID: "t1", Text: "ok"}),
	)
	if len(s.Messages) != 3 {
		t.Fatalf("%d messages", len(s.Messages))
	}
	m2 := s.Messages[1]
	if m2.Blocks[0].Text != "Hi there" || m2.Blocks[0].Status != BlockPending || len(m2.Blocks) != 2 {
		t.Errorf("m2 = %+v", m2.Blocks)
	}
	if string(m2.Blocks[1].Input) != `{}` {
		t.Errorf("delta changed a tool_use: %s", m2.Blocks[1].Input)
	}
	if s.Messages[2].Role != RoleTool {
		t.Errorf("a user message holding a tool_result has role %s, want tool", s.Messages[2].Role)
	}
	if got := []int64{s.Messages[0].Seq, s.Messages[1].Seq, s.Messages[2].Seq}; got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Errorf("seq %v", got)
	}
	if got := []int{s.Messages[0].Turn, s.Messages[1].Turn, s.Messages[2].Turn}; got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Errorf("turns %v", got)
	}

	// Replace semantics: the same block id replaces, it does not merge.
	s = mustReduce(t, s, upsertEv("", "m2", "", textBlock("b2", "rewritten")))
	if s.Messages[1].Blocks[0].Text != "rewritten" || s.Messages[1].Blocks[0].Status != BlockComplete {
		t.Errorf("after replace: %+v", s.Messages[1].Blocks[0])
	}
	// Index addresses a block whose id changed while it streamed.
	zero := 0
	ev := upsertEv("", "m2", "", textBlock("final-id", "final"))
	ev.Index = &zero
	s = mustReduce(t, s, ev)
	if b := s.Messages[1].Blocks[0]; b.ID != "final-id" || b.Text != "final" || len(s.Messages[1].Blocks) != 2 {
		t.Errorf("after index upsert: %+v", s.Messages[1].Blocks)
	}
	// A header-only upsert updates the message without touching blocks.
	s = mustReduce(t, s, Event{Type: EventBlockUpsert, Message: &Message{ID: "m2", Model: "claude", Usage: Usage{Output: 7}}})
	if m := s.Messages[1]; m.Model != "claude" || m.Usage.Output != 7 || len(m.Blocks) != 2 {
		t.Errorf("after header upsert: %+v", m)
	}
}

func TestReduceDeltaBeforeUpsertIsIgnored(t *testing.T) {
	s := NewState("s")
	out := mustReduce(t, s, deltaEv("", "m1", "b1", "early"), deltaEv("toolu_x", "m1", "b1", "early"))
	if diff := cmp.Diff(s, out); diff != "" {
		t.Errorf("delta before upsert changed the state:\n%s", diff)
	}
}

func TestReduceIdleFinalizesPendingBlocks(t *testing.T) {
	s := mustReduce(t, NewState("s"),
		upsertEv("", "m1", RoleAssistant, &Block{Type: BlockText, ID: "b1", Status: BlockPending}),
		upsertEv("", "m2", RoleAssistant, textBlock("b2", "done")),
		upsertEv("toolu_1", "s1", RoleAssistant, &Block{Type: BlockThinking, ID: "b3", Status: BlockPending}),
		Event{Type: EventSessionIdle},
	)
	if s.Messages[0].Blocks[0].Status != BlockComplete || s.Subagents[0].Messages[0].Blocks[0].Status != BlockComplete {
		t.Errorf("pending blocks remain: %+v / %+v", s.Messages[0].Blocks, s.Subagents[0].Messages[0].Blocks)
	}
	again := mustReduce(t, s, Event{Type: EventSessionIdle})
	if diff := cmp.Diff(s, again); diff != "" {
		t.Errorf("idle is not idempotent:\n%s", diff)
	}
}

func TestReduceSubagents(t *testing.T) {
	s := mustReduce(t, NewState("s"),
		Event{Type: EventSubagentSpawned, ToolUseID: "toolu_1", Description: "write a file"},
		upsertEv("toolu_1", "s1", RoleUser, textBlock("sb1", "go")),
		Event{Type: EventSubagentCompleted, ToolUseID: "toolu_1", AgentID: "agent-a"},
		// Found by agent id once it is known.
		upsertEv("agent-a", "s2", RoleAssistant, textBlock("sb2", "done")),
		// Nested: a subagent of the subagent.
		Event{Type: EventSubagentSpawned, ConversationID: "agent-a", ToolUseID: "toolu_2"},
		upsertEv("toolu_2", "n1", RoleUser, textBlock("nb1", "deeper")),
	)
	if len(s.Subagents) != 1 {
		t.Fatalf("%d subagents", len(s.Subagents))
	}
	sub := s.Subagents[0]
	if sub.AgentID != "agent-a" || sub.Status != SubagentCompleted || len(sub.Messages) != 2 || sub.Description != "write a file" {
		t.Errorf("subagent %+v", sub)
	}
	if len(sub.Subagents) != 1 || len(sub.Subagents[0].Messages) != 1 {
		t.Fatalf("nested subagent missing: %+v", sub.Subagents)
	}
	found, ok := s.FindSubagent("toolu_2")
	if !ok || found.Messages[0].ID != "n1" {
		t.Errorf("FindSubagent(toolu_2) = %+v, %v", found, ok)
	}
	if _, ok := s.FindSubagent("nobody"); ok {
		t.Error("found a subagent that does not exist")
	}
}

func TestReduceSubagentEventsOutOfOrder(t *testing.T) {
	// Completion and blocks arrive before the spawn: the thread is created defensively and
	// the late spawn finds it instead of making a second one.
	s := mustReduce(t, NewState("s"),
		upsertEv("toolu_9", "s1", RoleUser, textBlock("b", "hi")),
		Event{Type: EventSubagentCompleted, AgentID: "ag9", ToolUseID: "toolu_9", Status: SubagentFailed},
		Event{Type: EventSubagentSpawned, ToolUseID: "toolu_9"},
		Event{Type: EventSubagentCompleted, AgentID: "ag10"},
		Event{Type: EventSubagentSpawned, ConversationID: "toolu_missing", ToolUseID: "toolu_11"},
	)
	if len(s.Subagents) != 3 {
		t.Fatalf("%d subagents: %+v", len(s.Subagents), s.Subagents)
	}
	if sub := s.Subagents[0]; sub.AgentID != "ag9" || sub.Status != SubagentFailed || len(sub.Messages) != 1 {
		t.Errorf("first %+v", sub)
	}
	if sub := s.Subagents[1]; sub.AgentID != "ag10" || sub.Status != SubagentCompleted {
		t.Errorf("second %+v", sub)
	}
	if sub := s.Subagents[2]; sub.ToolUseID != "toolu_missing" || len(sub.Subagents) != 1 || sub.Subagents[0].ToolUseID != "toolu_11" {
		t.Errorf("third %+v", sub)
	}
}

func TestReduceRejectsBadEvents(t *testing.T) {
	bad := []Event{
		{Type: "block:explode"},
		{Type: EventBlockUpsert},
		{Type: EventBlockUpsert, Message: &Message{ID: "m", Role: "robot"}},
		{Type: EventBlockUpsert, Message: &Message{ID: "m"}, Block: &Block{}},
		{Type: EventBlockDelta, Delta: "x"},
		{Type: EventSubagentSpawned},
	}
	for _, e := range bad {
		s := NewState("s")
		if _, err := Reduce(s, e); !errors.Is(err, ErrEvent) {
			t.Errorf("%+v: err = %v", e, err)
		}
	}
}

// deepCopy copies a state through the snapshot codec, sharing nothing with it.
func deepCopy(t *testing.T, s State) State {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out State
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReduceNeverMutatesItsInput(t *testing.T) {
	s := importFixtureSession(t)
	s.Messages[1].Blocks[0].Status = BlockPending
	events := []Event{
		upsertEv("", s.Messages[1].ID, "", textBlock(s.Messages[1].Blocks[0].ID, "replaced")),
		deltaEv("", s.Messages[1].ID, s.Messages[1].Blocks[0].ID, " more"),
		upsertEv("", "new", RoleUser, &Block{Type: BlockText, ID: "nb", Text: "appended", Status: BlockPending}),
		upsertEv("a9b844f", s.Subagents[0].Messages[0].ID, "", textBlock("x", "sub")),
		deltaEv("a9b844f", s.Subagents[0].Messages[0].ID, "x", "!"),
		{Type: EventSubagentCompleted, AgentID: "a9b844f", Status: SubagentFailed},
		{Type: EventSubagentSpawned, ConversationID: "a9b844f", ToolUseID: "toolu_nested"},
		{Type: EventSessionIdle},
	}
	for _, e := range events {
		before := deepCopy(t, s)
		out, err := Reduce(s, e)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, s); diff != "" {
			t.Fatalf("%s mutated its input:\n%s", e.Type, diff)
		}
		if cmp.Equal(out, s) {
			t.Fatalf("%s changed nothing", e.Type)
		}
		s = out
	}
}

func TestReduceForkDoesNotAlias(t *testing.T) {
	base := mustReduce(t, NewState("s"), upsertEv("", "m1", RoleUser, textBlock("b1", "hi")))
	left := mustReduce(t, base, upsertEv("", "left", RoleAssistant, textBlock("l", "left")))
	right := mustReduce(t, base, upsertEv("", "right", RoleAssistant, textBlock("r", "right")))
	if left.Messages[1].ID != "left" || right.Messages[1].ID != "right" || len(base.Messages) != 1 {
		t.Errorf("forks share storage: %s %s", left.Messages[1].ID, right.Messages[1].ID)
	}
}

func TestEventsReplayRebuildsImportedState(t *testing.T) {
	openCode, err := ImportOpenCode(fixtures.Read(t, fixtures.OpenCode))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]State{"claude": importFixtureSession(t), "opencode": openCode} {
		got, err := ReduceAll(Shell(&s), Events(&s))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s, got); diff != "" {
			t.Errorf("%s: replayed state differs (-import +replay):\n%s", name, diff)
		}
	}
}

// TestStreamMatchesTranscript streams the SDK messages of the fixture session (the live
// stream_event deltas, then whole messages) through the reducer and compares with the
// transcript the CLI wrote for the same session.
func TestStreamMatchesTranscript(t *testing.T) {
	transcript := importFixtureSession(t)
	stream := NewClaudeStream()
	s := NewState(transcript.SessionID)
	deltas := 0
	for _, line := range nonEmptyLines(fixtures.Read(t, fixtures.ClaudeSDKMessages)) {
		events, err := stream.Events(line)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Type == EventBlockDelta {
				deltas++
			}
		}
		if s, err = ReduceAll(s, events); err != nil {
			t.Fatal(err)
		}
	}
	if deltas == 0 {
		t.Fatal("the fixture streamed no deltas")
	}
	// The fixture's SDK log lost the quotes of the first prompt ('test.txt' became test.txt);
	// compare that one text without them.
	want := digestMessages(transcript.Messages)
	want[0].Blocks[0] = strings.ReplaceAll(want[0].Blocks[0], "'", "")
	assertSameMessages(t, want, digestMessages(s.Messages))
	for i := range s.Messages {
		if s.Messages[i].Turn != transcript.Messages[i].Turn {
			t.Errorf("message %d: turn %d, transcript %d", i, s.Messages[i].Turn, transcript.Messages[i].Turn)
		}
		for _, b := range s.Messages[i].Blocks {
			if b.Status != BlockComplete {
				t.Errorf("message %d: block %s still %s", i, b.ID, b.Status)
			}
		}
	}
	// The streamed state exports to a Claude transcript with the same messages.
	s.CWD = transcript.CWD
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("%d files", len(files))
	}
	exported, err := ImportClaudeSession(files[0].Content, ClaudeSubagentFile{AgentID: "a9b844f", Data: files[1].Content})
	if err != nil {
		t.Fatal(err)
	}
	assertSameMessages(t, digestMessages(s.Messages), digestMessages(exported.Messages))
	assertSameMessages(t, digestMessages(s.Subagents[0].Messages), digestMessages(exported.Subagents[0].Messages))
	if len(s.Subagents) != 1 {
		t.Fatalf("%d subagents", len(s.Subagents))
	}
	got, wantSub := s.Subagents[0], transcript.Subagents[0]
	if got.ToolUseID != wantSub.ToolUseID || got.AgentID != wantSub.AgentID || got.Status != wantSub.Status || got.Description != wantSub.Description {
		t.Errorf("subagent %+v, transcript %+v", got, wantSub)
	}
}

func TestDecodeEvent(t *testing.T) {
	e, err := DecodeEvent([]byte(`{"type":"block:delta","conversationId":"main","messageId":"m","blockId":"b","delta":"x"}`))
	if err != nil || e.Delta != "x" || e.BlockID != "b" {
		t.Fatalf("%+v %v", e, err)
	}
	for _, in := range []string{``, `[]`, `{"type":"block:delta"}`, `{"type":"nope"}`, `{"type":"session:idle","extra":1}`} {
		if _, err := DecodeEvent([]byte(in)); !errors.Is(err, ErrEvent) {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	s := importFixtureSession(f)
	if err := s.Validate(); err != nil {
		f.Fatal(err)
	}
	for _, e := range Events(&s)[:20] {
		data, err := json.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"block:delta","messageId":"msg_0181BxGX1zUFWYMQmKjWMTiT","blockId":"c57785c6-46db-4382-a13f-dcb80c6697ae","delta":"x"}`))
	f.Add([]byte(`{"type":"subagent:completed","conversationId":"a9b844f","agentId":"q"}`))
	f.Add([]byte(`{"type":"session:idle"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEvent(data)
		if err != nil {
			return
		}
		before, _ := json.Marshal(s)
		// A decoded event may still clash with the state (a tool_result for an assistant
		// message): refused with ErrEvent, by Reduce and Apply alike.
		reduced, reduceErr := Reduce(s, e)
		if reduceErr != nil && !errors.Is(reduceErr, ErrEvent) {
			t.Fatalf("a decoded event failed to reduce: %v", reduceErr)
		}
		// Whatever the event, the state keeps the model's invariants (ids, roles, increasing
		// seq, tool results in tool messages, raw JSON that is UTF-8, ...).
		if err := reduced.Validate(); err != nil {
			t.Fatalf("a decoded event broke the state: %v", err)
		}
		after, _ := json.Marshal(s)
		if !bytes.Equal(before, after) {
			t.Fatal("Reduce mutated its input")
		}
		// Apply on a private copy gives the same state.
		var owned State
		if err := json.Unmarshal(before, &owned); err != nil {
			t.Fatal(err)
		}
		if err := owned.Apply(e); (err != nil) != (reduceErr != nil) {
			t.Fatalf("Apply: %v, Reduce: %v", err, reduceErr)
		}
		want, _ := json.Marshal(reduced)
		got, _ := json.Marshal(owned)
		if !bytes.Equal(want, got) {
			t.Fatalf("Apply and Reduce differ:\n%s\n%s", got, want)
		}
	})
}

// TestApplyMatchesReduce feeds the same events to the copying Reduce and the in-place Apply.
func TestApplyMatchesReduce(t *testing.T) {
	transcript := importFixtureSession(t)
	stream := NewClaudeStream()
	var events []Event
	for _, line := range nonEmptyLines(fixtures.Read(t, fixtures.ClaudeSDKMessages)) {
		evs, err := stream.Events(line)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	events = append(events, Events(&transcript)...)
	events = append(events,
		Event{Type: EventSubagentSpawned, ConversationID: "toolu_01H79rxPSUkpfuuZFosbzSsv", ToolUseID: "toolu_nested"},
		upsertEv("toolu_nested", "n1", RoleUser, &Block{Type: BlockText, ID: "nb", Status: BlockPending}),
		deltaEv("toolu_nested", "n1", "nb", "deep"),
		Event{Type: EventSubagentCompleted, AgentID: "ghost"},
		Event{Type: EventSessionIdle},
	)
	pure, err := ReduceAll(NewState("s"), events)
	if err != nil {
		t.Fatal(err)
	}
	owned := NewState("s")
	for _, e := range events {
		if err := owned.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(pure, owned); diff != "" {
		t.Errorf("Apply differs from Reduce (-Reduce +Apply):\n%s", diff)
	}
	if err := owned.Apply(Event{Type: "nope"}); err == nil {
		t.Error("Apply accepted a bad event")
	}
}

// A tool result belongs in a RoleTool message only: a user message that gets one becomes
// RoleTool, but an assistant message cannot hold one, whichever event comes first. The
// reducer refuses the clash instead of building a state Validate rejects.
func TestReduceRefusesToolResultOutsideToolMessage(t *testing.T) {
	result := &Block{Type: BlockToolResult, ID: "r", ToolUseID: "t"}
	assistant := mustReduce(t, NewState("s"), upsertEv(MainThread, "m", RoleAssistant, &Block{Type: BlockText, ID: "b"}))
	tool := mustReduce(t, NewState("s"), upsertEv(MainThread, "m", RoleUser, result))
	if tool.Messages[0].Role != RoleTool {
		t.Fatalf("user message with a result has role %s, want tool", tool.Messages[0].Role)
	}
	for name, c := range map[string]struct {
		s State
		e Event
	}{
		"result into an assistant message":     {assistant, upsertEv(MainThread, "m", "", result)},
		"new assistant message with a result":  {NewState("s"), upsertEv(MainThread, "m", RoleAssistant, result)},
		"assistant header over a tool message": {tool, upsertEv(MainThread, "m", RoleAssistant, nil)},
		"system message with a result":         {NewState("s"), upsertEv(MainThread, "m", RoleSystem, result)},
	} {
		if _, err := Reduce(c.s, c.e); !errors.Is(err, ErrEvent) {
			t.Errorf("%s: %v, want ErrEvent", name, err)
		}
		owned := c.s
		owned.Messages = slices.Clone(c.s.Messages)
		if err := owned.Apply(c.e); !errors.Is(err, ErrEvent) {
			t.Errorf("%s: Apply: %v, want ErrEvent", name, err)
		}
	}
}

// Seq is strictly increasing in every thread, whatever an event says. The reducer treats an
// event's message seq the way AppendMessage treats a message's: zero is assigned (the last
// seq plus one), any other value must follow the thread's last seq, else the event is refused
// (ErrEvent) and the state is left as it was. The header of a message that already exists
// cannot move it: its seq is ignored, as an append retry's is.
func TestReduceKeepsSeqIncreasing(t *testing.T) {
	withSeq := func(thread, id string, seq int64) Event {
		e := upsertEv(thread, id, RoleUser, textBlock("b-"+id, "x"))
		e.Message.Seq = seq
		return e
	}
	base := mustReduce(t, NewState("s"), withSeq("", "m1", 0), withSeq("", "m2", 5), withSeq("sub", "s1", 3))
	if got := []int64{base.Messages[0].Seq, base.Messages[1].Seq, base.Subagents[0].Messages[0].Seq}; got[0] != 1 || got[1] != 5 || got[2] != 3 {
		t.Fatalf("seq %v, want [1 5 3]: zero is assigned, an increasing seq is kept", got)
	}
	refused := map[string]Event{
		"the fuzz input, seq 1 after 5": {Type: EventBlockUpsert, Message: &Message{ID: "0", Seq: 1}},
		"seq equal to the last":         withSeq(MainThread, "m3", 5),
		"negative seq":                  withSeq("", "m3", -1),
		"seq equal to a thread's last":  withSeq("sub", "s2", 3),
		"negative seq in a new thread":  withSeq("new", "n1", -7),
	}
	for name, e := range refused {
		if _, err := Reduce(base, e); !errors.Is(err, ErrEvent) {
			t.Errorf("%s: Reduce: %v, want ErrEvent", name, err)
		}
		owned := base
		owned.Messages = slices.Clone(base.Messages)
		owned.Subagents = slices.Clone(base.Subagents)
		if err := owned.Apply(e); !errors.Is(err, ErrEvent) {
			t.Errorf("%s: Apply: %v, want ErrEvent", name, err)
		}
		if diff := cmp.Diff(base, owned); diff != "" {
			t.Errorf("%s: a refused Apply changed the state:\n%s", name, diff)
		}
	}
	// The last seq can be the largest int64: one more would wrap around.
	top := mustReduce(t, NewState("s"), withSeq("", "m1", 1<<63-1))
	if _, err := Reduce(top, withSeq("", "m2", 0)); !errors.Is(err, ErrEvent) {
		t.Errorf("seq after the largest: %v, want ErrEvent", err)
	}

	// A header for an existing message keeps its place.
	s := mustReduce(t, base, withSeq("", "m1", 9), withSeq("", "m3", 0), withSeq("", "m4", 42))
	got := make([]int64, 0, len(s.Messages))
	for _, m := range s.Messages {
		got = append(got, m.Seq)
	}
	if !slices.Equal(got, []int64{1, 5, 6, 42}) {
		t.Errorf("seq %v, want [1 5 6 42]", got)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
}
