package journal

import (
	"bytes"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/history"
)

// KindReset opens an epoch written by a reset (POST …/reset) and says how it was made, so a
// retried reset finds that it already happened and the controller can report it.
const KindReset Kind = "reset"

// ResetRecordID is the id of the reset record (one per epoch).
const ResetRecordID = "reset"

// Reset describes one reset of a conversation's history.
type Reset struct {
	// ID identifies the request (a hash of its Idempotency-Key): a retry with the same key is
	// answered from this record instead of clearing the history again.
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// Checkpoint names the Reset Checkpoint holding the history before the reset.
	Checkpoint string `json:"checkpoint"`
	// FromEpoch and Through are the epoch reset and its last sequence read; entries appended
	// after Through were carried into the new epoch as they were.
	FromEpoch uint64 `json:"fromEpoch"`
	Through   uint64 `json:"through"`
	// KeepSystem: the new epoch holds the system prompt.
	KeepSystem bool `json:"keepSystem,omitzero"`
	// Cleared counts the messages removed (each held by the Checkpoint); Kept those kept
	// because the Checkpoint does not hold them as they are now.
	Cleared int `json:"cleared"`
	Kept    int `json:"kept,omitzero"`
}

// ResetRecord encodes the record that opens a reset epoch.
func ResetRecord(r *Reset) (history.Record, error) {
	return encode(ResetRecordID, &envelope{Kind: KindReset, Reset: r})
}

// ResetState is what a reset leaves of live, a conversation whose earlier state held (the
// Reset Checkpoint's snapshot) was stored first: the session fields, the system prompt when
// keepSystem, and every message, subagent thread, raw record and adapter report that held does
// not hold as it is now (appended or changed after the snapshot), so nothing acknowledged is
// removed unless the Checkpoint holds it. Messages compare by content (their sequence and turn
// numbers aside), so an epoch change between the snapshot and the reset keeps nothing extra.
func ResetState(live, held *conversation.State, keepSystem bool) (out conversation.State, cleared int) {
	out = conversation.NewState(live.SessionID)
	out.CWD, out.Extra, out.Source = live.CWD, live.Extra, live.Source
	if keepSystem && live.System != nil {
		sys := *live.System
		out.System = &sys
	}
	heldMsgs := map[string][]byte{}
	for i := range held.Messages {
		heldMsgs[held.Messages[i].ID] = messageKey(&held.Messages[i])
	}
	for i := range live.Messages {
		if k, ok := heldMsgs[live.Messages[i].ID]; ok && bytes.Equal(k, messageKey(&live.Messages[i])) {
			cleared++
			continue
		}
		m := live.Messages[i]
		m.Seq, m.Turn = 0, 0
		out.Messages = append(out.Messages, m)
	}
	out.Subagents = notHeld(live.Subagents, held.Subagents)
	out.Records = notHeld(live.Records, held.Records)
	out.Adapters = notHeld(live.Adapters, held.Adapters)
	return out, cleared
}

// messageKey is a message's content as JSON, without the numbers its position gives it.
func messageKey(m *conversation.Message) []byte {
	c := *m
	c.Seq, c.Turn = 0, 0
	return jsonKey(&c)
}

func jsonKey(v any) []byte {
	b, err := json.Marshal(v, codec, json.Deterministic(true))
	if err != nil {
		return []byte(err.Error()) // never equal to a marshalled value: kept
	}
	return b
}

// notHeld keeps the items of live that held does not hold (by content), in order.
func notHeld[T any](live, held []T) []T {
	seen := map[string]int{}
	for i := range held {
		seen[string(jsonKey(&held[i]))]++
	}
	var out []T
	for i := range live {
		k := string(jsonKey(&live[i]))
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		out = append(out, live[i])
	}
	return out
}

// ResetRecords is what opens the epoch a reset writes: the reset record, the state ResetState
// left, and the initialisation marker (nothing is imported again).
func ResetRecords(r *Reset, s *conversation.State, epoch uint64) ([]history.Record, error) {
	first, err := ResetRecord(r)
	if err != nil {
		return nil, err
	}
	// The prefix keeps this epoch's ids of raw records and adapter reports apart from those
	// of the entries carried after Through.
	state, err := StateRecords(s, "e"+strconv.FormatUint(epoch, 10)+":")
	if err != nil {
		return nil, err
	}
	marker, err := InitializedRecord()
	if err != nil {
		return nil, err
	}
	return append(append([]history.Record{first}, state...), marker), nil
}
