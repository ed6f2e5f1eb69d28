package metrics

import "github.com/prometheus/client_golang/prometheus"

// SessionAPIRequests counts the Session API's answers by route (the endpoint, e.g. "POST
// messages"; never a namespace, a name or a session id) and HTTP status code.
var SessionAPIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_session_api_requests_total",
	Help: "Session API requests answered, by route and HTTP status code.",
}, []string{"route", "code"})

// SessionAPIDuration times the Session API's requests by route, until the answer is written. A
// follow of the messages is a stream that lasts until the client leaves: its route is
// "GET messages (follow)", apart from page reads.
var SessionAPIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "parley_session_api_request_duration_seconds",
	Help:    "Session API request duration, by route.",
	Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600},
}, []string{"route"})

// SessionAPIWholeHistoryAnswers counts the Session API's answers built from a whole history
// (GET conversation, state, resume, transcripts; for GET transcript, the renderings its pages
// are cut from) by route and source: "built" from the history, "cached" (kept from an
// earlier build), "refused" (429: the caller's history bytes per second were spent).
var SessionAPIWholeHistoryAnswers = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "parley_session_api_whole_history_answers_total",
	Help: "Session API answers built from a whole history, by route and source (built, cached, refused).",
}, []string{"route", "source"})
