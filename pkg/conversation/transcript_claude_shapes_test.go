package conversation

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
)

// The transcript in testdata/claude-code-shapes holds the line and block shapes real Claude
// Code / Agent SDK transcripts contain and the two fixtures lack: summary, custom-title,
// attachment, file-history-snapshot and queue-operation lines; system lines (local_command,
// api_error, compact_boundary); progress lines that message lines point at; isMeta and
// isCompactSummary prompts; string and block-list content; thinking with signature,
// redacted_thinking, server_tool_use, web_search_tool_result, citations, cache_control,
// container_upload; images (in a prompt and inside a tool_result) and documents (base64 PDF,
// plain text); toolUseResult as an object, a string and an array; tool_result content as a
// string and as a list with an unknown block; a message split over four lines; an
// interrupted turn answered by a <synthetic> message; a rewind (an edited prompt); a
// timestamp out of order; a sidechain in the main file (old layout); and a resumed session
// that replayed its last two lines (duplicate uuids). The subagent file is the Task call's.

const shapesAgent = "b7f3c2d1"

func shapesUUID(n int) string { return fmt.Sprintf("0b6e2f10-7c3a-4d5e-8f90-%012d", n) }

func readShapes(t testing.TB) (main, sub []byte) {
	t.Helper()
	return readFixture(t, "claude-code-shapes/main.jsonl"), readFixture(t, "claude-code-shapes/agent-"+shapesAgent+".jsonl")
}

// messageLine is a message line of a transcript file: its uuid and, for an assistant line,
// the API message id.
type messageLine struct{ uuid, apiID string }

// transcriptLines lists, from the file itself, its message lines (type user or assistant
// with a uuid and a message object).
func transcriptLines(t testing.TB, data []byte) []messageLine {
	t.Helper()
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var out []messageLine
	for _, l := range nonEmptyLines(data) {
		var head struct {
			Type    string `json:"type"`
			UUID    string `json:"uuid"`
			Message *struct {
				ID string `json:"id"`
			} `json:"message"`
		}
		if json.Unmarshal(bytes.TrimSpace(l), &head, lenientJSON) != nil {
			continue
		}
		if (head.Type != "user" && head.Type != "assistant") || head.UUID == "" || head.Message == nil {
			continue
		}
		ml := messageLine{uuid: head.UUID}
		if head.Type == "assistant" {
			ml.apiID = head.Message.ID
		}
		out = append(out, ml)
	}
	return out
}

// lineHome says where each transcript line uuid ended up: "message:<id>" when a message of
// the conversation holds it, "record" (repeated per copy) when it was kept as a raw record.
type lineHome struct {
	message map[string]string
	records map[string]int
	apiIDs  map[string]bool
	// shared lists the line uuids held by more than one message (of different threads).
	shared []string
}

func homesOf(t testing.TB, s *State) lineHome {
	t.Helper()
	h := lineHome{message: map[string]string{}, records: map[string]int{}, apiIDs: map[string]bool{}}
	var walk func([]Message, []Subagent)
	walk = func(msgs []Message, subs []Subagent) {
		for i := range msgs {
			m := &msgs[i]
			for _, id := range m.Source.IDs {
				h.apiIDs[id] = true
			}
			var recs []claudeLineRecord
			if err := json.Unmarshal(m.Source.Raw, &recs, lenientJSON); err != nil {
				t.Fatalf("message %s: source records: %v", m.ID, err)
			}
			for _, r := range recs {
				var head struct {
					UUID string `json:"uuid"`
				}
				if err := json.Unmarshal(r.Line, &head, lenientJSON); err != nil {
					t.Fatal(err)
				}
				if _, dup := h.message[head.UUID]; dup {
					h.shared = append(h.shared, head.UUID)
				}
				h.message[head.UUID] = m.ID
			}
		}
		for i := range subs {
			walk(subs[i].Messages, subs[i].Subagents)
		}
	}
	walk(s.Messages, s.Subagents)
	for _, r := range s.Records {
		var head struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(r.Raw, &head, lenientJSON) == nil && head.UUID != "" {
			h.records[head.UUID]++
		}
	}
	return h
}

