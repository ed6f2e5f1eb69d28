package conversation

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"

	"github.com/parley-dev/parley/test/fixtures"
)

// resumeMembers are what the Claude export adds to a line that lacks them, because the CLI
// needs them to resume: the chain, the session id, the working directory and a parseable
// timestamp (see ExportClaude).
var resumeMembers = map[string]bool{"parentUuid": true, "sessionId": true, "cwd": true, "timestamp": true}

// expectedClaudeFiles is what an export of an unchanged import must write, file by file
// (keyed by thread: "" for the main transcript, else the agent id): every line read, in
// order, in the file of its thread. Lines of a subagent written into the main transcript
// (isSidechain, as older Claude Code did) go to that subagent's file.
func expectedClaudeFiles(t testing.TB, main []byte, subagents ...ClaudeSubagentFile) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, l := range transcriptValues(main) {
		var head claudeLine // a line of another shape is the main transcript's
		thread := ""
		if json.Unmarshal(l, &head, lenientJSON) == nil && head.IsSidechain {
			thread = head.AgentID
			if thread == "" {
				thread = "sidechain"
			}
		}
		out[thread] = append(out[thread], l)
	}
	for _, f := range subagents {
		out[f.AgentID] = append(out[f.AgentID], transcriptValues(f.Data)...)
	}
	return out
}

// transcriptValues are the non-blank lines of a transcript (a byte order mark and CRLF aside).
func transcriptValues(data []byte) [][]byte {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// exportedByThread keys an export's files by thread, as expectedClaudeFiles does.
func exportedByThread(t testing.TB, files []ExportedFile) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for i, f := range files {
		thread := ""
		if i > 0 {
			name := path.Base(f.Path)
			if !strings.HasPrefix(name, "agent-") || !strings.HasSuffix(name, ".jsonl") {
				t.Fatalf("unexpected file %s", f.Path)
			}
			thread = strings.TrimSuffix(strings.TrimPrefix(name, "agent-"), ".jsonl")
		}
		out[thread] = transcriptValues(f.Content)
	}
	return out
}

// losslessLine reports why an exported line is not the line read: every member read must be
// there with the same value, and only resume members the line lacked may be added (a
// timestamp also replaces one the CLI cannot parse).
func losslessLine(read, written []byte) error {
	r, err := jsonTreeOf(read)
	if err != nil {
		return fmt.Errorf("line read: %w", err)
	}
	w, err := jsonTreeOf(written)
	if err != nil {
		return fmt.Errorf("line written: %w", err)
	}
	ro, rok := r.(map[string]any)
	wo, wok := w.(map[string]any)
	if !rok || !wok {
		if !reflect.DeepEqual(r, w) {
			return errors.New(cmp.Diff(r, w))
		}
		return nil
	}
	for name, v := range ro {
		wv, ok := wo[name]
		switch {
		case !ok:
			return fmt.Errorf("member %q lost", name)
		case name == "timestamp" && !parseableTime(v):
		case !reflect.DeepEqual(v, wv):
			return fmt.Errorf("member %q changed (-read +written):\n%s", name, cmp.Diff(v, wv))
		}
	}
	for name := range wo {
		if _, ok := ro[name]; !ok && !resumeMembers[name] {
			return fmt.Errorf("member %q added", name)
		}
	}
	return nil
}

