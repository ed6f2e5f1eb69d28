package engine

import (
	"encoding/json"
	"fmt"

	"github.com/parley-dev/parley/pkg/history"
)

// manifest is the index object. It stays small: the tail list is bounded by
// the seal policy and the list of older epochs by retention; sealed segments
// are found by listing their key prefix, not listed here.
type manifest struct {
	Format int `json:"format"`
	// Generation grows with every replace, so no two versions of the index
	// have the same bytes: S3 ETags are content hashes, and If-Match on a
	// repeated content would accept a stale writer.
	Generation uint64 `json:"generation"`
	Epoch      uint64 `json:"epoch"`
	Tag        string `json:"tag"`
	// LastSeq is the last committed sequence of the current epoch.
	LastSeq uint64 `json:"lastSeq"`
	// Bytes sums the payload bytes of the current epoch.
	Bytes int64 `json:"bytes"`
	// SealedThrough: sequences up to it live in sealed segments, the rest in Tail.
	SealedThrough uint64    `json:"sealedThrough"`
	Tail          []tailRef `json:"tail,omitempty"`
	// Old lists the retained earlier epochs, oldest first; all of them sealed.
	Old []epochRef `json:"old,omitempty"`
}

type tailRef struct {
	Key   string `json:"k"`
	Bytes int64  `json:"b"`
}

type epochRef struct {
	Epoch   uint64 `json:"epoch"`
	Tag     string `json:"tag"`
	LastSeq uint64 `json:"lastSeq"`
	Bytes   int64  `json:"bytes"`
}

const manifestFormat = 1

func newManifest() manifest {
	return manifest{Format: manifestFormat, Epoch: 1, Tag: newEpochTag(1)}
}

func (m manifest) encode() []byte {
	b, _ := json.Marshal(m)
	return b
}

// successor is the index to write over m.
func (m manifest) successor() manifest {
	m.Generation++
	return m
}

func decodeManifest(data []byte) (manifest, error) {
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return manifest{}, fmt.Errorf("%w: index: %w", history.ErrCorrupt, err)
	}
	if m.Format != manifestFormat {
		return manifest{}, fmt.Errorf("%w: index format %d not supported", history.ErrCorrupt, m.Format)
	}
	return m, nil
}

func (m manifest) tailBytes() int64 {
	var n int64
	for _, t := range m.Tail {
		n += t.Bytes
	}
	return n
}

// totalBytes counts every retained epoch, for the per-conversation limit.
func (m manifest) totalBytes() int64 {
	n := m.Bytes
	for _, o := range m.Old {
		n += o.Bytes
	}
	return n
}

// epochByNumber returns the tag and length of a retained epoch.
func (m manifest) epochByNumber(epoch uint64) (epochRef, bool) {
	if epoch == 0 || epoch == m.Epoch {
		return epochRef{Epoch: m.Epoch, Tag: m.Tag, LastSeq: m.LastSeq, Bytes: m.Bytes}, true
	}
	for _, o := range m.Old {
		if o.Epoch == epoch {
			return o, true
		}
	}
	return epochRef{}, false
}

func (m manifest) head() history.Head {
	return history.Head{Epoch: m.Epoch, Sequence: m.LastSeq, Bytes: m.Bytes}
}