// checkNothingLost asserts that every message line of the transcripts is held by a message
// of the conversation, except those in offConversation, which must be kept as raw records;
// and that every assistant API message id is the id (or a source id) of a message.
func checkNothingLost(t *testing.T, s *State, offConversation []string, files ...[]byte) {
	t.Helper()
	h := homesOf(t, s)
	if len(h.shared) > 0 {
		t.Errorf("lines held by two messages: %v", h.shared)
	}
	for _, f := range files {
		lines := transcriptLines(t, f)
		if len(lines) == 0 {
			t.Fatal("no message lines in the transcript")
		}
		for _, l := range lines {
			switch {
			case slices.Contains(offConversation, l.uuid):
				if h.records[l.uuid] == 0 {
					t.Errorf("line %s neither in the conversation nor kept as a record", l.uuid)
				}
			case h.message[l.uuid] == "":
				t.Errorf("message line %s lost", l.uuid)
			case l.apiID != "" && !h.apiIDs[l.apiID]:
				t.Errorf("API message %s lost", l.apiID)
			}
		}
	}
}

// shapesRewound are the lines of the abandoned rewind branch (a prompt and its answer).
var shapesRewound = []string{shapesUUID(29), shapesUUID(30)}

func importShapes(t *testing.T, main, sub []byte) State {
	t.Helper()
	s, err := ImportClaudeSession(main, ClaudeSubagentFile{AgentID: shapesAgent, Data: sub})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestImportClaudeShapes(t *testing.T) {
	main, sub := readShapes(t)
	s := importShapes(t, main, sub)
	checkNothingLost(t, &s, shapesRewound, main, sub)
	if err := s.Validate(); err != nil {
		t.Errorf("imported state is invalid: %v", err)
	}
	if s.SessionID != "5d0c1a7e-3b1f-4c2e-9a6d-0f4e8b2c7a11" || s.CWD != "/home/dev/src/parley" {
		t.Errorf("session %q cwd %q", s.SessionID, s.CWD)
	}
	// The replayed copies of the last two lines are kept as records, once each.
	h := homesOf(t, &s)
	for _, n := range []int{35, 36} {
		if h.records[shapesUUID(n)] != 1 {
			t.Errorf("replayed line %d kept %d times as a record, want 1", n, h.records[shapesUUID(n)])
		}
	}
	byID := map[string]*Message{}
	for i := range s.Messages {
		byID[s.Messages[i].ID] = &s.Messages[i]
	}
	// Four lines of one API message merge, in order.
	if m := byID["msg_01Aa"]; m == nil || len(m.Blocks) != 4 || m.Blocks[0].Type != BlockThinking || m.Blocks[0].Signature == "" ||
		m.Blocks[3].ToolUseID != "toolu_01Bash" || m.Usage.Output != 212 || m.Usage.CacheRead != 18000 || m.Usage.CacheWrite != 1200 {
		t.Errorf("msg_01Aa: %+v", m)
	}
	// Unknown and server-side blocks are kept whole; citations stay with their text.
	if m := byID["msg_01Bb"]; m == nil || len(m.Blocks) != 4 || m.Blocks[0].Type != BlockRedactedThinking ||
		m.Blocks[1].Type != "server_tool_use" || len(m.Blocks[1].Raw) == 0 || m.Blocks[2].Type != "web_search_tool_result" ||
		!bytes.Contains(m.Blocks[3].Extra, []byte("citations")) {
		t.Errorf("msg_01Bb: %+v", m)
	}
	// A tool result with an image, and one with an unknown block in its content.
	if m := byID[shapesUUID(20)]; m == nil || m.Role != RoleTool || len(m.Blocks[0].Content) != 2 ||
		m.Blocks[0].Content[1].Type != BlockImage || m.Blocks[0].Content[1].Media.MediaType != "image/jpeg" {
		t.Errorf("image tool result: %+v", m)
	}
	if m := byID[shapesUUID(27)]; m == nil || m.Blocks[0].Content[0].Type != "tool_reference" {
		t.Errorf("tool_reference result: %+v", m)
	}
	if m := byID[shapesUUID(15)]; m == nil || m.Role != RoleUser || m.Blocks[1].Media == nil || m.Blocks[1].Media.SourceType != "base64" {
		t.Errorf("pasted image: %+v", m)
	}
	if m := byID[shapesUUID(25)]; m == nil || len(m.Blocks) != 3 || m.Blocks[0].Type != BlockDocument || m.Blocks[0].Media.Title != "spec.pdf" {
		t.Errorf("documents: %+v", m)
	}
	if m := byID["6c9a4f2e-1b7d-4e3a-9c5f-2d8e7b1a0f34"]; m == nil || m.Model != "<synthetic>" || m.Role != RoleAssistant {
		t.Errorf("synthetic message: %+v", m)
	}
	if m := byID[shapesUUID(13)]; m == nil || !m.Flags.Has(FlagMeta) {
		t.Errorf("meta prompt: %+v", m)
	}
	if m := byID[shapesUUID(34)]; m == nil || !m.Flags.Has(FlagCompactSummary) {
		t.Errorf("compact summary: %+v", m)
	}
	// The edited prompt replaced the first attempt.
	if m := byID[shapesUUID(31)]; m == nil || m.ParentID != "msg_01Gg" {
		t.Errorf("edited prompt: %+v", m)
	}
	// The last message is the answer after compaction, once.
	if last := s.Messages[len(s.Messages)-1]; last.ID != "msg_01Jj" || last.Text() != "Committed." {
		t.Errorf("last message %s %q", last.ID, last.Text())
	}
	if sc, ok := s.FindSubagent("sidechain"); !ok || len(sc.Messages) != 2 {
		t.Errorf("sidechain in the main file: %+v", sc)
	}
	if task, ok := s.FindSubagent(shapesAgent); !ok || task.ToolUseID != "toolu_01Task" || task.Description != "Find sleeps" || len(task.Messages) != 4 {
		t.Errorf("Task subagent: %+v", task)
	}
}

// TestExportClaudeShapesRoundTrip: what was imported exports and imports again to the same
// messages, records, unknown lines and unknown blocks.
func TestExportClaudeShapesRoundTrip(t *testing.T) {
	main, sub := readShapes(t)
	s := importShapes(t, main, sub)
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The sidechain of the main file is written in today's layout: a subagent file.
	content := map[string][]byte{}
	for _, f := range files {
		content[f.Path] = f.Content
	}
	mainFile := content[ClaudeTranscriptPath(s.CWD, s.SessionID)]
	taskFile := content[ClaudeSubagentPath(s.CWD, s.SessionID, shapesAgent)]
	sideFile := content[ClaudeSubagentPath(s.CWD, s.SessionID, "sidechain")]
	if len(files) != 3 || mainFile == nil || taskFile == nil || sideFile == nil {
		t.Fatalf("%d files", len(files))
	}
	again, err := ImportClaudeSession(mainFile, ClaudeSubagentFile{AgentID: shapesAgent, Data: taskFile},
		ClaudeSubagentFile{AgentID: "sidechain", Data: sideFile})
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLost(t, &again, shapesRewound, main, sub)
	if !slices.EqualFunc(digestMessages(s.Messages), digestMessages(again.Messages), digestEqual) {
		t.Errorf("messages changed:\n%v\n%v", digestMessages(s.Messages), digestMessages(again.Messages))
	}
	for _, id := range []string{shapesAgent, "sidechain"} {
		a, _ := s.FindSubagent(id)
		b, _ := again.FindSubagent(id)
		if a == nil || b == nil || !slices.EqualFunc(digestMessages(a.Messages), digestMessages(b.Messages), digestEqual) {
			t.Errorf("subagent %s changed", id)
		}
	}
	// Parents: a line that followed a raw line (compact_boundary, progress) still does, so
	// the SDK's walk from the newest line stops at the compaction boundary; other lines
	// follow the previous message line.
	parent := map[string]string{}
	for _, l := range nonEmptyLines(mainFile) {
		var head struct {
			UUID       string  `json:"uuid"`
			ParentUUID *string `json:"parentUuid"`
		}
		if err := json.Unmarshal(l, &head); err != nil {
			t.Fatal(err)
		}
		if head.UUID != "" && head.ParentUUID != nil {
			parent[head.UUID] = *head.ParentUUID
		}
	}
	for child, want := range map[int]int{34: 33, 8: 100, 31: 28, 35: 34, 36: 35, 2: 1} {
		if got := parent[shapesUUID(child)]; got != shapesUUID(want) {
			t.Errorf("line %d: parent %s, want line %d", child, got, want)
		}
	}
	var chain []string
	for u := shapesUUID(36); u != ""; u = parent[u] {
		chain = append(chain, u)
	}
	if !slices.Equal(chain, []string{shapesUUID(36), shapesUUID(35), shapesUUID(34), shapesUUID(33)}) {
		t.Errorf("resume chain %v", chain)
	}
	if len(again.Records) != len(s.Records) {
		t.Errorf("%d records, want %d", len(again.Records), len(s.Records))
	}
	export := bytes.Join([][]byte{mainFile, taskFile, sideFile}, nil)
	for _, needle := range []string{
		`"type":"summary"`, `"type":"custom-title"`, `"type":"attachment"`, `"subtype":"compact_boundary"`, `"subtype":"api_error"`,
		`"subtype":"local_command"`, `"type":"progress"`, `"type":"file-history-snapshot"`, `"type":"queue-operation"`,
		`"type":"server_tool_use"`, `"type":"web_search_tool_result"`, `"type":"container_upload"`, `"type":"tool_reference"`,
		`"type":"redacted_thinking"`, `"citations"`, `"cache_control"`, `"imagePasteIds"`, `"isVisibleInTranscriptOnly"`,
		`"Now run it 100 times"`, `"application/pdf"`, `"context":"design notes"`, `"caller"`, `"structuredPatch"`,
	} {
		if !bytes.Contains(export, []byte(needle)) {
			t.Errorf("%s lost on export", needle)
		}
	}
}

func digestEqual(a, b messageDigest) bool {
	return a.ID == b.ID && a.Role == b.Role && slices.Equal(a.Blocks, b.Blocks)
}

// shapeVariants are the ways a file on disk differs from what Claude Code meant to write,
// generated from the authored transcript.
func shapeVariants(main []byte) map[string][]byte {
	crlf := bytes.ReplaceAll(main, []byte("\n"), []byte("\r\n"))
	long := strings.Repeat("0123456789abcdef", 1<<18) // a 4 MiB tool output on one line
	return map[string][]byte{
		"crlf":               crlf,
		"bom":                append([]byte("\ufeff"), main...),
		"bom crlf":           append([]byte("\ufeff"), crlf...),
		"no final newline":   bytes.TrimSuffix(main, []byte("\n")),
		"blank lines":        bytes.ReplaceAll(main, []byte("\n"), []byte("\n \t\n\n")),
		"leading whitespace": bytes.ReplaceAll(main, []byte("\n{"), []byte("\n  {")),
		"very long line": bytes.Replace(main, []byte(`"content":"     1\tpackage client`),
			[]byte(`"content":"`+long+`     1\tpackage client`), 1),
		"extra fields": bytes.ReplaceAll(main, []byte(`"uuid":`),
			[]byte(`"futureEnvelope":{"a":[1,{"b":null}]},"futureFlag":true,"uuid":`)),
	}
}

func TestImportClaudeShapeVariants(t *testing.T) {
	main, sub := readShapes(t)
	want := importShapes(t, main, sub)
	for name, data := range shapeVariants(main) {
		t.Run(name, func(t *testing.T) {
			s := importShapes(t, data, sub)
			checkNothingLost(t, &s, shapesRewound, data, sub)
			got, exp := digestMessages(s.Messages), digestMessages(want.Messages)
			if name == "very long line" {
				if len(got) != len(exp) {
					t.Errorf("%d messages, want %d", len(got), len(exp))
				}
				return
			}
			if !slices.EqualFunc(got, exp, digestEqual) {
				t.Errorf("messages differ from the plain file's:\n%v\n%v", got, exp)
			}
			if len(s.Records) != len(want.Records) {
				t.Errorf("%d records, want %d", len(s.Records), len(want.Records))
			}
		})
	}
}

// TestImportClaudeEmpty: an empty transcript (a session that never got a line) is an empty
// conversation, not an error.
func TestImportClaudeEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "\r\n\r\n", " \t\n", "\ufeff", "\ufeff\n"} {
		s, err := ImportClaudeJSONL([]byte(in))
		if err != nil || len(s.Messages) != 0 || len(s.Records) != 0 {
			t.Errorf("%q: %d messages, %d records, err %v", in, len(s.Messages), len(s.Records), err)
		}
	}
}

