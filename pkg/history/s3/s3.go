package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// Defaults of the S3 backend.
const (
	DefaultSealBytes = 1 << 20
	// DefaultMaxOpenBytes bounds the entries the index object carries itself: appends that
	// fit cost one PUT.
	DefaultMaxOpenBytes = 64 << 10
	// maxObjectBytes keeps every object a single PUT (no multipart upload,
	// which conditional writes do not cover everywhere).
	maxObjectBytes = 64 << 20
)

// tooLargeHint ends every ErrTooLarge of this backend.
const tooLargeHint = "; raise spec.history.objectStore.maxBytes (up to its ceiling), or let compaction and retention keep the history shorter"

// New returns a Store keeping histories under cfg.Bucket/cfg.Prefix. The
// bucket must exist (see EnsureBucket).
func New(cfg Config) (history.Store, error) {
	client, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.SealBytes == 0 {
		cfg.SealBytes = DefaultSealBytes
	}
	if cfg.MaxOpenBytes == 0 {
		cfg.MaxOpenBytes = DefaultMaxOpenBytes
	}
	if cfg.DecodeBudget == nil {
		cfg.DecodeBudget = history.NewDecodeBudget(history.DefaultDecodeBudget, 0)
	}
	b := &backend{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix, budget: cfg.DecodeBudget}
	return engine.New(b, engine.Options{
		MaxObjectBytes:   maxObjectBytes,
		SealBytes:        cfg.SealBytes,
		MaxTailObjects:   cfg.MaxTailObjects,
		MaxOpenBytes:     cfg.MaxOpenBytes,
		MaxHistoryBytes:  cfg.MaxBytes,
		TooLargeHint:     tooLargeHint,
		Linger:           cfg.Linger,
		CompressSegments: cfg.CompressSegments,
		DecodeBudget:     cfg.DecodeBudget,
	}), nil
}

// EnsureBucket creates the bucket when it does not exist yet.
func EnsureBucket(ctx context.Context, cfg Config) error {
	client, err := newClient(cfg)
	if err != nil {
		return err
	}
	exists, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return mapError("bucket", err)
	}
	if exists {
		return nil
	}
	err = client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region})
	if err == nil {
		return nil
	}
	if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
		return nil
	}
	return mapError("bucket", err)
}

func newClient(cfg Config) (*minio.Client, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 history: no bucket")
	}
	if !validPrefix(cfg.Prefix) {
		return nil, errors.New("s3 history: the prefix must be key segments joined by single '/', without '.' or '..' segments or a backslash")
	}
	host, secure, err := cfg.endpoint()
	if err != nil {
		return nil, err
	}
	transport, err := newTransport(cfg)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupAuto
	switch cfg.Addressing {
	case AddressingPath:
		lookup = minio.BucketLookupPath
	case AddressingVirtualHost:
		lookup = minio.BucketLookupDNS
	case AddressingAuto:
	default:
		return nil, errors.New("s3 history: addressing must be path, virtual-host or empty")
	}
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = 5
	}
	return minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken),
		Secure:       secure,
		Transport:    boundedTransfers{boundedListings{transport}, cfg.transferTimeout()},
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   retries,
	})
}

// maxResponseHeaderBytes bounds an answer's headers: S3 services send a few KiB (user
// metadata is at most 2 KiB), the transport's own default is 10 MiB.
const maxResponseHeaderBytes = 64 << 10

func newTransport(cfg Config) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	// Headers are held outside the decode budget, once per request in flight.
	t.MaxResponseHeaderBytes = maxResponseHeaderBytes
	t.ResponseHeaderTimeout = cfg.RequestTimeout
	if t.ResponseHeaderTimeout == 0 {
		t.ResponseHeaderTimeout = 30 * time.Second
	}
	if cfg.dial != nil {
		t.DialContext = cfg.dial
	}
	if len(cfg.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(cfg.CABundle) {
			return nil, errors.New("s3 history: the CA bundle holds no PEM certificate")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return t, nil
}
