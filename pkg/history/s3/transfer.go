package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/parley-dev/parley/pkg/history"
)

// DefaultTransferTimeout bounds one S3 request, its body included, when the Config names
// none: the largest object (64 MiB) arrives well within it over any link a store is used over.
const DefaultTransferTimeout = 2 * time.Minute

// errTransferTimedOut ends a request whose exchange outlived the transfer timeout. It is
// transient: the endpoint's fault, not the caller's context.
var errTransferTimedOut = fmt.Errorf("%w: an S3 request outlived its transfer timeout", history.ErrUnavailable)

func (c Config) transferTimeout() time.Duration {
	if c.TransferTimeout > 0 {
		return c.TransferTimeout
	}
	return DefaultTransferTimeout
}

// boundedTransfers puts every request, its response body included, under the transfer
// timeout. The transport bounds the wait for headers alone, and callers may read without a
// deadline (a reconcile), so an endpoint that sends its headers and then its body slowly or
// never would hold the caller and its part of the decode budget for as long as it liked.
type boundedTransfers struct {
	http.RoundTripper
	timeout time.Duration
}

func (b boundedTransfers) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeoutCause(req.Context(), b.timeout, errTransferTimedOut)
	resp, err := b.RoundTripper.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, timedOut(ctx, err)
	}
	resp.Body = &deadlineBody{ReadCloser: resp.Body, ctx: ctx, cancel: cancel}
	return resp, nil
}

// deadlineBody reads a response body under its request's transfer timeout.
type deadlineBody struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = timedOut(d.ctx, err)
	}
	return n, err
}

func (d *deadlineBody) Close() error {
	defer d.cancel()
	return d.ReadCloser.Close()
}

// timedOut names the transfer timeout as the cause of err when it is.
func timedOut(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errTransferTimedOut) {
		return fmt.Errorf("%w: %w", errTransferTimedOut, err)
	}
	return err
}