func parseableTime(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// checkLossless compares an export with what was read, file by file and line by line.
func checkLossless(t testing.TB, want map[string][][]byte, files []ExportedFile) {
	t.Helper()
	got := exportedByThread(t, files)
	for thread, lines := range want {
		out, ok := got[thread]
		if !ok {
			t.Fatalf("thread %q: no file written", thread)
		}
		if len(out) != len(lines) {
			t.Fatalf("thread %q: %d lines written, %d read", thread, len(out), len(lines))
		}
		for i := range lines {
			if err := losslessLine(lines[i], out[i]); err != nil {
				t.Fatalf("thread %q line %d: %v\nread    %.300s\nwritten %.300s", thread, i+1, err, lines[i], out[i])
			}
		}
	}
	for thread, lines := range got {
		if _, ok := want[thread]; !ok && len(lines) > 0 {
			t.Fatalf("file for thread %q written, none read", thread)
		}
	}
}

func TestClaudeRoundTripIsLossless(t *testing.T) {
	cases := map[string]struct {
		main      []byte
		subagents map[string][]byte
		// exact: a Claude Code transcript, whose lines come back equal as JSON; otherwise
		// (SDK output read as a transcript) resume members may be added.
		exact bool
	}{
		"session": {fixtures.Read(t, fixtures.ClaudeMain), map[string][]byte{fixtures.ClaudeAgentID: fixtures.Read(t, fixtures.ClaudeSubagent)}, true},
		"shapes": {
			readFixture(t, "claude-code-shapes/main.jsonl"),
			map[string][]byte{"b7f3c2d1": readFixture(t, "claude-code-shapes/agent-b7f3c2d1.jsonl")},
			true,
		},
		"sdk messages": {fixtures.Read(t, fixtures.ClaudeSDKMessages), nil, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			main := c.main
			subs := make([]ClaudeSubagentFile, 0, len(c.subagents))
			for id, f := range c.subagents {
				subs = append(subs, ClaudeSubagentFile{AgentID: id, Data: f})
			}
			s, err := ImportClaudeSession(main, subs...)
			if err != nil {
				t.Fatal(err)
			}
			files, err := ExportClaude(&s, ClaudeExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := expectedClaudeFiles(t, main, subs...)
			checkLossless(t, want, files)
			if c.exact {
				got := exportedByThread(t, files)
				for thread, lines := range want {
					for i := range lines {
						if !sameJSON(lines[i], got[thread][i]) {
							t.Errorf("thread %q line %d differs: %s", thread, i+1, jsonDiff(lines[i], got[thread][i]))
						}
					}
				}
			}
			// import → export → import is the identity; for SDK output, whose lines gain the
			// resume members, from the first export on.
			again := reimportClaude(t, files)
			if !c.exact {
				s = again
				if files, err = ExportClaude(&s, ClaudeExportOptions{}); err != nil {
					t.Fatal(err)
				}
				again = reimportClaude(t, files)
			}
			if diff := cmp.Diff(s, again, sameState); diff != "" {
				t.Errorf("import → export → import changed the state (-first +second):\n%s", diff)
			}
		})
	}
}

// reimportClaude reads an export back: its main transcript with its subagent files.
func reimportClaude(t testing.TB, files []ExportedFile) State {
	t.Helper()
	subs := make([]ClaudeSubagentFile, 0, len(files)-1)
	for _, f := range files[1:] {
		id := strings.TrimSuffix(strings.TrimPrefix(path.Base(f.Path), "agent-"), ".jsonl")
		subs = append(subs, ClaudeSubagentFile{AgentID: id, Data: f.Content})
	}
	s, err := ImportClaudeSession(files[0].Content, subs...)
	if err != nil {
		t.Fatalf("export does not import: %v", err)
	}
	return s
}

// A checkpoint written before 1.1 (its line records have no prev, its records no afterLine)
// still decodes and exports: the main transcript is the file read, as JSON, and the
// conversation comes back whole.
func TestExportClaudeFromASchema10Snapshot(t *testing.T) {
	snap, err := UnmarshalSnapshot(readFixture(t, "snapshots/v1.0-claude-code.json"))
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.SchemaVersion != "1.0" {
		t.Fatalf("golden snapshot is %s", snap.State.SchemaVersion)
	}
	files, err := ExportClaude(&snap.State, ClaudeExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameClaudeFiles(fixtures.Read(t, fixtures.ClaudeMain), files[0].Content) {
		t.Error("main transcript differs from the file read")
	}
	back := reimportClaude(t, files)
	assertSameMessages(t, digestMessages(snap.State.Messages), digestMessages(back.Messages))
	assertSameMessages(t, digestMessages(snap.State.Subagents[0].Messages), digestMessages(back.Subagents[0].Messages))
}
