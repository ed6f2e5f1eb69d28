// Package journal keeps a conversation as records of a history.History: messages, reducer
// events, the system prompt, subagent threads, raw transcript records and adapter state each
// become one record, and a View folds the records of an epoch back into a
// conversation.State with its counts. The controllers and the Session API go through it and
// never touch records directly.
package journal

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// Kind says what a record holds.
type Kind string

// Record kinds.
const (
	// KindSystem is the system prompt (State.System).
	KindSystem Kind = "system"
	// KindMessage is one whole main-thread message.
	KindMessage Kind = "message"
	// KindEvent is one reducer event (block upsert or delta, subagent, idle).
	KindEvent Kind = "event"
	// KindSubagent is one whole subagent thread, as a transcript import produced it.
	KindSubagent Kind = "subagent"
	// KindRecord is a raw transcript record kept to be written back.
	KindRecord Kind = "record"
	// KindAdapter is an adapter state report; the latest wins.
	KindAdapter Kind = "adapter"
	// KindSession sets session-level fields (the agent's working directory, unknown fields).
	KindSession Kind = "session"
	// KindInitialized marks the end of the history's initialisation (system prompt, seed or
	// fork): everything before it was written by the operator, exactly once.
	KindInitialized Kind = "initialized"
)

// ErrDecode wraps a record that cannot be decoded. The store verified the record's bytes, so
// this means a writer bug or a newer format, never a torn write.
var ErrDecode = errors.New("journal: undecodable record")

// envelope is a record's JSON: a kind and the one member that kind uses.
type envelope struct {
	Kind     Kind                    `json:"kind"`
	Message  *conversation.Message   `json:"message,omitzero"`
	Event    *conversation.Event     `json:"event,omitzero"`
	Subagent *conversation.Subagent  `json:"subagent,omitzero"`
	Record   *conversation.RawRecord `json:"record,omitzero"`
	// Transcript is a line of the agent's own transcript (KindTranscript).
	Transcript *TranscriptLine            `json:"transcript,omitzero"`
	Adapters   conversation.AdapterStates `json:"adapters,omitzero"`
	CWD        string                     `json:"cwd,omitzero"`
	// Source is the transcript's own fields (State.Source, KindSession), e.g. an OpenCode
	// export's session info, which its exporter writes back.
	Source *conversation.Source `json:"source,omitzero"`
	Extra  jsontext.Value       `json:"extra,omitzero"`
	// Compaction describes the compaction that wrote the epoch (KindCompaction).
	Compaction *Compaction `json:"compaction,omitzero"`
	// Reset describes the reset that wrote the epoch (KindReset).
	Reset *Reset `json:"reset,omitzero"`
}

var codec = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Record ids. Each kind has its own id space so a message id can never collide with another
// kind's id; the store makes an append of an id the epoch already holds a no-op.
func messageRecordID(id string) string  { return "msg:" + id }
func subagentRecordID(id string) string { return "sub:" + id }

// SystemRecordID is the id of the system prompt written at initialisation.
const SystemRecordID = "system"

// InitializedRecordID is the id of the initialisation marker.
const InitializedRecordID = "initialized"

func encode(id string, env *envelope) (history.Record, error) {
	data, err := json.Marshal(env, codec)
	if err != nil {
		return history.Record{}, fmt.Errorf("journal: encode %s record %s: %w", env.Kind, id, err)
	}
	return history.Record{ID: id, Data: data}, nil
}

func decode(e history.Entry) (envelope, error) {
	var env envelope
	if err := json.Unmarshal(e.Data, &env, codec); err != nil {
		return env, fmt.Errorf("%w: sequence %d (%s): %w", ErrDecode, e.Seq, e.ID, err)
	}
	return env, nil
}

// MessageRecord encodes a main-thread message; its id is derived from the message id, so a
// retried append of the same message is stored once.
func MessageRecord(m *conversation.Message) (history.Record, error) {
	if m.ID == "" {
		return history.Record{}, errors.New("journal: message without an id")
	}
	return encode(messageRecordID(m.ID), &envelope{Kind: KindMessage, Message: m})
}

// SystemRecord encodes the system prompt.
func SystemRecord(text string) (history.Record, error) {
	return encode(SystemRecordID, &envelope{Kind: KindSystem, Message: &conversation.Message{
		ID: SystemRecordID, Role: conversation.RoleSystem,
		Blocks: []conversation.Block{{Type: conversation.BlockText, Text: text}},
	}})
}

