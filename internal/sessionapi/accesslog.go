package sessionapi

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// accessEntry is what a request's access-log line says beyond the request itself; checked
// fills it in once it knows the caller and the conversation.
type accessEntry struct {
	user, uid, pod string
	conversation   types.NamespacedName
}

type accessEntryKey struct{}

// entryOf is the request's access-log entry; a request outside accessLogged gets one that
// goes nowhere.
func entryOf(r *http.Request) *accessEntry {
	if e, ok := r.Context().Value(accessEntryKey{}).(*accessEntry); ok {
		return e
	}
	return &accessEntry{}
}

func (e *accessEntry) identify(c *caller, key types.NamespacedName) {
	e.user, e.uid, e.pod, e.conversation = c.user.Username, c.user.UID, c.podKey, key
}

// accessLogged writes one line per request to log at info level: who (username and UID, the
// pod for an agent's token), which conversation, what (method, route, whether it follows),
// from where, the status, the bytes each way and the duration. Never a body or a query.
func accessLogged(log logr.Logger, now func() time.Time, next http.Handler) http.Handler {
	if log.GetSink() == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		e := &accessEntry{}
		rec := &recordingWriter{ResponseWriter: w}
		body := &countingReader{ReadCloser: r.Body}
		inner := r.WithContext(context.WithValue(r.Context(), accessEntryKey{}, e))
		if r.Body != nil {
			inner.Body = body
		}
		next.ServeHTTP(rec, inner)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		log.Info("request", "method", r.Method, "route", inner.Pattern, "follow", r.URL.Query().Get("follow") == "true",
			"namespace", e.conversation.Namespace, "conversation", e.conversation.Name,
			"user", e.user, "uid", e.uid, "pod", e.pod, "source", sourceAddress(r),
			"status", status, "requestBytes", body.n, "responseBytes", rec.bytes,
			"durationMs", float64(now().Sub(start).Microseconds())/1000)
	})
}

// recordingWriter notes the status and counts the bytes written; it passes Flush on (a
// follow stream needs it) and unwraps for http.ResponseController.
type recordingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recordingWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type countingReader struct {
	io.ReadCloser
	n int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n += int64(n)
	return n, err
}
