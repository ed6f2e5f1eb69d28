package wire

import (
	"encoding/json"
	"time"
)

// TranscriptAppendRequest is POST …/transcript: lines of the agent's own transcript (Claude
// Agent SDK SessionStore entries), appended in order. An entry with a uuid is stored once per
// transcript whatever batch brings it again (the first one stays); entries without one are
// stored once per Batch and position, so a client retries with the same Batch.
type TranscriptAppendRequest struct {
	// Subpath names a subagent's transcript (subagents/agent-<id>); empty for the main one.
	Subpath string `json:"subpath,omitempty"`
	// Batch identifies this request; the server makes one up when it is empty (then a retry
	// stores the entries without a uuid again).
	Batch string `json:"batch,omitempty"`
	// Entries are JSON objects with a string member type.
	Entries []json.RawMessage `json:"entries"`
}

// TranscriptAppendResponse answers once every line is durable.
type TranscriptAppendResponse struct {
	Sequences []uint64 `json:"sequences"`
}

// TranscriptPage is GET …/transcript?subpath=S&offset=N&limit=M: lines N to N+M-1 of a
// transcript, as a SessionStore load returns them.
type TranscriptPage struct {
	Subpath string `json:"subpath,omitempty"`
	// Epoch the lines come from: a client reading several pages starts again when it changes.
	Epoch uint64 `json:"epoch"`
	// Exists is false when the transcript has no line at all.
	Exists  bool              `json:"exists"`
	Entries []json.RawMessage `json:"entries"`
	// Next is the offset of the next page; 0 when this page reached the end.
	Next int `json:"next,omitempty"`
}

// TranscriptIndex is GET …/transcripts: the transcripts a SessionStore can load.
type TranscriptIndex struct {
	// SessionID is the conversation's session id: the only session its transcripts hold.
	SessionID   string           `json:"sessionId"`
	Epoch       uint64           `json:"epoch"`
	Transcripts []TranscriptInfo `json:"transcripts"`
}

// TranscriptInfo is one transcript of a TranscriptIndex, the main one first.
type TranscriptInfo struct {
	Subpath string `json:"subpath,omitempty"`
	// Modified is when its last line was received; for a transcript that holds only what
	// Parley had before the agent's first line (a seed, a fork, a compaction), the
	// conversation's lastActivityTime, else its creation time.
	Modified *time.Time `json:"modified,omitempty"`
}
