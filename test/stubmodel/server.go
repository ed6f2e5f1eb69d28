package stubmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is the stub model: an http.Handler that answers model requests from its script and
// records them. The zero value is not usable: call New.
type Server struct {
	now func() time.Time

	mu       sync.Mutex
	script   []Reply
	next     int
	requests []Request
	closed   chan struct{}
	once     sync.Once
}

// New is a stub answering with the given script; now stamps the recorded requests.
func New(script []Reply, now func() time.Time) (*Server, error) {
	s := &Server{now: now, closed: make(chan struct{})}
	if err := s.SetScript(script); err != nil {
		return nil, err
	}
	return s, nil
}

// SetScript replaces the script; the next request takes its first reply. The record stays.
func (s *Server) SetScript(script []Reply) error {
	for i, r := range script {
		if err := r.validate(); err != nil {
			return fmt.Errorf("reply %d: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.next = append([]Reply(nil), script...), 0
	return nil
}

// Requests is the record: every model request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Close answers no more held requests: each ends without a reply.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closed) })
}

// ServeHTTP routes the model APIs by path (matched loosely, since clients put their base URL's
// path and query in front: Claude Code posts to /v1/messages?beta=true, the OpenAI client to
// BASE/responses) and the stub's own endpoints under /_stub/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet && p == "/_stub/requests":
		writeJSON(w, s.Requests())
	case r.Method == http.MethodPut && p == "/_stub/script":
		var script []Reply
		if err := json.NewDecoder(r.Body).Decode(&script); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.SetScript(script); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 1})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		s.serveModel(w, r, AnthropicMessages)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		s.serveModel(w, r, OpenAIResponses)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/chat/completions"):
		s.serveModel(w, r, OpenAIChat)
	default:
		http.NotFound(w, r)
	}
}

// serveModel records a model request and answers it with the next reply of the script.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, api API) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var (
		stream       bool
		conversation []Entry
		answer       func(id string, seq int, reply Reply)
	)
	switch api {
	case AnthropicMessages:
		var req anthropicRequest
		req, conversation, err = anthropicConversation(body)
		stream, answer = req.Stream, func(id string, _ int, reply Reply) { writeAnthropic(w, req, id, reply) }
	case OpenAIResponses:
		var req responsesRequest
		req, conversation, err = responsesConversation(body)
		stream, answer = req.Stream, func(id string, seq int, reply Reply) { writeResponses(w, req, id, seq, reply) }
	case OpenAIChat:
		var req chatRequest
		req, conversation, err = chatConversation(body)
		stream, answer = req.Stream, func(id string, seq int, reply Reply) { writeChat(w, req, id, seq, reply) }
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "the stub cannot read this request: "+err.Error())
		return
	}

	s.mu.Lock()
	seq := len(s.requests) + 1
	reply, ok := Reply{}, s.next < len(s.script)
	if ok {
		reply = s.script[s.next]
		s.next++
	}
	s.requests = append(s.requests, Request{
		Seq: seq, API: api, Path: r.URL.RequestURI(), Time: s.now(), Stream: stream,
		Held: ok && reply.Hold, Conversation: conversation, Body: json.RawMessage(body),
	})
	s.mu.Unlock()

	switch {
	case !ok:
		// 400, not 5xx: SDKs would retry a server error, and a missing reply is the test's bug.
		apiError(w, http.StatusBadRequest, fmt.Sprintf("the stub's script has no reply for request %d", seq))
	case reply.Hold:
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
	default:
		answer("stub"+strconv.Itoa(seq), seq, reply)
	}
}

// apiError answers in the error shape both providers use.
func apiError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": "invalid_request_error", "message": message},
	})
}
