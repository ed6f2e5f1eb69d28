// Package wire holds the Session API's request and response bodies, version v1: plain structs
// shared by the server (internal/sessionapi), the Go client (pkg/client) and tests. It imports
// nothing of Kubernetes or controller-runtime, so an agent can use it alone.
package wire

import (
	"time"

	"github.com/parley-dev/parley/pkg/conversation"
)

// Audience is the audience of the ServiceAccount tokens the Session API accepts.
const Audience = "parley"

// ProblemContentType is the media type of every error body (RFC 9457).
const ProblemContentType = "application/problem+json"

// The Session API's endpoints live under two prefixes: APIPath on the Session API itself (a
// bearer token: agents, direct clients), and AggregatedPath on the Kubernetes API server, which
// authenticates the caller and proxies to the Session API (API aggregation: kubectl, people).
const (
	APIPath           = "/v1"
	AggregatedGroup   = "session.parley.dev"
	AggregatedVersion = "v1alpha1"
	AggregatedPath    = "/apis/" + AggregatedGroup + "/" + AggregatedVersion
)

// ConversationPath is the path of one conversation under APIPath; the others add a suffix.
func ConversationPath(namespace, name string) string {
	return APIPath + ConversationSubpath(namespace, name)
}

// ConversationSubpath is the path of one conversation below an API prefix.
func ConversationSubpath(namespace, name string) string {
	return "/namespaces/" + namespace + "/conversations/" + name
}

