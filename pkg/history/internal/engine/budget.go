package engine

import (
	"context"

	"github.com/parley-dev/parley/pkg/history"
)

// Decoding an object takes memory its stored bytes choose (bounds.go). Every decode of a
// segment, tail object or index first takes what it may hold from the store's
// history.DecodeBudget, which the stores of a process share, and gives it back when it is done:
// what it decoded is then the caller's (or the cache's, which has its own bound).

// manifestDecoder decodes an index object.
type manifestDecoder func(ctx context.Context, data []byte) (manifest, error)

// decodeManifest decodes an index object within the decode budget.
func (s *Store) decodeManifest(ctx context.Context, data []byte) (manifest, error) {
	release, err := s.opts.DecodeBudget.Acquire(ctx, manifestCost(len(data)))
	if err != nil {
		return manifest{}, err
	}
	defer release()
	return decodeManifest(data)
}

// decodeSegment decodes, within the decode budget, a segment or tail object whose key names
// this many entries.
func (s *Store) decodeSegment(ctx context.Context, data []byte, entries uint64) ([]history.Entry, error) {
	limit := s.opts.readLimit()
	bound, err := decodeBound(data, limit)
	if err != nil {
		return nil, err
	}
	release, err := s.opts.DecodeBudget.Acquire(ctx, decodeCost(len(data), bound, entries))
	if err != nil {
		return nil, err
	}
	defer release()
	failpoint("decoding")
	defer failpoint("decoded")
	return decodeSegment(data, limit, int(min(entries, uint64(bound))))
}
