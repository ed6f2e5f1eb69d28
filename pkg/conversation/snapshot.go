package conversation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A snapshot is one JSON object, the payload last so a reader can check the digest before
// decoding it:
//
//	{"format":"parley.dev/conversation-snapshot","metadata":{...},"payload":{...State...}}
//
// metadata.digest is "sha256:<hex>" of the payload bytes exactly as written. The payload is
// the State, whose adapters field carries the adapter state (latest last).

// SnapshotFormat names the format in every snapshot.
const SnapshotFormat = "parley.dev/conversation-snapshot"

// Typed snapshot errors; test with errors.Is.
var (
	// ErrSnapshotVersion: the snapshot's major schema version is not one this code reads.
	ErrSnapshotVersion = errors.New("conversation: unsupported snapshot version")
	// ErrSnapshotCorrupt: the snapshot is not valid JSON, not a snapshot, or its digest does
	// not match its payload.
	ErrSnapshotCorrupt = errors.New("conversation: corrupt snapshot")
)

// SnapshotMetadata describes a snapshot.
type SnapshotMetadata struct {
	SchemaVersion string `json:"schemaVersion"`
	// CreatedAt is written in RFC 3339 with its zone offset.
	CreatedAt time.Time `json:"createdAt"`
	SessionID string    `json:"sessionId,omitzero"`
	// Checkpoint is the name of the Checkpoint the snapshot belongs to, if any.
	Checkpoint string `json:"checkpoint,omitzero"`
	Turn       int    `json:"turn,omitzero"`
	Messages   int    `json:"messages,omitzero"`
	// Digest is "sha256:<hex>" of the payload; MarshalSnapshot sets it.
	Digest string         `json:"digest"`
	Extra  jsontext.Value `json:",embed"`
}

// Snapshot is a decoded snapshot.
type Snapshot struct {
	Metadata SnapshotMetadata
	State    State
}

type snapshotHeader struct {
	Format   string           `json:"format"`
	Metadata SnapshotMetadata `json:"metadata"`
}

// MarshalSnapshot encodes the state with the given metadata. It fills in SchemaVersion,
// SessionID, Messages and Digest; CreatedAt is the caller's (time is a parameter).
func MarshalSnapshot(s *State, meta SnapshotMetadata) ([]byte, error) {
	if s.SchemaVersion == "" {
		return nil, errors.New("conversation: state has no schema version")
	}
	payload, err := json.Marshal(s, lenientJSON)
	if err != nil {
		return nil, fmt.Errorf("conversation: encode snapshot payload: %w", err)
	}
	sum := sha256.Sum256(payload)
	meta.SchemaVersion = SchemaVersion
	meta.SessionID = s.SessionID
	meta.Messages = len(s.Messages)
	meta.Digest = "sha256:" + hex.EncodeToString(sum[:])
	head, err := json.Marshal(snapshotHeader{Format: SnapshotFormat, Metadata: meta}, lenientJSON)
	if err != nil {
		return nil, fmt.Errorf("conversation: encode snapshot metadata: %w", err)
	}
	out := make([]byte, 0, len(head)+len(payload)+16)
	out = append(out, head[:len(head)-1]...) // drop the closing brace
	out = append(out, `,"payload":`...)
	out = append(out, payload...)
	out = append(out, '}')
	return out, nil
}

// UnmarshalSnapshot decodes and verifies a snapshot. It returns ErrSnapshotVersion or
// ErrSnapshotCorrupt (wrapped with details), and never a partially decoded state.
func UnmarshalSnapshot(data []byte) (Snapshot, error) {
	var doc struct {
		snapshotHeader
		Payload jsontext.Value `json:"payload"`
	}
	if err := json.Unmarshal(data, &doc, lenientJSON); err != nil {
		return Snapshot{}, corrupt(err.Error())
	}
	head, payload := doc.snapshotHeader, doc.Payload
	if head.Format != SnapshotFormat {
		return Snapshot{}, corrupt(fmt.Sprintf("format %q", head.Format))
	}
	if err := checkMajor(head.Metadata.SchemaVersion); err != nil {
		return Snapshot{}, err
	}
	if payload == nil {
		return Snapshot{}, corrupt("no payload")
	}
	sum := sha256.Sum256(payload)
	if head.Metadata.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
		return Snapshot{}, corrupt("digest does not match the payload")
	}
	var s State
	if err := json.Unmarshal(payload, &s, lenientJSON); err != nil {
		return Snapshot{}, corrupt(err.Error())
	}
	if err := checkMajor(s.SchemaVersion); err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Metadata: head.Metadata, State: s}, nil
}

func corrupt(why string) error { return fmt.Errorf("%w: %s", ErrSnapshotCorrupt, why) }

// checkMajor accepts "1" and "1.x" (any minor of the major this code writes).
func checkMajor(version string) error {
	if version == "" {
		return corrupt("no schema version")
	}
	want, _, _ := strings.Cut(SchemaVersion, ".")
	major, _, _ := strings.Cut(version, ".")
	if _, err := strconv.Atoi(major); err != nil {
		return corrupt(fmt.Sprintf("schema version %q", version))
	}
	if major != want {
		return fmt.Errorf("%w: %s (this build reads %s.x)", ErrSnapshotVersion, version, want)
	}
	return nil
}
