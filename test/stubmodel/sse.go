package stubmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// eventWriter writes server-sent events, flushing each.
type eventWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	return &eventWriter{w: w, f: f}
}

// send writes one event; an empty name writes a data-only event (as Chat Completions streams).
func (e *eventWriter) send(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		_, _ = fmt.Fprintf(e.w, "event: %s\n", name)
	}
	_, _ = fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

// done writes Chat Completions' end-of-stream marker.
func (e *eventWriter) done() {
	_, _ = fmt.Fprint(e.w, "data: [DONE]\n\n")
	if e.f != nil {
		e.f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
