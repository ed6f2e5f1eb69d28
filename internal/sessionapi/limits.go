package sessionapi

import (
	"flag"
	"time"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
)

// Rate is a token bucket: PerSecond sustained, Burst at once. A PerSecond of zero or less
// disables it.
type Rate struct {
	PerSecond float64
	Burst     int
}

// refill is how long an emptied bucket takes to fill again: a bucket unused that long is the
// same as a new one.
func (r Rate) refill() time.Duration {
	return time.Duration(float64(r.Burst) / r.PerSecond * float64(time.Second))
}

// Limits bound what one request, one caller and one replica may cost. A zero field takes its
// value from DefaultLimits; a negative count or rate switches that bound off.
type Limits struct {
	// MaxBodyBytes bounds a request body (413 past it).
	MaxBodyBytes int64
	// MaxBatch bounds the messages of one append (413 past it).
	MaxBatch int
	// MaxPage bounds a read page.
	MaxPage int
	// PerConversation and PerIdentity are request rates (429 past them). An identity is a
	// token's user (username, UID) and, for a token bound to a pod, that pod.
	PerConversation Rate
	PerIdentity     Rate
	// InFlight bounds the requests served at once by this replica (503 past it) and
	// InFlightPerIdentity those of one identity (429 past it); follow streams are counted apart.
	InFlight            int
	InFlightPerIdentity int
	// BodyBytesInFlight and BodyBytesInFlightPerIdentity bound the request bodies being
	// received and decoded at once (503 and 429 past them). A body counts with its
	// Content-Length, or MaxBodyBytes when it has none.
	BodyBytesInFlight            int64
	BodyBytesInFlightPerIdentity int64
	// AnswerBytesInFlight and AnswerBytesInFlightPerIdentity bound the encoded answers held
	// while they are written to clients (503 and 429 past them): a client that never reads
	// holds its answer until the write times out. One answer larger than a bound is served
	// while nothing else is held under it.
	AnswerBytesInFlight            int64
	AnswerBytesInFlightPerIdentity int64
	// HistoryBytesPerIdentity bounds the history bytes of the whole-history answers (a
	// conversation, its state, its resume bundle, its transcripts) and of the pages of messages
	// one identity is served per second (429 past it): building one and writing it cost CPU in proportion to the
	// history, whatever the request rate. Unless set, the burst admits one answer from the
	// largest history a store keeps.
	HistoryBytesPerIdentity Rate
	// HistoryBytesPerNamespace bounds the same bytes for all the identities that read the
	// conversations of one namespace together (429 past it): a tenant runs as many identities
	// (pods, ServiceAccounts) as it likes. Unless set, the burst admits one answer from the
	// largest history a store keeps.
	HistoryBytesPerNamespace Rate
	// AnswerCacheBytes bounds the encoded whole-history answers a replica keeps to serve
	// again while their conversation is unchanged (see wholehistory.go); an answer larger
	// than it is not kept.
	AnswerCacheBytes int64
	// FollowsPerIdentity and FollowsPerConversation bound open follow streams (429 past them).
	FollowsPerIdentity     int
	FollowsPerConversation int
	// FollowReauthorize is how often an open follow stream checks its token and access again;
	// a stream whose caller lost either ends (see docs/session-api.md for the bound).
	FollowReauthorize time.Duration
}

// DefaultLimits are the limits cmd/manager starts with. The rates admit the Session API
// benchmark (many conversations under one identity, each written by one client waiting for
// its answers: docs/benchmarks.md) with room to spare; the in-flight bounds keep a replica's
// memory for bodies well under its limit.
var DefaultLimits = Limits{
	MaxBodyBytes: 4 << 20, MaxBatch: 500, MaxPage: 1000,
	PerConversation: Rate{PerSecond: 200, Burst: 400},
	PerIdentity:     Rate{PerSecond: 2000, Burst: 4000},
	InFlight:        512, InFlightPerIdentity: 128,
	BodyBytesInFlight: 128 << 20, BodyBytesInFlightPerIdentity: 32 << 20,
	AnswerBytesInFlight: 128 << 20, AnswerBytesInFlightPerIdentity: 32 << 20,
	HistoryBytesPerIdentity:  Rate{PerSecond: 16 << 20, Burst: parleyv1alpha1.MaxHistoryBytes},
	HistoryBytesPerNamespace: Rate{PerSecond: 64 << 20, Burst: parleyv1alpha1.MaxHistoryBytes},
	AnswerCacheBytes:         64 << 20,
	FollowsPerIdentity:       16, FollowsPerConversation: 8,
	FollowReauthorize: 30 * time.Second,
}