// TestImportClaudeTruncatedFinalLine: a crash in the middle of writing a line leaves a last
// line that is the start of a JSON object, with no newline after it. The complete lines are
// imported and the error says the last line was cut (ErrTruncatedTranscript, which is also
// an ErrTranscript).
func TestImportClaudeTruncatedFinalLine(t *testing.T) {
	main, _ := readShapes(t)
	complete := bytes.TrimSuffix(main, []byte("\n"))
	lastStart := bytes.LastIndexByte(complete, '\n') + 1
	want, err := ImportClaudeJSONL(main[:lastStart])
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{1, 2, 40, len(complete) - lastStart - 1} {
		data := complete[:lastStart+cut]
		s, err := ImportClaudeJSONL(data)
		if !errors.Is(err, ErrTruncatedTranscript) || !errors.Is(err, ErrTranscript) {
			t.Fatalf("cut at %d: err = %v", cut, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("line %d", bytes.Count(complete, []byte("\n"))+1)) {
			t.Errorf("error does not name the line: %v", err)
		}
		if !slices.EqualFunc(digestMessages(s.Messages), digestMessages(want.Messages), digestEqual) || len(s.Records) != len(want.Records) {
			t.Errorf("cut at %d: the complete lines were not all imported", cut)
		}
		// With CRLF line endings too.
		crlf := bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		if s, err := ImportClaudeJSONL(crlf); !errors.Is(err, ErrTruncatedTranscript) || len(s.Messages) != len(want.Messages) {
			t.Errorf("crlf cut at %d: %d messages, err %v", cut, len(s.Messages), err)
		}
	}
	// Zero bytes where a lost write should have been, after a complete or a cut line.
	zeros := bytes.Repeat([]byte{0}, 4096)
	for _, data := range [][]byte{append(slices.Clone(main[:lastStart]), zeros...), append(slices.Clone(complete[:lastStart+40]), zeros...)} {
		s, err := ImportClaudeJSONL(data)
		if !errors.Is(err, ErrTruncatedTranscript) || !slices.EqualFunc(digestMessages(s.Messages), digestMessages(want.Messages), digestEqual) {
			t.Errorf("zero tail: %d messages, err %v", len(s.Messages), err)
		}
	}
	// A crash, then a resumed session appending to the same file: the cut line and the next
	// one share a line. Every complete line is read.
	for _, cut := range []int{1, 40, 200, len(complete) - lastStart - 1} {
		var resumed []byte
		resumed = append(resumed, main[:lastStart]...)
		resumed = append(resumed, complete[lastStart:lastStart+cut]...)
		resumed = append(resumed, main[lastStart:]...)
		s, err := ImportClaudeJSONL(resumed)
		if !errors.Is(err, ErrTruncatedTranscript) || !strings.Contains(err.Error(), fmt.Sprintf("line %d starts with %d bytes of a cut line", bytes.Count(complete, []byte("\n"))+1, cut)) {
			t.Errorf("resumed after a cut at %d: err = %v", cut, err)
		}
		full, _ := ImportClaudeJSONL(main)
		if !slices.EqualFunc(digestMessages(s.Messages), digestMessages(full.Messages), digestEqual) || len(s.Records) != len(full.Records) {
			t.Errorf("resumed after a cut at %d: %d messages %d records, want %d %d", cut, len(s.Messages), len(s.Records), len(full.Messages), len(full.Records))
		}
	}
	// Corruption elsewhere is not a truncation: no state, ErrTranscript only.
	for _, bad := range [][]byte{
		append(slices.Clone(complete[:lastStart+40]), '\n'), // cut, then a newline: not a crash mid-write
		append(slices.Clone(main), []byte("{\"type\":\"user\",}")...),
		append([]byte("{\"type\":\"us\n"), main...),
	} {
		s, err := ImportClaudeJSONL(bad)
		if !errors.Is(err, ErrTranscript) || errors.Is(err, ErrTruncatedTranscript) || len(s.Messages) != 0 {
			t.Errorf("corrupt input: %d messages, err %v", len(s.Messages), err)
		}
	}
	// A truncated subagent file says which agent.
	_, sub := readShapes(t)
	_, err = ImportClaudeSession(main, ClaudeSubagentFile{AgentID: shapesAgent, Data: sub[:len(sub)-10]})
	if !errors.Is(err, ErrTruncatedTranscript) || !strings.Contains(err.Error(), shapesAgent) {
		t.Errorf("truncated subagent file: %v", err)
	}
}

// TestImportClaudeReplayedPrompt: a resumed session writes lines again with the same uuid.
// A replayed prompt must not look like a rewind that abandons the rest of the conversation.
func TestImportClaudeReplayedPrompt(t *testing.T) {
	lines := []string{
		`{"type":"user","uuid":"` + shapesUUID(1) + `","parentUuid":null,"message":{"role":"user","content":"one"}}`,
		`{"type":"assistant","uuid":"` + shapesUUID(2) + `","parentUuid":"` + shapesUUID(1) + `","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"a"}]}}`,
		`{"type":"user","uuid":"` + shapesUUID(3) + `","parentUuid":"` + shapesUUID(2) + `","message":{"role":"user","content":"two"}}`,
		`{"type":"assistant","uuid":"` + shapesUUID(4) + `","parentUuid":"` + shapesUUID(3) + `","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"b"}]}}`,
	}
	for name, order := range map[string][]int{
		"prompt replayed at the end":  {0, 1, 2, 3, 2},
		"all replayed":                {0, 1, 2, 3, 0, 1, 2, 3},
		"replayed before the answer":  {0, 1, 2, 2, 3},
		"answer and prompt replayed":  {0, 1, 2, 3, 2, 3},
		"first prompt replayed after": {0, 0, 1, 2, 3},
		"start replayed at the end":   {0, 1, 2, 3, 0, 1},
	} {
		var b strings.Builder
		for _, k := range order {
			b.WriteString(lines[k] + "\n")
		}
		s, err := ImportClaudeJSONL([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.Messages); got != 4 {
			t.Errorf("%s: %d messages, want 4: %v", name, got, digestMessages(s.Messages))
		}
		if got := len(s.Records); got != len(order)-4 {
			t.Errorf("%s: %d records, want %d", name, got, len(order)-4)
		}
	}
}

// TestImportClaudeDocumentSourceKept: a document whose source has members the model has no
// field for (a "content" source holding blocks) is kept whole, not cut down to what fits.
func TestImportClaudeDocumentSourceKept(t *testing.T) {
	doc := `{"type":"document","source":{"type":"content","content":[{"type":"text","text":"chunk one"},{"type":"text","text":"chunk two"}]},"title":"notes"}`
	img := `{"type":"image","source":{"type":"url","url":"https://example.com/a.png","future":1}}`
	line := `{"type":"user","uuid":"` + shapesUUID(1) + `","parentUuid":null,"sessionId":"s","message":{"role":"user","content":[` + doc + `,` + img + `]}}`
	s, err := ImportClaudeJSONL([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chunk one", "chunk two", `"future":1`, `"title":"notes"`} {
		if !bytes.Contains(files[0].Content, []byte(want)) {
			t.Errorf("%s lost: %s", want, files[0].Content)
		}
	}
	if b := s.Messages[0].Blocks; len(b) != 2 || b[0].Type != BlockDocument || b[1].Type != BlockImage {
		t.Errorf("blocks %+v", b)
	}
}

// TestImportClaudeOddValues: members of a known line with a value of an unexpected type
// (null where a string was expected, numbers for flags) do not lose the message.
func TestImportClaudeOddValues(t *testing.T) {
	for _, line := range []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"timestamp":null,"cwd":null,"sessionId":null,"message":{"role":"user","content":"hi","id":null,"model":null,"usage":null}}`,
		`{"type":"assistant","uuid":"u1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":null,"server_tool_use":{"web_search_requests":1}}}}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"text","text":"x"}]},"toolUseResult":"Error: plain string"}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"text","text":"x"}]},"toolUseResult":[{"type":"text","text":"x"}]}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"text","text":"x"}]},"toolUseResult":{"agentId":7,"content":[]}}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":[]}}`,
		`{"type":"user","uuid":"u1","message":{"role":"user"}}`,
	} {
		s, err := ImportClaudeJSONL([]byte(line))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if len(s.Messages) != 1 {
			t.Errorf("%s: %d messages, %d records", line, len(s.Messages), len(s.Records))
		}
	}
}

