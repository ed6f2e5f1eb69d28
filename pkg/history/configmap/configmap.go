// Package configmap stores conversation histories in Kubernetes ConfigMaps:
// one small mutable index ConfigMap moved by compare-and-swap on its
// resourceVersion, plus immutable ConfigMaps for tail objects, sealed
// segments and checkpoints. Every ConfigMap carries the Conversation's owner
// reference, so the garbage collector removes them with it.
//
// It suits small histories on clusters without object storage: a history
// is capped at Config.MaxBytes and one record at about 675 KiB.
package configmap

import (
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/parley-dev/parley/pkg/history"
	"github.com/parley-dev/parley/pkg/history/internal/engine"
)

// Defaults, chosen against the measured limits: a ConfigMap's data fails
// past 1 MiB, so objects stay at 900 KiB and segments seal at 256 KiB.
const (
	DefaultMaxBytes  = 8 << 20
	DefaultSealBytes = 256 << 10
	maxObjectBytes   = 900 << 10
	// DefaultMaxOpenBytes bounds the entries the index ConfigMap carries itself. Every
	// append rewrites the index, and etcd keeps each revision until its compaction, so the
	// bound is smaller than on S3: about 16 KiB are rewritten per append on average.
	DefaultMaxOpenBytes = 32 << 10
)

// tooLargeHint ends every ErrTooLarge of this backend.
const tooLargeHint = "; ConfigMap histories are small by design: raise spec.history.configMap.maxBytes or use spec.history.objectStore"

// Config configures the ConfigMap backend.
type Config struct {
	// Client must read from the API server, not from an informer cache
	// (e.g. client.New, or the manager's APIReader for reads): the protocol
	// relies on fresh reads of the index.
	Client client.Client
	// Namespace, when set, holds the ConfigMaps of every history and names
	// are plain. When empty, one store serves the whole cluster and every
	// name is "<namespace>/<name>" (the Conversation's namespace and name).
	Namespace string
	// MaxBytes caps the payload of one history, all retained epochs
	// together; 0 means DefaultMaxBytes.
	MaxBytes int64
	// SealBytes and MaxTailObjects set when the tail is sealed into a
	// segment; 0 means DefaultSealBytes and 32.
	SealBytes      int64
	MaxTailObjects int
	// MaxOpenBytes bounds the encoded entries the index carries itself, so that an append
	// costs one request; 0 means DefaultMaxOpenBytes.
	MaxOpenBytes int
	// CompressSegments gzips sealed segments (smaller, no longer readable
	// as text in place).
	CompressSegments bool
	// Linger delays each group commit to gather more appends; 0: none.
	Linger time.Duration
	// DecodeBudget bounds the memory that decoding objects takes at once; give every store of
	// a process the same one. Nil: a default budget of this store's own.
	DecodeBudget *history.DecodeBudget
}

// New returns a Store keeping histories in ConfigMaps.
func New(cfg Config) (history.Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("configmap history: a client is required")
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.SealBytes == 0 {
		cfg.SealBytes = DefaultSealBytes
	}
	if cfg.MaxOpenBytes == 0 {
		cfg.MaxOpenBytes = DefaultMaxOpenBytes
	}
	if cfg.MaxOpenBytes > maxObjectBytes/2 {
		return nil, errors.New("configmap history: MaxOpenBytes must stay below half of a ConfigMap (450 KiB)")
	}
	return engine.New(&backend{client: cfg.Client, namespace: cfg.Namespace}, engine.Options{
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