// Conversation is GET …/conversations/{name}: what a client needs to know about a session.
type Conversation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	SessionID string `json:"sessionId"`
	Phase     string `json:"phase,omitempty"`
	// Epoch and Sequence are the head of the history: the last stored sequence.
	Epoch    uint64 `json:"epoch"`
	Sequence uint64 `json:"sequence"`
	Messages int    `json:"messages"`
	Turns    int    `json:"turns"`
	// Tokens counts the context the history costs; Limit is spec.context.maxTokens (0: none).
	Tokens    int        `json:"tokens"`
	Limit     int64      `json:"limit,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// AppendRequest is POST …/messages: messages appended in order. Every message needs an id: a
// retry with the same ids stores nothing twice and answers with the same sequences.
type AppendRequest struct {
	Messages []conversation.Message `json:"messages"`
}

// AppendResponse answers an append once the store acknowledged every message.
type AppendResponse struct {
	Epoch uint64 `json:"epoch"`
	// Sequences are the messages' sequence numbers, in request order.
	Sequences []uint64 `json:"sequences"`
}

// MessagesPage is GET …/messages?after=SEQ&limit=N: messages whose sequence is after SEQ.
type MessagesPage struct {
	Epoch    uint64                 `json:"epoch"`
	Messages []conversation.Message `json:"messages"`
	// Next is the value of after for the next page; 0 when this page reached the head.
	Next uint64 `json:"next,omitempty"`
}

// Problem is an error body (RFC 9457). Type is stable: clients match on it.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Problem types.
const (
	ProblemMalformed    = "https://parley.dev/problems/malformed"
	ProblemUnauthorized = "https://parley.dev/problems/unauthorized"
	ProblemForbidden    = "https://parley.dev/problems/forbidden"
	ProblemNotFound     = "https://parley.dev/problems/not-found"
	ProblemConflict     = "https://parley.dev/problems/conflict"
	ProblemTooLarge     = "https://parley.dev/problems/too-large"
	ProblemInvalid      = "https://parley.dev/problems/invalid"
	ProblemOverloaded   = "https://parley.dev/problems/overloaded"
	ProblemUnavailable  = "https://parley.dev/problems/storage-unavailable"
	ProblemNotReady     = "https://parley.dev/problems/not-ready"
	// ProblemHistoryCorrupt: the stored history failed verification (edited, truncated or
	// hostile bytes); retrying does not help, the Conversation's HistoryAvailable condition says why.
	ProblemHistoryCorrupt = "https://parley.dev/problems/history-corrupt"
)

func (p *Problem) Error() string {
	if p.Detail != "" {
		return p.Title + ": " + p.Detail
	}
	return p.Title
}

// EventsRequest is POST …/events: reducer events applied in order. Each carries an id the
// client repeats on a retry, so an event is stored once.
type EventsRequest struct {
	Events []Event `json:"events"`
}

// Event is one reducer event with its idempotency id.
type Event struct {
	ID    string             `json:"id"`
	Event conversation.Event `json:"event"`
}

// EventsResponse answers once every event is durable.
type EventsResponse struct {
	Sequences []uint64 `json:"sequences"`
}

// AdapterStateRequest is PUT …/adapter-state: the agent adapter's latest state (e.g. the
// Claude Agent SDK's session id); the latest report wins.
type AdapterStateRequest struct {
	// Type is the adapter type, e.g. claude-agent-sdk.
	Type string `json:"type"`
	// State is the adapter's state as conversation.DecodeAdapterState reads it.
	State map[string]any `json:"state"`
}

// CheckpointRequest is POST …/checkpoints: a Manual Checkpoint of the conversation.
type CheckpointRequest struct {
	// Name of the Checkpoint; generated when empty.
	Name string `json:"name,omitempty"`
	// Turn to snapshot; the latest complete turn when nil.
	Turn *int64 `json:"turn,omitempty"`
}

// CheckpointResponse names the Checkpoint created; its status says when the snapshot is Ready.
type CheckpointResponse struct {
	Name string `json:"name"`
}

// CompactResponse acknowledges a compaction request; status.lastCompaction reports its end.
type CompactResponse struct {
	RequestedAt time.Time `json:"requestedAt"`
}

// StateResponse is GET …/state: the whole conversation of the current epoch (system prompt,
// messages, subagent threads, adapter reports, transcript records), as of Sequence.
type StateResponse struct {
	Epoch    uint64 `json:"epoch"`
	Sequence uint64 `json:"sequence"`
	// Tokens counts the context the state costs with the conversation's tokenizer.
	Tokens int                `json:"tokens"`
	State  conversation.State `json:"state"`
}

// ImportRequest is POST …/import: one part of a whole conversation state (an imported
// transcript), appended as the records a seed or a fork writes — session fields, system
// prompt, messages with the transcript records around them, subagent threads, adapter
// reports — so that what messages and events cannot carry (records that are no message, a
// transcript's own fields) is kept. Parts are appended in order; ID and Part name the records
// that have no id of their own, so a retried part stores nothing twice.
type ImportRequest struct {
	// ID names the import (1-64 letters, digits, '.', '_', '-'), e.g. the file's digest.
	ID   string `json:"id"`
	Part int    `json:"part"`
	// State is the part: a state holding some of the whole's messages, records, subagents.
	State conversation.State `json:"state"`
}

// MaxImportItems bounds the items of one import part (ImportItems): a part past it is refused
// with 413. Each item becomes a history record far larger than the few bytes the smallest
// item takes in a body (its id, envelope and encoding), so the body bound alone would let
// one part make hundreds of thousands of records and cost the replica many times its size
// in memory. Real transcript items are hundreds of bytes: a part of the most a body holds
// stays under this. A client cuts its parts by this count as well as by bytes.
const MaxImportItems = 20_000

// ImportItems counts the items of an import part that each become a history record: its
// messages, transcript records, subagent threads (one each, with their messages and their
// own subagents) and adapter reports.
func ImportItems(st *conversation.State) int {
	return len(st.Messages) + len(st.Records) + len(st.Subagents) + len(st.Adapters)
}

// ImportResponse answers once every record of the part is durable.
type ImportResponse struct {
	Sequences []uint64 `json:"sequences"`
}

// ResetRequest is POST …/reset: clear the conversation's history once a Reset Checkpoint holds
// it. ID (or an Idempotency-Key header) makes it safe to retry: a retry with the same id answers
// the first reset's result instead of clearing again (the history may have grown since).
type ResetRequest struct {
	// ID identifies this reset; without one every call is a reset of its own. pkg/client
	// makes one per call when it is empty and repeats it on its retries.
	ID string `json:"id,omitempty"`
	// KeepSystem keeps the system prompt in the cleared history.
	KeepSystem bool `json:"keepSystem,omitempty"`
}

// ResetResponse says what a reset did, once the new epoch is written.
type ResetResponse struct {
	// Checkpoint names the Reset Checkpoint that holds the history as it was.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Epoch is the epoch the cleared history starts; sequences start again from 1.
	Epoch uint64 `json:"epoch,omitempty"`
	// Cleared counts the messages removed; Kept those kept because the Checkpoint does not
	// hold them as they are (appended or changed while it was taken).
	Cleared int `json:"cleared"`
	Kept    int `json:"kept,omitempty"`
}

// IdempotencyKeyHeader lets a client make a PUT of adapter state or a reset safe to retry.
const IdempotencyKeyHeader = "Idempotency-Key"

// ResumeBundle is GET …/resume: the resume bundle a new agent pod would have mounted now, cut
// at ?turn=N (default: the latest complete turn). Files maps each path under the mount
// (conversation.json, messages.openai.json, messages.anthropic.json, claude/...) to its content.
type ResumeBundle struct {
	SessionID string            `json:"sessionId"`
	Turn      int               `json:"turn"`
	Attempt   int32             `json:"attempt"`
	Files     map[string]string `json:"files"`
}
