package s3_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parley-dev/parley/pkg/history/s3"
)

func TestCheckConditionalWritesOnARealServer(t *testing.T) {
	cfg := configFor(server.Endpoint, newBucket(t), 0)
	if err := s3.CheckConditionalWrites(context.Background(), cfg); err != nil {
		t.Fatalf("versitygw honours conditional writes, the probe says: %v", err)
	}
}

// A store that answers every PUT with 200 whatever its preconditions, as some S3-compatible
// stores did before they supported conditional writes. The probe must refuse it.
func TestCheckConditionalWritesRefusesAStoreThatIgnoresThem(t *testing.T) {
	var conditional int
	ignoring := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.Method {
		case http.MethodPut:
			if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Match") != "" {
				conditional++
			}
			w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
			w.WriteHeader(http.StatusOK)
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default: // GET ?location, should the client ask
			w.Header().Set("Content-Type", "application/xml")
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint>us-east-1</LocationConstraint>`)
		}
	}))
	defer ignoring.Close()

	cfg := configFor(strings.TrimPrefix(ignoring.URL, "http://"), "probe-bucket", 0)
	cfg.Region = "us-east-1"
	err := s3.CheckConditionalWrites(context.Background(), cfg)
	if !errors.Is(err, s3.ErrConditionalWritesUnsupported) {
		t.Fatalf("err = %v, want ErrConditionalWritesUnsupported", err)
	}
	if conditional < 2 {
		t.Fatalf("the probe sent %d conditional PUTs, want at least 2", conditional)
	}
}
