package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/parley-dev/parley/pkg/history"
)

// manifest is the index object. It stays small: the tail list and the open tail are bounded
// by the seal policy and the list of older epochs by retention; sealed segments are found by
// listing their key prefix, not listed here.
//
// The sequences of the current epoch live in three places, in this order:
//
//	1 … SealedThrough                  sealed segments (found by listing)
//	… up to the last tail object       tail objects listed in Tail
//	… up to LastSeq                    the open tail, carried inside the index itself
//
// so an append that fits the open tail costs one request: the compare-and-swap of the index.
type manifest struct {
	Format int `json:"format"`
	// Generation grows with every replace, so no two versions of the index have the same
	// bytes: S3 ETags are content hashes, and If-Match on a repeated content would accept a
	// stale writer.
	Generation uint64 `json:"generation"`
	Epoch      uint64 `json:"epoch"`
	Tag        string `json:"tag"`
	// LastSeq is the last committed sequence of the current epoch.
	LastSeq uint64 `json:"lastSeq"`
	// Bytes sums the payload bytes of the current epoch.
	Bytes int64 `json:"bytes"`
	// SealedThrough: sequences up to it live in sealed segments, the rest in Tail and open.
	SealedThrough uint64    `json:"sealedThrough"`
	Tail          []tailRef `json:"tail,omitempty"`
	// Old lists the retained earlier epochs, oldest first; all of them sealed.
	Old []epochRef `json:"old,omitempty"`

	// open holds the last entries of the epoch, after the tail objects (format 2).
	open openTail
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

// Index formats. Format 1 (written by earlier versions) is one JSON object and keeps every entry in tail
// objects or segments. Format 2 is JSON lines: the same object as a header line, the open
// tail's entries as segment lines, and a footer whose checksum covers both:
//
//	{"format":2,"generation":7,"epoch":1,"tag":"e1-abc","lastSeq":40,…}
//	{"s":39,"id":"m-39","j":{"role":"user"}}
//	{"s":40,"id":"m-40","j":{"role":"assistant"}}
//	{"end":{"n":2,"sha256":"<sha256 of the lines above, header included>"}}
//
// Both are read; format 2 is written. A format 1 reader refuses a format 2 index as
// ErrCorrupt (it is not one JSON value), so it never misreads one.
const (
	manifestFormatV1 = 1
	manifestFormat   = 2
)

func newManifest() manifest {
	return manifest{Format: manifestFormat, Epoch: 1, Tag: newEpochTag(1)}
}

// encode writes the index in the current format.
func (m manifest) encode() []byte {
	m.Format = manifestFormat
	header, _ := json.Marshal(m)
	buf := make([]byte, 0, len(header)+1+m.open.size+footerSize)
	buf = append(append(buf, header...), '\n')
	for _, l := range m.open.lines {
		buf = append(buf, l...)
	}
	return sealLines(buf, len(m.open.lines))
}

// successor is the index to write over m.
func (m manifest) successor() manifest {
	m.Generation++
	return m
}

func decodeManifest(data []byte) (manifest, error) {
	header, rest, _ := bytes.Cut(data, []byte("\n"))
	var m manifest
	if err := json.Unmarshal(header, &m); err != nil {
		return manifest{}, fmt.Errorf("%w: index: %w", history.ErrCorrupt, err)
	}
	switch m.Format {
	case manifestFormatV1:
		if len(bytes.TrimSpace(rest)) > 0 {
			return manifest{}, fmt.Errorf("%w: index format 1 followed by more data", history.ErrCorrupt)
		}
	case manifestFormat:
		lines, n, err := verifyFooter(data)
		if err != nil {
			return manifest{}, fmt.Errorf("index: %w", err)
		}
		if m.open, err = splitOpen(lines[len(header)+1:], n); err != nil {
			return manifest{}, err
		}
	default:
		return manifest{}, fmt.Errorf("%w: index format %d not supported (written by a newer version?)", history.ErrCorrupt, m.Format)
	}
	m.Format = manifestFormat // what this process writes back
	if uint64(len(m.open.lines)) > m.LastSeq-min(m.SealedThrough, m.LastSeq) || m.SealedThrough > m.LastSeq {
		return manifest{}, fmt.Errorf("%w: index holds %d open entries, sealed through %d, last sequence %d",
			history.ErrCorrupt, len(m.open.lines), m.SealedThrough, m.LastSeq)
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

// openFirst is the first sequence of the open tail (LastSeq+1 when it is empty).
func (m manifest) openFirst() uint64 { return m.LastSeq - uint64(len(m.open.lines)) + 1 }

// pieces counts what the index points at or carries after the sealed segments: tail objects
// and open entries. Both are bounded, which bounds the index.
func (m manifest) pieces() int { return len(m.Tail) + len(m.open.lines) }

// unsealedBytes sums the payload bytes not yet in sealed segments: in tail objects and in
// the open tail (known to the writer, which keeps the open entries decoded).
func (m manifest) unsealedBytes() int64 { return m.tailBytes() + m.open.payload }

// sealedTo drops from m what a sealed segment chain through `through` now holds: tail objects
// ending at or before it and open entries up to it. It refuses (false) when through does not
// continue the sealed prefix, lies outside the unsealed range, or falls inside a tail object.
func (m manifest) sealedTo(tag string, first, through uint64) (manifest, []string, bool) {
	if tag != m.Tag || first != m.SealedThrough+1 || through < first || through > m.LastSeq {
		return m, nil, false
	}
	var kept []tailRef
	var dropped []string
	for _, t := range m.Tail {
		dk, ok := parseDataKey(t.Key)
		switch {
		case !ok:
			return m, nil, false
		case dk.last <= through:
			dropped = append(dropped, t.Key)
		case dk.first <= through:
			return m, nil, false // straddles: keep the index as it is
		default:
			kept = append(kept, t)
		}
	}
	if of := m.openFirst(); through >= of {
		m.open = m.open.dropFirst(int(through - of + 1))
	}
	m.SealedThrough, m.Tail = through, kept
	return m, dropped, true
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

// openTail is the run of entries the index carries itself. An index read from the backend
// keeps only their lines, decoded when asked for (a Head needs none of them); the writer that
// built them keeps both.
type openTail struct {
	// lines are the entries' encoded lines, one each, ending in '\n'.
	lines [][]byte
	// entries are the decoded entries, aligned with lines; nil until decoded.
	entries []history.Entry
	// size sums len(lines); payload sums the entries' data, when they are decoded.
	size    int
	payload int64
}

// splitOpen cuts the verified lines of an index into its open entries' lines.
func splitOpen(data []byte, n int) (openTail, error) {
	var o openTail
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		o.lines = append(o.lines, data[:i+1])
		o.size += i + 1
		data = data[i+1:]
	}
	if len(o.lines) != n {
		return openTail{}, fmt.Errorf("%w: index holds %d open entries, its footer says %d", history.ErrCorrupt, len(o.lines), n)
	}
	return o, nil
}

// with returns the open tail followed by entries (their lines given). The receiver is not
// changed: slices are copied where they would be shared.
func (o openTail) with(entries []history.Entry, lines [][]byte) openTail {
	out := openTail{
		lines: append(append(make([][]byte, 0, len(o.lines)+len(lines)), o.lines...), lines...),
		size:  o.size,
	}
	if o.entries != nil || len(o.lines) == 0 {
		out.entries = append(append(make([]history.Entry, 0, len(o.entries)+len(entries)), o.entries...), entries...)
		out.payload = o.payload + payloadOf(entries)
	}
	for _, l := range lines {
		out.size += len(l)
	}
	return out
}

func payloadOf(entries []history.Entry) int64 {
	var n int64
	for _, e := range entries {
		n += int64(len(e.Data))
	}
	return n
}

// dropFirst returns the open tail without its first k entries.
func (o openTail) dropFirst(k int) openTail {
	k = min(k, len(o.lines))
	out := openTail{lines: o.lines[k:], size: o.size}
	for _, l := range o.lines[:k] {
		out.size -= len(l)
	}
	if o.entries != nil {
		out.entries = o.entries[k:]
		out.payload = o.payload - payloadOf(o.entries[:k])
	}
	if len(out.lines) == 0 {
		return openTail{}
	}
	return out
}

// decoded returns the open tail with its entries decoded; first is its first sequence.
func (o openTail) decoded(first uint64) (openTail, error) {
	if o.entries != nil || len(o.lines) == 0 {
		return o, nil
	}
	entries, err := o.from(first, first)
	if err != nil {
		return o, err
	}
	o.entries, o.payload = entries, payloadOf(entries)
	return o, nil
}

// from returns the open entries from sequence seq on; first is the open tail's first sequence.
// Lines before seq are skipped without being decoded.
func (o openTail) from(first, seq uint64) ([]history.Entry, error) {
	if seq < first {
		seq = first
	}
	skip := seq - first
	if skip >= uint64(len(o.lines)) {
		return nil, nil
	}
	if o.entries != nil {
		return o.entries[skip:], nil
	}
	out := make([]history.Entry, 0, uint64(len(o.lines))-skip)
	for i, l := range o.lines[skip:] {
		e, err := decodeLine(l[:len(l)-1])
		if err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		if want := seq + uint64(i); e.Seq != want {
			return nil, fmt.Errorf("%w: index entry has sequence %d, want %d", history.ErrCorrupt, e.Seq, want)
		}
		out = append(out, e)
	}
	return out, nil
}

// footerSum is the footer checksum of lines.
func footerSum(lines []byte) string {
	sum := sha256.Sum256(lines)
	return hex.EncodeToString(sum[:])
}
