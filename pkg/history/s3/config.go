// Package s3 stores conversation histories in any S3-compatible object
// store (AWS S3, MinIO, versitygw, Ceph RGW, Cloudflare R2, GCS interop):
// immutable JSONL segment objects plus one small manifest object moved with
// conditional writes (If-None-Match: * to create, If-Match: <etag> to
// advance). Concurrent appends of one process share each durable PUT
// (group commit).
package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/parley-dev/parley/pkg/history"
)

// Addressing selects how the bucket appears in request URLs.
type Addressing string

// Addressing styles. Auto lets the client choose (virtual-host for AWS and
// GCS endpoints, path-style for the rest).
const (
	AddressingAuto        Addressing = ""
	AddressingPath        Addressing = "path"
	AddressingVirtualHost Addressing = "virtual-host"
)

// Keys of the credentials Secret read by ConfigFromSecret.
const (
	SecretAccessKeyID     = "accessKeyID"
	SecretSecretAccessKey = "secretAccessKey"
	// SecretSessionToken is optional (temporary credentials).
	SecretSessionToken = "sessionToken"
	// SecretCABundle is optional: PEM certificates to trust for the endpoint.
	SecretCABundle = "ca.crt"
)

// Config configures the S3 backend.
type Config struct {
	// Endpoint is "host:port" or a URL; an "http://" URL means no TLS.
	Endpoint string
	Bucket   string
	// Prefix is put in front of every key ("parley/" → parley/<conversation>/…).
	Prefix string
	Region string
	// Insecure uses plain HTTP for a bare host:port endpoint.
	Insecure   bool
	Addressing Addressing

	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// CABundle holds PEM certificates trusted in addition to the system pool.
	CABundle []byte

	// MaxRetries for requests failing with 5xx or network errors (the
	// client backs off between them); 0 means 5.
	MaxRetries int
	// RequestTimeout bounds waiting for response headers; 0 means 30s.
	RequestTimeout time.Duration
	// TransferTimeout bounds one request's whole exchange, its body included; 0 means
	// DefaultTransferTimeout. The endpoint may send headers and then its body slowly or never.
	TransferTimeout time.Duration

	// SealBytes and MaxTailObjects set when the tail is sealed into a
	// segment; 0 means 1 MiB and 32.
	SealBytes      int64
	MaxTailObjects int
	// MaxOpenBytes bounds the encoded entries the index carries itself, so that an append
	// costs one PUT; 0 means DefaultMaxOpenBytes.
	MaxOpenBytes int
	// CompressSegments gzips sealed segments (smaller, no longer readable
	// as text in place).
	CompressSegments bool
	// Linger delays each group commit to gather more appends; 0: none
	// (appends arriving during a commit still share the next one).
	Linger time.Duration
	// MaxBytes caps a history's payload; 0: no cap.
	MaxBytes int64
	// DecodeBudget bounds the memory that reading and decoding objects takes at once; give
	// every store of a process the same one. Nil: a default budget of this store's own.
	DecodeBudget *history.DecodeBudget

	// dial replaces the transport's dialer; tests use it to resolve
	// virtual-host names without DNS.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ConfigFromSecret returns cfg with the credentials (and CA bundle, when
// present) of a Secret holding the keys accessKeyID and secretAccessKey.
func ConfigFromSecret(secret *corev1.Secret, cfg Config) (Config, error) {
	if secret == nil {
		return cfg, errors.New("s3 history: no credentials secret")
	}
	id, key := secret.Data[SecretAccessKeyID], secret.Data[SecretSecretAccessKey]
	if len(id) == 0 || len(key) == 0 {
		return cfg, fmt.Errorf("s3 history: secret %s/%s needs the keys %q and %q",
			secret.Namespace, secret.Name, SecretAccessKeyID, SecretSecretAccessKey)
	}
	cfg.AccessKeyID, cfg.SecretAccessKey = string(id), string(key)
	cfg.SessionToken = string(secret.Data[SecretSessionToken])
	if ca := secret.Data[SecretCABundle]; len(ca) > 0 {
		cfg.CABundle = ca
	}
	return cfg, nil
}

// endpoint splits Endpoint into host:port and whether to use TLS.
func (c Config) endpoint() (host string, secure bool, err error) {
	// Credentials never travel in the endpoint: it shows up in errors and status. The message
	// does not repeat the endpoint, which would print the secret.
	if strings.Contains(c.Endpoint, "@") {
		return "", false, errors.New("s3 history: the endpoint must not carry credentials (user@host); " +
			"put them in the Secret's accessKeyID and secretAccessKey")
	}
	if !strings.Contains(c.Endpoint, "://") {
		return c.Endpoint, !c.Insecure, nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return "", false, fmt.Errorf("s3 history: endpoint %q: %w", c.Endpoint, err)
	}
	if u.Path != "" && u.Path != "/" {
		return "", false, fmt.Errorf("s3 history: endpoint %q must not have a path; use Prefix", c.Endpoint)
	}
	switch u.Scheme {
	case "https":
		return u.Host, true, nil
	case "http":
		return u.Host, false, nil
	default:
		return "", false, fmt.Errorf("s3 history: endpoint scheme %q is neither http nor https", u.Scheme)
	}
}