// TestExportClaudeKeepsUUIDOfEmptyLine: a line without content blocks keeps its uuid.
func TestExportClaudeKeepsUUIDOfEmptyLine(t *testing.T) {
	data := `{"type":"user","uuid":"` + shapesUUID(1) + `","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"` + shapesUUID(2) + `","parentUuid":"` + shapesUUID(1) + `","sessionId":"s","message":{"id":"msg_e","role":"assistant","content":[]}}
`
	s, err := ImportClaudeJSONL([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ImportClaudeJSONL(files[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLost(t, &again, nil, []byte(data))
}

// genTranscript writes a random Claude Code session from the shapes above: prompts as
// strings or blocks (with images), assistant messages split one block per line (thinking,
// text, tool calls, server tool blocks), tool results (some written between the lines of
// the message that called them, as streamed tool execution does) as strings or lists, progress and
// system lines between them (a progress line is the parent of the next line), rewinds,
// compactions, and a replay of earlier lines at the end. It returns the file and the uuids
// of the lines a rewind abandoned.
func genTranscript(rng *rand.Rand) ([]byte, []string) {
	var out bytes.Buffer
	n := 0
	newID := func() string { n++; return shapesUUID(1000 + n) }
	last := "" // the line the next one follows
	var abandoned []string
	line := func(typ, parent, msg, extra string) string {
		id := newID()
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		fmt.Fprintf(&out, `{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"gen","type":"%s","message":%s,"uuid":"%s","timestamp":"2026-01-05T10:%02d:00Z"%s}`+"\n",
			p, typ, msg, id, rng.IntN(60), extra)
		return id
	}
	raw := func() {
		switch rng.IntN(4) {
		case 0:
			id := newID()
			fmt.Fprintf(&out, `{"type":"progress","parentUuid":"%s","uuid":"%s","data":{"type":"hook_progress"},"sessionId":"gen"}`+"\n", last, id)
			last = id
		case 1:
			fmt.Fprintf(&out, `{"type":"system","subtype":"informational","content":"note","parentUuid":"%s","uuid":"%s","level":"info"}`+"\n", last, newID())
		case 2:
			fmt.Fprintf(&out, `{"type":"file-history-snapshot","messageId":"%s","snapshot":{"trackedFileBackups":{}}}`+"\n", last)
		default:
			fmt.Fprintf(&out, `{"type":"future-kind-%d","payload":[1,"two",{"three":null}]}`+"\n", rng.IntN(9))
		}
	}
	prompt := func(parent string) string {
		if rng.IntN(2) == 0 {
			return line("user", parent, fmt.Sprintf(`{"role":"user","content":"prompt %d"}`, n), "")
		}
		return line("user", parent, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"prompt %d"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}`, n), "")
	}
	result := func(parent, call string) string {
		content := `"output"`
		if rng.IntN(2) == 0 {
			content = `[{"type":"text","text":"out"},{"type":"tool_reference","tool_name":"x"}]`
		}
		return line("user", parent, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+call+`","content":`+content+`}]}`, `,"toolUseResult":{"stdout":"out","interrupted":false}`)
	}
	// answer writes one API message, a line per block; it returns its lines and tool calls.
	answer := func(parent string) (lines, calls []string) {
		apiID := fmt.Sprintf("msg_gen%d", n)
		for k := rng.IntN(4); k >= 0; k-- {
			var block string
			switch rng.IntN(5) {
			case 0:
				block = `{"type":"thinking","thinking":"hmm","signature":"c2ln"}`
			case 1:
				block = `{"type":"server_tool_use","id":"srv` + fmt.Sprint(n) + `","name":"web_search","input":{}}`
			case 2, 3:
				call := fmt.Sprintf("toolu_%d", n)
				calls = append(calls, call)
				block = `{"type":"tool_use","id":"` + call + `","name":"Bash","input":{"command":"ls"}}`
			default:
				block = `{"type":"text","text":"answer ` + fmt.Sprint(n) + `","citations":null}`
			}
			parent = line("assistant", parent, `{"id":"`+apiID+`","type":"message","role":"assistant","model":"claude-x","content":[`+block+`],"usage":{"input_tokens":1,"output_tokens":1,"cache_read_input_tokens":5}}`, "")
			lines = append(lines, parent)
			if len(calls) > 0 && strings.Contains(block, calls[len(calls)-1]) && rng.IntN(3) == 0 {
				// Streamed tool execution: the result is written before the message's next block.
				parent = result(parent, calls[len(calls)-1])
				lines = append(lines, parent)
				calls = calls[:len(calls)-1]
			}
		}
		return lines, calls
	}
	for turn := rng.IntN(6) + 2; turn > 0; turn-- {
		if rng.IntN(3) == 0 {
			raw()
		}
		if rng.IntN(5) == 0 && last != "" { // a rewind: this prompt and its answer are abandoned
			p := prompt(last)
			lines, _ := answer(p)
			abandoned = append(append(abandoned, p), lines...)
		}
		if rng.IntN(8) == 0 && last != "" {
			id := newID()
			fmt.Fprintf(&out, `{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"%s","uuid":"%s","compactMetadata":{"trigger":"auto"}}`+"\n", last, id)
			last = line("user", id, `{"role":"user","content":"summary"}`, `,"isCompactSummary":true`)
		}
		last = prompt(last)
		if rng.IntN(3) == 0 {
			raw()
		}
		lines, calls := answer(last)
		last = lines[len(lines)-1]
		for _, c := range calls {
			last = result(last, c)
		}
	}
	// A resumed session replays some lines.
	lines := nonEmptyLines(out.Bytes())
	for k := rng.IntN(3); k > 0; k-- {
		l := lines[rng.IntN(len(lines))]
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.Bytes(), abandoned
}

// TestImportClaudeGenerated: random sessions import with every line where it belongs, and
// export and import again to the same messages and records.
func TestImportClaudeGenerated(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		data, abandoned := genTranscript(rand.New(rand.NewPCG(seed, 7)))
		if seed%2 == 0 {
			data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		}
		s, err := ImportClaudeJSONL(data)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkNothingLost(t, &s, abandoned, data)
			if err := s.Validate(); err != nil {
				t.Errorf("invalid state: %v", err)
			}
			for _, u := range abandoned {
				if homesOf(t, &s).message[u] != "" {
					t.Errorf("abandoned line %s is in the conversation", u)
				}
			}
			files, err := ExportClaude(&s, ClaudeExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			again, err := ImportClaudeJSONL(files[0].Content)
			if err != nil {
				t.Fatal(err)
			}
			checkNothingLost(t, &again, abandoned, data)
			if !slices.EqualFunc(digestMessages(s.Messages), digestMessages(again.Messages), digestEqual) || len(again.Records) != len(s.Records) {
				t.Errorf("export round trip changed the conversation:\n%v\n%v", digestMessages(s.Messages), digestMessages(again.Messages))
			}
		})
	}
}

// TestSnapshotClaudeShapes: an imported transcript with every shape survives a checkpoint:
// the state read back equals the imported one and exports to the same files.
func TestSnapshotClaudeShapes(t *testing.T) {
	main, sub := readShapes(t)
	s := importShapes(t, main, sub)
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime})
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got.State); diff != "" {
		t.Errorf("state changed (-want +got):\n%s", diff)
	}
	want, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := ExportClaude(&got.State, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(want, files, func(a, b ExportedFile) bool { return a.Path == b.Path && bytes.Equal(a.Content, b.Content) }) {
		t.Error("the restored state exports differently")
	}
}

// TestExportClaudeSubagentWithoutMessages: a subagent transcript that holds no message line
// (a crash before the first one) still has its lines written back.
func TestExportClaudeSubagentWithoutMessages(t *testing.T) {
	main, _ := readShapes(t)
	only := `{"type":"system","subtype":"informational","content":"starting","uuid":"` + shapesUUID(900) + `","isSidechain":true,"agentId":"c0ffee"}` + "\n"
	s, err := ImportClaudeSession(main, ClaudeSubagentFile{AgentID: "c0ffee", Data: []byte(only)})
	if err != nil {
		t.Fatal(err)
	}
	files, err := ExportClaude(&s, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := ClaudeSubagentPath(s.CWD, s.SessionID, "c0ffee")
	i := slices.IndexFunc(files, func(f ExportedFile) bool { return f.Path == path })
	if i < 0 || string(files[i].Content) != only {
		t.Errorf("subagent file without messages not written back: %v", i)
	}
}
