package s3

import (
	"fmt"
	"io"
	"net/http"

	"github.com/parley-dev/parley/pkg/history"
)

// Listings are the other answer of an S3 endpoint whose size it chooses (the author of a
// Conversation chooses the endpoint; whoever writes the bucket chooses what is in it). A
// listing is read in pages of listPageKeys, each answer at most maxListPageBytes, and ends with
// ErrCorrupt past maxListedObjects: far more objects than a history ever holds (a segment per
// MiB of its capped size, a few tail objects and checkpoints), so only a bucket someone filled
// on purpose gets there.
const (
	listPageKeys     = 1000
	maxListPageBytes = 4 << 20 // 1,000 keys of the longest names take well under 1 MiB of XML
	maxListedObjects = 100_000
)

var errListPageTooLong = fmt.Errorf("%w: a listing page longer than %d bytes", history.ErrCorrupt, maxListPageBytes)

// boundedListings stops reading a listing's answer past maxListPageBytes: the client decodes a
// whole page before it yields its first key.
type boundedListings struct{ http.RoundTripper }

func (b boundedListings) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.RoundTripper.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && req.URL.Query().Has("list-type") {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxListPageBytes}
	}
	return resp, err
}

// cappedBody fails a read past left bytes with errListPageTooLong.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errListPageTooLong
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errListPageTooLong
	}
	return n, err
}
