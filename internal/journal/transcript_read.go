package journal

import (
	"bytes"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
)

// TranscriptInfo describes one transcript a SessionStore can load.
type TranscriptInfo struct {
	// Subpath is "" for the main transcript.
	Subpath string
	// Modified is when its last line was received; zero for a transcript that holds only
	// what the epoch had before the agent's first line (a seed, a fork, a compaction).
	Modified time.Time
}

// TranscriptLines returns what a SessionStore load of subpath answers: the Claude export of
// what the epoch held before the agent's first transcript line (the system prompt aside:
// a seed, a fork, a compaction's messages, messages other clients appended), then the lines
// the agent sent, as they came. An epoch the agent never sent a line to is exported whole,
// so a Claude agent can resume any conversation. It reports false when there is nothing.
func (v *View) TranscriptLines(subpath string) ([]jsontext.Value, bool, error) {
	lines, err := v.exportedLines(subpath)
	if err != nil {
		return nil, false, err
	}
	if v.tx != nil {
		if t, ok := v.tx.threads[subpath]; ok {
			lines = append(lines, t.lines()...)
		}
	}
	return lines, len(lines) > 0, nil
}

// Transcripts lists the transcripts TranscriptLines has lines for, the main one first.
func (v *View) Transcripts() []TranscriptInfo {
	prefix := v.prefixState()
	var out []TranscriptInfo
	seen := map[string]int{}
	add := func(subpath string, modified time.Time) {
		if i, ok := seen[subpath]; ok {
			if modified.After(out[i].Modified) {
				out[i].Modified = modified
			}
			return
		}
		seen[subpath] = len(out)
		out = append(out, TranscriptInfo{Subpath: subpath, Modified: modified})
	}
	// The files ExportClaude writes for the prefix, by the same rules.
	if len(prefix.Messages) > 0 || slices.ContainsFunc(prefix.Records, func(r conversation.RawRecord) bool { return r.Thread == "" }) {
		add("", time.Time{})
	}
	for _, sub := range flattenSubagents(prefix.Subagents) {
		if sub.AgentID != "" {
			add(subpathOfAgent(sub.AgentID), time.Time{})
		}
	}
	for _, r := range prefix.Records {
		if r.Thread != "" {
			add(subpathOfAgent(r.Thread), time.Time{})
		}
	}
	if v.tx != nil {
		for _, sub := range v.tx.order {
			add(sub, v.tx.threads[sub].modified)
		}
	}
	slices.SortStableFunc(out, func(a, b TranscriptInfo) int {
		switch {
		case a.Subpath == b.Subpath:
			return 0
		case a.Subpath == "":
			return -1
		case b.Subpath == "":
			return 1
		}
		return 0
	})
	return out
}

// prefixState is the state whose export comes before the agent's lines.
func (v *View) prefixState() *conversation.State {
	if v.tx != nil {
		return &v.tx.prefix
	}
	return &v.State
}

// exportedLines are the lines of the prefix's Claude export for subpath.
func (v *View) exportedLines(subpath string) ([]jsontext.Value, error) {
	prefix := v.prefixState()
	if len(prefix.Messages) == 0 && len(prefix.Subagents) == 0 && len(prefix.Records) == 0 {
		return nil, nil
	}
	s := *prefix
	s.SessionID = v.State.SessionID
	files, err := conversation.ExportClaude(&s, conversation.ClaudeExportOptions{})
	if err != nil {
		return nil, err
	}
	want := conversation.ClaudeTranscriptPath(s.CWD, s.SessionID)
	if subpath != "" {
		want = conversation.ClaudeSubagentPath(s.CWD, s.SessionID, agentOfSubpath(subpath))
	}
	var lines []jsontext.Value
	for _, f := range files {
		if f.Path != want {
			continue
		}
		for line := range bytes.SplitSeq(f.Content, []byte{'\n'}) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				lines = append(lines, jsontext.Value(line))
			}
		}
	}
	return lines, nil
}

func flattenSubagents(subs []conversation.Subagent) []*conversation.Subagent {
	out := make([]*conversation.Subagent, 0, len(subs))
	for i := range subs {
		out = append(out, &subs[i])
		out = append(out, flattenSubagents(subs[i].Subagents)...)
	}
	return out
}