// EventRecord encodes a reducer event under the caller's id (retries must repeat it).
func EventRecord(id string, e *conversation.Event) (history.Record, error) {
	if id == "" {
		return history.Record{}, errors.New("journal: event without an id")
	}
	if err := e.Validate(); err != nil {
		return history.Record{}, err
	}
	return encode("evt:"+id, &envelope{Kind: KindEvent, Event: e})
}

// AdapterRecord encodes an adapter state report under the caller's id.
func AdapterRecord(id string, s conversation.AdapterState) (history.Record, error) {
	if id == "" || s == nil {
		return history.Record{}, errors.New("journal: adapter state without an id or a state")
	}
	return encode("adapter:"+id, &envelope{Kind: KindAdapter, Adapters: conversation.AdapterStates{s}})
}

// InitializedRecord marks the end of initialisation.
func InitializedRecord() (history.Record, error) {
	return encode(InitializedRecordID, &envelope{Kind: KindInitialized})
}

// StateRecords turns a whole state (an imported seed, a forked snapshot) into records, in an
// order that View folds back into the same state: session fields, system prompt, then the
// messages with the raw records that followed each, the subagent threads, and the adapter
// states. prefix keeps the ids of raw records and adapter reports, which have no id of their
// own, apart from other writers'; message and subagent ids are their own, so a retried import
// is a no-op record by record.
func StateRecords(s *conversation.State, prefix string) ([]history.Record, error) {
	var out []history.Record
	add := func(id string, env *envelope) error {
		r, err := encode(id, env)
		if err == nil {
			out = append(out, r)
		}
		return err
	}
	if s.CWD != "" || len(s.Extra) > 0 || sourceSet(&s.Source) {
		env := &envelope{Kind: KindSession, CWD: s.CWD, Extra: s.Extra}
		if sourceSet(&s.Source) {
			env.Source = &s.Source
		}
		if err := add(prefix+"session", env); err != nil {
			return nil, err
		}
	}
	if s.System != nil {
		sys := *s.System
		if sys.ID == "" {
			sys.ID = SystemRecordID
		}
		if err := add(SystemRecordID, &envelope{Kind: KindSystem, Message: &sys}); err != nil {
			return nil, err
		}
	}
	// Raw records go right after the message they followed, so a reader sees them in place.
	after := map[string][]int{}
	for i := range s.Records {
		after[s.Records[i].AfterID] = append(after[s.Records[i].AfterID], i)
	}
	addRecords := func(afterID string) error {
		for _, i := range after[afterID] {
			if err := add(fmt.Sprintf("%srec:%d", prefix, i), &envelope{Kind: KindRecord, Record: &s.Records[i]}); err != nil {
				return err
			}
		}
		delete(after, afterID)
		return nil
	}
	if err := addRecords(""); err != nil {
		return nil, err
	}
	for i := range s.Messages {
		m := &s.Messages[i]
		if err := add(messageRecordID(m.ID), &envelope{Kind: KindMessage, Message: m}); err != nil {
			return nil, err
		}
		if err := addRecords(m.ID); err != nil {
			return nil, err
		}
	}
	for i := range s.Subagents {
		sub := &s.Subagents[i]
		key := sub.ToolUseID
		if key == "" {
			key = sub.AgentID
		}
		if key == "" {
			key = fmt.Sprintf("%d", i)
		}
		if err := add(subagentRecordID(key), &envelope{Kind: KindSubagent, Subagent: sub}); err != nil {
			return nil, err
		}
	}
	// Records whose message is not in the main thread (subagent lines) come last, in order.
	for i := range s.Records {
		if _, left := after[s.Records[i].AfterID]; left {
			if err := addRecords(s.Records[i].AfterID); err != nil {
				return nil, err
			}
		}
	}
	for i, a := range s.Adapters {
		if err := add(fmt.Sprintf("%sadapter:%d", prefix, i), &envelope{Kind: KindAdapter, Adapters: conversation.AdapterStates{a}}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sourceSet(s *conversation.Source) bool {
	return s.Kind != "" || len(s.IDs) > 0 || len(s.Raw) > 0
}
