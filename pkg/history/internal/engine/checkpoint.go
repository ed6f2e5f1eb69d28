package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-dev/parley/pkg/history"
)

// PutCheckpoint implements history.History.
func (h *log) PutCheckpoint(ctx context.Context, data []byte) (history.Digest, error) {
	if len(data) > h.opts.MaxObjectBytes {
		return "", fmt.Errorf("%w: checkpoint has %d bytes, the limit is %d%s",
			history.ErrTooLarge, len(data), h.opts.MaxObjectBytes, h.opts.TooLargeHint)
	}
	d := history.DigestOf(data)
	key := checkpointPrefix + d.Hex()
	_, err := h.objects.Create(ctx, key, data)
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, history.ErrConflict) {
		return "", err
	}
	// It exists (or S3 says an upload of it is in flight): acknowledge only
	// a copy that matches the digest, and replace a corrupt one.
	existing, _, gerr := h.objects.Get(ctx, key)
	switch {
	case errors.Is(gerr, history.ErrNotFound):
		return "", err
	case gerr != nil:
		return "", gerr
	case history.DigestOf(existing) == d:
		return d, nil
	}
	if err := h.objects.Delete(ctx, key); err != nil {
		return "", err
	}
	if err := h.createIfAbsent(ctx, key, data); err != nil {
		return "", err
	}
	return d, nil
}

// GetCheckpoint implements history.History.
func (h *log) GetCheckpoint(ctx context.Context, d history.Digest) ([]byte, error) {
	hex := d.Hex()
	if hex == "" {
		return nil, fmt.Errorf("checkpoint digest %q: %w", d, history.ErrNotFound)
	}
	data, _, err := h.objects.Get(ctx, checkpointPrefix+hex)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", d, err)
	}
	if history.DigestOf(data) != d {
		return nil, fmt.Errorf("%w: checkpoint %s does not match its digest", history.ErrCorrupt, d)
	}
	return data, nil
}

// Checkpoints implements history.History.
func (h *log) Checkpoints(ctx context.Context) ([]history.Digest, error) {
	infos, err := h.objects.List(ctx, checkpointPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]history.Digest, 0, len(infos))
	for _, info := range infos {
		out = append(out, history.Digest("sha256:"+strings.TrimPrefix(info.Key, checkpointPrefix)))
	}
	return out, nil
}
