package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
	"github.com/parley-dev/parley/pkg/history/s3"
)

// listingEndpoint answers every listing with page(n) for its n-th page, and counts pages.
func listingEndpoint(t *testing.T, page func(n int) string) (engine.Objects, *atomic.Int64) {
	t.Helper()
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !r.URL.Query().Has("list-type") {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(page(int(pages.Add(1)))))
	}))
	t.Cleanup(srv.Close)
	st, err := s3.New(s3.Config{
		Endpoint: srv.URL, Bucket: "listing", Region: "us-east-1", Addressing: s3.AddressingPath,
		AccessKeyID: "id", SecretAccessKey: "secret", MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	objs, err := st.(interface {
		ObjectsOf(name string) (engine.Objects, error)
	}).ObjectsOf("conversation")
	if err != nil {
		t.Fatal(err)
	}
	return objs, &pages
}

// listPage is a ListObjectsV2 answer holding keys, truncated (more to come) when next is set.
func listPage(keys []string, next string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>listing</Name>`)
	fmt.Fprintf(&b, "<KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>%v</IsTruncated>", len(keys), next != "")
	if next != "" {
		fmt.Fprintf(&b, "<NextContinuationToken>%s</NextContinuationToken>", next)
	}
	for _, k := range keys {
		fmt.Fprintf(&b, `<Contents><Key>%s</Key><Size>1</Size><ETag>"e"</ETag><LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents>`, k)
	}
	b.WriteString("</ListBucketResult>")
	return b.String()
}

// An endpoint whose listing goes on and on (or a bucket someone filled on purpose) gets ErrCorrupt
// once it passes the most objects a history holds, having been asked for a bounded number of
// pages: the listing is not read whole.
func TestListingStopsPastTheMostObjects(t *testing.T) {
	objs, pages := listingEndpoint(t, func(n int) string {
		keys := make([]string, 1000)
		for i := range keys {
			keys[i] = fmt.Sprintf("conversation/s-%08d-%04d", n, i)
		}
		next := fmt.Sprintf("page-%d", n+1)
		if n == 300 { // ends, so that a store reading listings whole fails here rather than hangs
			next = ""
		}
		return listPage(keys, next)
	})
	_, err := objs.List(context.Background(), "")
	if !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("an endless listing: %v, want ErrCorrupt", err)
	}
	if n := pages.Load(); n > 101 {
		t.Fatalf("the store asked for %d pages of 1,000 keys", n)
	}
}

// One page far longer than any honest page (1,000 keys) is refused with ErrCorrupt: the client
// would decode it whole before yielding a key.
func TestListingPageIsBounded(t *testing.T) {
	objs, _ := listingEndpoint(t, func(int) string {
		return listPage([]string{"conversation/" + strings.Repeat("k", 64<<20)}, "")
	})
	var err error
	if _, err = objs.List(context.Background(), ""); !errors.Is(err, history.ErrCorrupt) {
		t.Fatalf("a listing page of 64 MiB: %v, want ErrCorrupt", err)
	}
}

// An honest listing of several pages is read whole.
func TestListingReadsEveryPage(t *testing.T) {
	objs, pages := listingEndpoint(t, func(n int) string {
		next := ""
		if n < 3 {
			next = fmt.Sprintf("page-%d", n+1)
		}
		return listPage([]string{fmt.Sprintf("conversation/s-%d", n)}, next)
	})
	infos, err := objs.List(context.Background(), "")
	if err != nil || len(infos) != 3 || infos[2].Key != "s-3" || pages.Load() != 3 {
		t.Fatalf("listing of three pages: %v %v after %d pages", infos, err, pages.Load())
	}
}
