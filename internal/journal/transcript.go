package journal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/history"
)

// KindTranscript is one line of an agent's own transcript, kept as the agent wrote it: an
// entry of the Claude Agent SDK's SessionStore, of the main transcript or of a subagent's
// (Subpath). The lines are the source of the messages the View shows (it imports them with
// the Claude transcript importer) and are returned as they came by a SessionStore load.
const KindTranscript Kind = "transcript"

// TranscriptLine is what a KindTranscript record holds.
type TranscriptLine struct {
	// Subpath names the transcript: "" for the main one, else the SDK's subpath
	// (subagents/agent-<id>, the file's path under the session's folder without .jsonl).
	Subpath string `json:"subpath,omitzero"`
	// Entry is the line: one JSON object, as received.
	Entry jsontext.Value `json:"entry"`
	// At is when the Session API received the line: the transcript's modification time.
	At time.Time `json:"at,omitzero"`
}

// Limits of transcript keys: they become part of record ids (at most 512 bytes).
const (
	MaxTranscriptSubpath = 256
	maxTranscriptKey     = 128
)

// ErrTranscriptEntry wraps every reason a transcript line or subpath is refused.
var ErrTranscriptEntry = errors.New("journal: bad transcript entry")

// keepStrings writes a line's strings as they came: a lone surrogate escape (\ud800, which
// JSON.stringify writes for half an emoji) would otherwise become U+FFFD, and the line would
// not load back equal.
var keepStrings = jsontext.PreserveRawStrings(true)

// entryHeader is what the journal reads of a line: its type and idempotency key.
type entryHeader struct {
	Type jsontext.Value `json:"type"`
	UUID jsontext.Value `json:"uuid"`
}

// CheckTranscriptSubpath refuses a subpath that is not a relative slash-separated path of
// plain segments: it names a file under the session's folder when the transcript is
// exported, so it must not climb out of it.
func CheckTranscriptSubpath(subpath string) error {
	if subpath == "" {
		return nil
	}
	if len(subpath) > MaxTranscriptSubpath || !utf8.ValidString(subpath) {
		return fmt.Errorf("%w: subpath longer than %d bytes or not UTF-8", ErrTranscriptEntry, MaxTranscriptSubpath)
	}
	for seg := range strings.SplitSeq(subpath, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
			return fmt.Errorf("%w: subpath %q is not a relative path of plain segments", ErrTranscriptEntry, subpath)
		}
	}
	return nil
}

// TranscriptRecords encodes lines of one transcript. An entry's uuid is its idempotency key,
// as the SessionStore contract asks: a line whose uuid the transcript already holds is not
// stored again (the first one stays). Entries without a uuid (titles, tags, mode markers)
// are keyed by batch and position, so only a retry of the same batch is stored once.
func TranscriptRecords(subpath, batch string, entries []jsontext.Value, at time.Time) ([]history.Record, error) {
	if err := CheckTranscriptSubpath(subpath); err != nil {
		return nil, err
	}
	if batch == "" || len(batch) > maxTranscriptKey || !utf8.ValidString(batch) {
		return nil, fmt.Errorf("%w: a batch id of 1 to %d bytes is needed", ErrTranscriptEntry, maxTranscriptKey)
	}
	scope := "tx:" + strconv.Quote(subpath) + ":"
	out := make([]history.Record, 0, len(entries))
	for i, entry := range entries {
		key, err := entryKey(entry)
		if err != nil {
			return nil, fmt.Errorf("entries[%d]: %w", i, err)
		}
		id := scope + key
		if key == "" {
			id = scope + "~" + batch + ":" + strconv.Itoa(i)
		}
		// One line of a JSONL file: whitespace (a newline in a pretty-printed entry) goes.
		entry = entry.Clone()
		if err := entry.Compact(); err != nil {
			return nil, fmt.Errorf("entries[%d]: %w: %w", i, ErrTranscriptEntry, err)
		}
		line := TranscriptLine{Subpath: subpath, Entry: entry, At: at.UTC()}
		data, err := json.Marshal(&envelope{Kind: KindTranscript, Transcript: &line}, codec, keepStrings)
		if err != nil {
			return nil, fmt.Errorf("entries[%d]: %w: %w", i, ErrTranscriptEntry, err)
		}
		out = append(out, history.Record{ID: id, Data: data})
	}
	return out, nil
}

// entryKey checks that an entry is a JSON object with a string type and returns its uuid ("" when it has none).
func entryKey(entry jsontext.Value) (string, error) {
	if entry.Kind() != '{' {
		return "", fmt.Errorf("%w: an entry must be a JSON object", ErrTranscriptEntry)
	}
	// The record would hold U+FFFD for each bad byte: the line would not load back as
	// appended, and two uuids differing only there would be one key.
	if !utf8.Valid(entry) {
		return "", fmt.Errorf("%w: an entry must be valid UTF-8", ErrTranscriptEntry)
	}
	var h entryHeader
	if err := json.Unmarshal(entry, &h, codec); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTranscriptEntry, err)
	}
	if h.Type.Kind() != '"' {
		return "", fmt.Errorf("%w: an entry needs a string member type", ErrTranscriptEntry)
	}
	switch h.UUID.Kind() {
	case 0, 'n':
		return "", nil
	case '"':
		var id string
		if err := json.Unmarshal(h.UUID, &id, codec); err != nil || id == "" || len(id) > maxTranscriptKey || !utf8.ValidString(id) {
			return "", fmt.Errorf("%w: uuid must be a string of 1 to %d bytes", ErrTranscriptEntry, maxTranscriptKey)
		}
		return id, nil
	default:
		return "", fmt.Errorf("%w: uuid must be a string", ErrTranscriptEntry)
	}
}
