package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"

	"github.com/minio/minio-go/v7"

	"github.com/parley-dev/parley/pkg/history"
)

// ErrConditionalWritesUnsupported means the store accepted a write whose precondition did not
// hold. The history's compare-and-swap relies on If-None-Match and If-Match: on such a store two
// writers could both win and acknowledged messages could be lost.
var ErrConditionalWritesUnsupported = errors.New("s3 history: the store ignores conditional writes (If-None-Match / If-Match)")

// CheckConditionalWrites proves, with a throw-away object under cfg.Prefix, that the store
// refuses a create of an existing key and a replace with a stale ETag. Call it once per store
// configuration before trusting the store with history; it writes and deletes one small object.
func CheckConditionalWrites(ctx context.Context, cfg Config) error {
	client, err := newClient(cfg)
	if err != nil {
		return err
	}
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	key := path.Join(cfg.Prefix, ".parley-probe", hex.EncodeToString(nonce))
	put := func(opts minio.PutObjectOptions) error {
		opts.DisableMultipart = true
		data := []byte("parley conditional-write probe")
		_, err := client.PutObject(ctx, cfg.Bucket, key, bytes.NewReader(data), int64(len(data)), opts)
		if err != nil {
			return mapError("probe", err)
		}
		return nil
	}
	defer func() {
		_ = client.RemoveObject(context.WithoutCancel(ctx), cfg.Bucket, key, minio.RemoveObjectOptions{})
	}()

	var create minio.PutObjectOptions
	create.SetMatchETagExcept("*")
	if err := put(create); err != nil {
		return fmt.Errorf("s3 history: probe create: %w", err)
	}
	if err := put(create); !errors.Is(err, history.ErrConflict) {
		if err != nil {
			return fmt.Errorf("s3 history: probe create of an existing key: %w", err)
		}
		return fmt.Errorf("%w: a second create of the same key succeeded", ErrConditionalWritesUnsupported)
	}
	var replace minio.PutObjectOptions
	replace.SetMatchETag(`"00000000000000000000000000000000"`)
	if err := put(replace); !errors.Is(err, history.ErrConflict) {
		if err != nil {
			return fmt.Errorf("s3 history: probe replace with a stale ETag: %w", err)
		}
		return fmt.Errorf("%w: a replace with a stale ETag succeeded", ErrConditionalWritesUnsupported)
	}
	return nil
}
