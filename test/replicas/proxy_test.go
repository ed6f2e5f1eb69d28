package replicas_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
)

// answerDropper stands in front of a replica and, for every nth append the replica
// acknowledged, closes the client's connection instead of relaying the answer: the store holds
// the batch, the client does not know it, as when a replica dies between its store's
// acknowledgement and its answer (a SIGKILL hits that window only by chance).
type answerDropper struct {
	target string
	every  int64
	seen   atomic.Int64
	// dropped counts acknowledged appends whose answer never reached the client.
	dropped atomic.Int64
	hc      *http.Client
}

func newAnswerDropper(target string, every int64) (*answerDropper, *httptest.Server) {
	d := &answerDropper{target: target, every: every, hc: &http.Client{}}
	return d, httptest.NewServer(d)
}

func (d *answerDropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, d.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := d.hc.Do(req)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		// The replica is down and nothing was sent: say so (a retryable 502).
		http.Error(w, "replica down", http.StatusBadGateway)
		return
	case err != nil:
		// Cut mid-flight: the client's connection breaks too, as it would without us.
		hijackAndClose(w)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		hijackAndClose(w)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages") && resp.StatusCode == http.StatusOK &&
		d.seen.Add(1)%d.every == 0 {
		d.dropped.Add(1)
		hijackAndClose(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

func hijackAndClose(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
