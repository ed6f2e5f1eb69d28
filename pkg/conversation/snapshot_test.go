package conversation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var snapshotTime = time.Date(2026, 11, 22, 3, 4, 5, 6, time.FixedZone("CET", 3600))

func sampleState(t testing.TB) State {
	t.Helper()
	s := importFixtureSession(t)
	s.System = &Message{ID: "sys", Role: RoleSystem, Blocks: []Block{{Type: BlockText, Text: "be brief"}}}
	s.Adapters = AdapterStates{
		&ClaudeAgentSDKState{SessionID: s.SessionID, CreatedAt: snapshotTime.UTC(), MessageCount: 8, IsComplete: true},
		&GenericAdapterState{AdapterType: "langgraph", SessionID: "t1", CanResume: true, Data: []byte(`{"thread":"t1"}`)},
	}
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := sampleState(t)
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime, Checkpoint: "c1", Turn: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"createdAt":"2026-11-22T03:04:05.000000006+01:00"`)) {
		t.Errorf("createdAt is not RFC 3339 with its zone: %.300s", data)
	}
	got, err := UnmarshalSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got.State); diff != "" {
		t.Errorf("state changed (-want +got):\n%s", diff)
	}
	if !got.Metadata.CreatedAt.Equal(snapshotTime) || got.Metadata.Checkpoint != "c1" || got.Metadata.Messages != len(s.Messages) {
		t.Errorf("metadata: %+v", got.Metadata)
	}
	if _, off := got.Metadata.CreatedAt.Zone(); off != 3600 {
		t.Errorf("zone offset %d", off)
	}
	// Marshalling again gives the same bytes: the digest is stable.
	again, err := MarshalSnapshot(&got.State, got.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Error("second marshal differs")
	}
}

func TestSnapshotErrors(t *testing.T) {
	s := sampleState(t)
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime})
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(data, []byte("Hello world from the main agent!"), []byte("Hello world from the evil agent!"), 1)
	current := []byte(`"schemaVersion":"` + SchemaVersion + `"`)
	if !bytes.Contains(data, current) {
		t.Fatalf("snapshot does not hold %s", current)
	}
	if bytes.Equal(tampered, data) {
		t.Fatal("fixture text not found")
	}
	cases := map[string]struct {
		data []byte
		want error
	}{
		"digest mismatch":   {tampered, ErrSnapshotCorrupt},
		"truncated":         {data[:len(data)/2], ErrSnapshotCorrupt},
		"empty":             {nil, ErrSnapshotCorrupt},
		"not an object":     {[]byte(`[1]`), ErrSnapshotCorrupt},
		"trailing data":     {append(bytes.Clone(data), []byte(` {}`)...), ErrSnapshotCorrupt},
		"wrong format":      {bytes.Replace(data, []byte(SnapshotFormat), []byte("other"), 1), ErrSnapshotCorrupt},
		"major version 2":   {bytes.Replace(data, current, []byte(`"schemaVersion":"2.0"`), 1), ErrSnapshotVersion},
		"no version":        {bytes.Replace(data, current, []byte(`"schemaVersion":""`), 1), ErrSnapshotCorrupt},
		"garbage version":   {bytes.Replace(data, current, []byte(`"schemaVersion":"x"`), 1), ErrSnapshotCorrupt},
		"no payload":        {[]byte(`{"format":"` + SnapshotFormat + `","metadata":{"schemaVersion":"1.0","digest":""}}`), ErrSnapshotCorrupt},
		"metadata mistyped": {[]byte(`{"format":"` + SnapshotFormat + `","metadata":7,"payload":{}}`), ErrSnapshotCorrupt},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := UnmarshalSnapshot(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got.State.Messages != nil || got.State.SchemaVersion != "" {
				t.Error("a partial state came back with the error")
			}
		})
	}
}

func TestSnapshotMinorVersionKeepsUnknownFields(t *testing.T) {
	s := NewState("s1")
	s.Messages = []Message{{ID: "m1", Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: "hi"}}}}
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime})
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	// A newer minor version adds a field: this build keeps it and writes it back.
	got.State.SchemaVersion = "1.7"
	got.State.Messages[0].Extra = []byte(`{"reactions":["+1"]}`)
	data2, err := MarshalSnapshot(&got.State, got.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	again, err := UnmarshalSnapshot(data2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(again.State.Messages[0].Extra), `"reactions":["+1"]`) {
		t.Errorf("unknown field lost: %s", again.State.Messages[0].Extra)
	}
}

func TestMarshalSnapshotNeedsVersion(t *testing.T) {
	if _, err := MarshalSnapshot(&State{}, SnapshotMetadata{}); err == nil {
		t.Error("a state without schema version was written")
	}
}

func FuzzUnmarshalSnapshot(f *testing.F) {
	s := sampleState(f)
	s.Messages = s.Messages[:3]
	s.Subagents = nil
	for i := range s.Messages {
		s.Messages[i].Source.Raw = nil // the seed stays small (see compactSeed)
	}
	data, err := MarshalSnapshot(&s, SnapshotMetadata{CreatedAt: snapshotTime})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	small := NewState("x")
	small.Messages = []Message{{ID: "a", Role: RoleUser}}
	data, _ = MarshalSnapshot(&small, SnapshotMetadata{CreatedAt: snapshotTime})
	f.Add(data)
	f.Add([]byte(`{"format":"x"}`))
	// Written by hand, not by MarshalSnapshot, so a lossy encoder cannot shape its own seed.
	payload := `{"schemaVersion":"1.0","sessionId":"s","cwd":"/w","system":{"id":"sys","role":"system","blocks":[{"type":"text","text":"be brief"}]},` +
		`"messages":[{"id":"a","seq":1,"role":"user","blocks":[{"type":"text","text":"hi"}],"turn":1,"future":true}],` +
		`"adapters":[{"type":"langgraph","state":{"adapterType":"langgraph","resumable":true}}]}`
	sum := sha256.Sum256([]byte(payload))
	f.Add([]byte(`{"format":"` + SnapshotFormat + `","metadata":{"schemaVersion":"1.2","createdAt":"2026-11-22T03:04:05+01:00",` +
		`"checkpoint":"c1","turn":1,"messages":1,"digest":"sha256:` + hex.EncodeToString(sum[:]) + `","newField":1},"payload":` + payload + `}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := UnmarshalSnapshot(data)
		if err != nil {
			if !errors.Is(err, ErrSnapshotCorrupt) && !errors.Is(err, ErrSnapshotVersion) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// What decodes must encode and decode to the same state and metadata (but for the
		// fields MarshalSnapshot fills in), and encoding that again gives the same bytes.
		out, err := MarshalSnapshot(&snap.State, snap.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		again, err := UnmarshalSnapshot(out)
		if err != nil {
			t.Fatal(err)
		}
		want := snap
		want.Metadata.SchemaVersion, want.Metadata.SessionID = SchemaVersion, snap.State.SessionID
		want.Metadata.Messages, want.Metadata.Digest = len(snap.State.Messages), again.Metadata.Digest
		if diff := cmp.Diff(want, again); diff != "" {
			t.Fatalf("snapshot changed in a round trip (-first +second):\n%s", diff)
		}
		out2, err := MarshalSnapshot(&again.State, again.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", out, out2)
		}
	})
}