// withDefaults fills the zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	fill(&l.MaxBodyBytes, d.MaxBodyBytes)
	fill(&l.MaxBatch, d.MaxBatch)
	fill(&l.MaxPage, d.MaxPage)
	fillRate(&l.PerConversation, d.PerConversation)
	fillRate(&l.PerIdentity, d.PerIdentity)
	fill(&l.InFlight, d.InFlight)
	fill(&l.InFlightPerIdentity, d.InFlightPerIdentity)
	fill(&l.BodyBytesInFlight, d.BodyBytesInFlight)
	fill(&l.BodyBytesInFlightPerIdentity, d.BodyBytesInFlightPerIdentity)
	fill(&l.AnswerBytesInFlight, d.AnswerBytesInFlight)
	fill(&l.AnswerBytesInFlightPerIdentity, d.AnswerBytesInFlightPerIdentity)
	fillHistoryRate(&l.HistoryBytesPerIdentity, d.HistoryBytesPerIdentity)
	fillHistoryRate(&l.HistoryBytesPerNamespace, d.HistoryBytesPerNamespace)
	fill(&l.AnswerCacheBytes, d.AnswerCacheBytes)
	fill(&l.FollowsPerIdentity, d.FollowsPerIdentity)
	fill(&l.FollowsPerConversation, d.FollowsPerConversation)
	fill(&l.FollowReauthorize, d.FollowReauthorize)
	return l
}

func fill[T int | int64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// fillRate takes the default rate when none is set, and a burst of twice the rate (at least
// one) when only the rate is.
func fillRate(r *Rate, d Rate) {
	if r.PerSecond == 0 {
		*r = d
	}
	if r.Burst <= 0 {
		r.Burst = max(int(2*r.PerSecond), 1)
	}
}

// fillHistoryRate is fillRate for history bytes: the burst is at least the largest history,
// so that one answer of any history is served from a full bucket.
func fillHistoryRate(r *Rate, d Rate) {
	if r.PerSecond == 0 {
		*r = d
	}
	if r.Burst <= 0 {
		r.Burst = max(int(2*r.PerSecond), parleyv1alpha1.MaxHistoryBytes)
	}
}

// Flags binds the limits an operator tunes to fs as --session-api-… flags (bursts are twice
// the rates), with DefaultLimits as their defaults; a negative value switches a bound off.
func (l *Limits) Flags(fs *flag.FlagSet) {
	d := DefaultLimits
	fs.Float64Var(&l.PerConversation.PerSecond, "session-api-conversation-rate", d.PerConversation.PerSecond,
		"Session API requests per second to one conversation (429 past it; bursts of twice as many).")
	fs.Float64Var(&l.PerIdentity.PerSecond, "session-api-identity-rate", d.PerIdentity.PerSecond,
		"Session API requests per second from one identity (a token's user, and its pod for a pod-bound token; 429 past it; bursts of twice as many).")
	fs.IntVar(&l.InFlight, "session-api-max-in-flight", d.InFlight,
		"Session API requests served at once by a replica, follow streams apart (503 past it).")
	fs.IntVar(&l.InFlightPerIdentity, "session-api-max-in-flight-per-identity", d.InFlightPerIdentity,
		"Session API requests of one identity served at once, follow streams apart (429 past it).")
	fs.Int64Var(&l.BodyBytesInFlight, "session-api-max-body-bytes-in-flight", d.BodyBytesInFlight,
		"Request body bytes a replica receives and decodes at once, each body counted at its Content-Length or the 4 MiB body limit (503 past it).")
	fs.Int64Var(&l.BodyBytesInFlightPerIdentity, "session-api-max-body-bytes-in-flight-per-identity", d.BodyBytesInFlightPerIdentity,
		"Request body bytes of one identity received and decoded at once (429 past it).")
	fs.Int64Var(&l.AnswerBytesInFlight, "session-api-max-answer-bytes-in-flight", d.AnswerBytesInFlight,
		"Encoded answer bytes a replica holds at once while clients read them (503 past it; one larger answer is served alone).")
	fs.Int64Var(&l.AnswerBytesInFlightPerIdentity, "session-api-max-answer-bytes-in-flight-per-identity", d.AnswerBytesInFlightPerIdentity,
		"Encoded answer bytes of one identity held at once while it reads them (429 past it; one larger answer is served alone).")
	fs.Float64Var(&l.HistoryBytesPerIdentity.PerSecond, "session-api-identity-history-rate", d.HistoryBytesPerIdentity.PerSecond,
		"History bytes per second of the whole-history answers (a conversation, its state, resume bundle and transcripts) and pages of messages one identity is served (429 past it; bursts of 256 MiB, the largest history).")
	fs.Float64Var(&l.HistoryBytesPerNamespace.PerSecond, "session-api-namespace-history-rate", d.HistoryBytesPerNamespace.PerSecond,
		"History bytes per second of the same answers all identities together are served from the conversations of one namespace (429 past it; bursts of 256 MiB).")
	fs.Int64Var(&l.AnswerCacheBytes, "session-api-answer-cache-bytes", d.AnswerCacheBytes,
		"Bytes of encoded whole-history answers a replica keeps to serve again while their conversation is unchanged (an answer larger than it is not kept).")
	fs.IntVar(&l.FollowsPerIdentity, "session-api-max-follows-per-identity", d.FollowsPerIdentity,
		"Open follow streams (GET messages?follow=true) of one identity (429 past it).")
	fs.IntVar(&l.FollowsPerConversation, "session-api-max-follows-per-conversation", d.FollowsPerConversation,
		"Open follow streams of one conversation, its own agent pod's apart (429 past it).")
	fs.DurationVar(&l.FollowReauthorize, "session-api-follow-reauthorize", d.FollowReauthorize,
		"How often an open follow stream checks its token and access again; a revoked caller's stream ends within this plus the review cache's 10 s.")
}
