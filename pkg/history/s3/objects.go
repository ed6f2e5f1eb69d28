package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

type backend struct {
	client *minio.Client
	bucket string
	prefix string
	// budget also bounds the bodies being read at once: an endpoint answering every GET with
	// an object of the largest size costs no more than the budget, however many are read.
	budget *history.DecodeBudget
}

// Objects ignores the owner: objects outside the cluster are removed by the
// controller's finalizer through Store.Delete.
//
// A name is one key segment or several joined by "/" (the operator uses
// "<namespace>/<session id>"), so histories group under their namespace.
// Names must not nest (no name is a "/"-prefix of another): a history's
// objects are the keys under "<prefix>/<name>/".
func (b *backend) Objects(name string, _ *metav1.OwnerReference) (engine.Objects, error) {
	if !validName(name) {
		return nil, fmt.Errorf("s3 history: conversation name %q is not usable as key segments (empty, \".\", \"..\" or a backslash)", name)
	}
	base := name + "/"
	if p := strings.Trim(b.prefix, "/"); p != "" {
		base = p + "/" + base
	}
	return &objects{backend: b, base: base}, nil
}

// validPrefix reports whether a prefix is empty or usable key segments, a trailing '/' allowed:
// a store that maps keys to paths must not resolve it outside the bucket.
func validPrefix(prefix string) bool {
	return prefix == "" || validName(strings.TrimSuffix(prefix, "/"))
}

// validName reports whether every "/"-separated segment of name is a usable key segment.
func validName(name string) bool {
	if name == "" || strings.Contains(name, "\\") {
		return false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

type objects struct {
	*backend
	base string // "<prefix>/<conversation>/"
}

// Get reads at most engine.ReadLimit(maxObjectBytes) bytes: the endpoint and the bucket's
// content are untrusted, and no object this backend writes is longer. A longer object is
// ErrCorrupt, refused from its Content-Length before its body is read when the endpoint sends
// one. One GET: its headers give the ETag and the length of the bytes it returns.
func (o *objects) Get(ctx context.Context, key string) ([]byte, string, error) {
	body, info, _, err := minio.Core{Client: o.client}.GetObject(ctx, o.bucket, o.base+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, "", mapError(key, err)
	}
	defer func() { _ = body.Close() }()
	limit := engine.ReadLimit(maxObjectBytes)
	if info.Size > limit {
		return nil, "", engine.ErrObjectTooLong(key, limit)
	}
	expect := limit // no Content-Length: the most it may be
	if info.Size >= 0 {
		expect = info.Size + bytes.MinRead
	}
	release, err := o.budget.Acquire(ctx, expect)
	if err != nil {
		return nil, "", fmt.Errorf("s3 GET %s: %w", key, err)
	}
	defer release()
	var buf bytes.Buffer
	buf.Grow(int(max(info.Size, 0)) + bytes.MinRead) // no regrowth when the length is true
	if _, err := buf.ReadFrom(io.LimitReader(body, limit+1)); err != nil {
		return nil, "", mapError(key, err)
	}
	if int64(buf.Len()) > limit {
		return nil, "", engine.ErrObjectTooLong(key, limit)
	}
	return buf.Bytes(), info.ETag, nil
}

func (o *objects) put(ctx context.Context, key string, data []byte, opts minio.PutObjectOptions) (string, error) {
	opts.DisableMultipart = true
	opts.ContentType = "application/x-ndjson"
	info, err := o.client.PutObject(ctx, o.bucket, o.base+key, bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		return "", mapError(key, err)
	}
	return info.ETag, nil
}

func (o *objects) Create(ctx context.Context, key string, data []byte) (string, error) {
	var opts minio.PutObjectOptions
	opts.SetMatchETagExcept("*")
	return o.put(ctx, key, data, opts)
}

func (o *objects) Replace(ctx context.Context, key string, data []byte, version string) (string, error) {
	var opts minio.PutObjectOptions
	opts.SetMatchETag(version)
	return o.put(ctx, key, data, opts)
}

func (o *objects) Delete(ctx context.Context, key string) error {
	err := o.client.RemoveObject(ctx, o.bucket, o.base+key, minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(mapError(key, err), history.ErrNotFound) {
		return mapError(key, err)
	}
	return nil
}

func (o *objects) List(ctx context.Context, prefix string) ([]engine.ObjectInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the listing's requests when it stops early
	var out []engine.ObjectInfo
	opts := minio.ListObjectsOptions{Prefix: o.base + prefix, Recursive: true, MaxKeys: listPageKeys}
	for obj := range o.client.ListObjectsIter(ctx, o.bucket, opts) {
		if obj.Err != nil {
			if errors.Is(obj.Err, history.ErrCorrupt) {
				return nil, fmt.Errorf("s3 list: %w", obj.Err)
			}
			return nil, mapError("list", obj.Err)
		}
		if len(out) == maxListedObjects {
			return nil, fmt.Errorf("%w: s3 list: more than %d objects under %s, more than a history holds",
				history.ErrCorrupt, maxListedObjects, opts.Prefix)
		}
		out = append(out, engine.ObjectInfo{Key: strings.TrimPrefix(obj.Key, o.base), Size: obj.Size})
	}
	if err := ctx.Err(); err != nil { // the iterator stops without a word when the context ends
		return nil, err
	}
	return out, nil
}

// mapError turns S3 errors into the history package's typed errors.
func mapError(key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	resp := minio.ToErrorResponse(err)
	var netErr net.Error
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.Code == "NoSuchKey":
		return fmt.Errorf("s3 %s: %w", key, history.ErrNotFound)
	case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == "PreconditionFailed",
		resp.StatusCode == http.StatusConflict: // ConditionalRequestConflict
		return fmt.Errorf("s3 %s: %w: %s", key, history.ErrConflict, resp.Code)
	case resp.Code == "EntityTooLarge":
		return fmt.Errorf("s3 %s: %w: %w", key, history.ErrTooLarge, err)
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests, errors.As(err, &netErr),
		errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("s3 %s: %w: %w", key, history.ErrUnavailable, err)
	default:
		return fmt.Errorf("s3 %s: %w", key, err)
	}
}
