package crashbench

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/parley-dev/parley/test/support/kubeenv"
)

// apiCall is one request the manager sent to the API server (watches are not calls: they
// stay open).
type apiCall struct {
	start, end time.Time
	verb       string // get, list, create, update, patch, delete
	resource   string // e.g. pods, pods/status, configmaps, checkpoints
	name       string // from the path, or from the body of a create
	code       int
}

// recorder keeps every call the manager makes, in order of start.
type recorder struct {
	mu    sync.Mutex
	calls []apiCall
}

// wrap is a rest.Config WrapTransport.
func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") == "true" {
			return rt.RoundTrip(req)
		}
		c := apiCall{start: time.Now()}
		c.verb, c.resource, c.name = classify(req)
		resp, err := rt.RoundTrip(req)
		c.end = time.Now()
		if resp != nil {
			c.code = resp.StatusCode
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		return resp, err
	})
}

// between returns the calls started in [from, to].
func (r *recorder) between(from, to time.Time) []apiCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []apiCall
	for _, c := range r.calls {
		if !c.start.Before(from) && !c.start.After(to) {
			out = append(out, c)
		}
	}
	return out
}

// lastEnd is when the latest call ended.
func (r *recorder) lastEnd() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t time.Time
	for _, c := range r.calls {
		if c.end.After(t) {
			t = c.end
		}
	}
	return t
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// classify reads verb, resource and name from a REST path such as
// /api/v1/namespaces/ns/pods/name/status or /apis/parley.dev/v1alpha1/namespaces/ns/checkpoints.
func classify(req *http.Request) (verb, resource, name string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(req.Method), req.URL.Path, ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		verb = "get"
		if name == "" {
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
		if name == "" {
			name = bodyName(req)
		}
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource, name
}

// decoder reads the bodies of creates: JSON (custom resources) or protobuf (built-in types).
var decoder = func() runtime.Decoder {
	scheme, _ := kubeenv.NewScheme()
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

// bodyName reads metadata.name from a create without consuming the request's body.
func bodyName(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer func() { _ = body.Close() }()
	raw, err := io.ReadAll(body)
	if err != nil {
		return ""
	}
	obj, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// reconcileLog keeps when each Conversation reconcile started.
type reconcileLog struct {
	mu     sync.Mutex
	starts map[string][]time.Time
}

func (l *reconcileLog) note(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.starts == nil {
		l.starts = map[string][]time.Time{}
	}
	l.starts[name] = append(l.starts[name], time.Now())
}

// between returns the reconcile starts of a Conversation in [from, to].
func (l *reconcileLog) between(name string, from, to time.Time) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, t := range l.starts[name] {
		if !t.Before(from) && !t.After(to) {
			out = append(out, t)
		}
	}
	return out
}
