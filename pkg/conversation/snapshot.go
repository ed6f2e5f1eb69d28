package conversation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	if !utf8.Valid(data) { // what the encoder writes is UTF-8; raw extras would not come back as read
		return Snapshot{}, corrupt("not valid UTF-8")
	}
	head, payload, err := splitSnapshot(data)
	if err != nil {
		return Snapshot{}, err
	}
	if head.Format != SnapshotFormat {
		return Snapshot{}, corrupt(fmt.Sprintf("format %q", head.Format))
	}
	if err := checkMajor(head.Metadata.SchemaVersion); err != nil {
		return Snapshot{}, err
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

// splitSnapshot reads the members before the payload and returns the payload's bytes as
// written, without decoding them: the digest is checked first, and the payload is then
// decoded (and validated) once. The payload must be the last member, as MarshalSnapshot
// writes it.
func splitSnapshot(data []byte) (snapshotHeader, []byte, error) {
	var head snapshotHeader
	dec := jsontext.NewDecoder(bytes.NewReader(data), lenientJSON)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return head, nil, corrupt("not a JSON object")
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return head, nil, corrupt(err.Error())
		}
		switch name := tok.String(); name {
		case "payload":
			rest := bytes.TrimSpace(data[dec.InputOffset():])
			if len(rest) < 2 || rest[0] != ':' || rest[len(rest)-1] != '}' {
				return head, nil, corrupt("payload is not the last member")
			}
			return head, bytes.TrimSpace(rest[1 : len(rest)-1]), nil
		case "format", "metadata":
			v, err := dec.ReadValue()
			if err != nil {
				return head, nil, corrupt(err.Error())
			}
			target := any(&head.Format)
			if name == "metadata" {
				target = &head.Metadata
			}
			if err := json.Unmarshal(v, target, lenientJSON); err != nil {
				return head, nil, corrupt(err.Error())
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return head, nil, corrupt(err.Error())
			}
		}
	}
	return head, nil, corrupt("no payload")
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
