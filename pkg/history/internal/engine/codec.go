package engine

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/parley-dev/parley/pkg/history"
)

// Segments and tail objects are JSON lines, one entry per line, closed by a
// footer line holding the entry count and the sha256 of the lines before it:
//
//	{"s":1,"id":"m-1","j":{"role":"user"}}     data that is one-line JSON, verbatim
//	{"s":2,"id":"m-2","b":"AAEC"}               any other data, base64
//	{"end":{"n":2,"sha256":"…"}}
//
// Records stay readable with kubectl or an S3 browser, and a torn or edited
// object is detected on read.

type line struct {
	Seq  uint64          `json:"s"`
	ID   string          `json:"id"`
	JSON json.RawMessage `json:"j,omitempty"`
	B64  []byte          `json:"b,omitempty"`
	End  *footer         `json:"end,omitempty"`
}

type footer struct {
	N      int    `json:"n"`
	SHA256 string `json:"sha256"`
}

// encodeLine appends one entry's line to buf.
func encodeLine(buf []byte, e history.Entry) []byte {
	id, _ := json.Marshal(e.ID)
	buf = append(buf, `{"s":`...)
	buf = strconv.AppendUint(buf, e.Seq, 10)
	buf = append(buf, `,"id":`...)
	buf = append(buf, id...)
	if isOneLineJSON(e.Data) {
		buf = append(buf, `,"j":`...)
		buf = append(buf, e.Data...)
	} else {
		b64, _ := json.Marshal(e.Data)
		buf = append(buf, `,"b":`...)
		buf = append(buf, b64...)
	}
	return append(buf, "}\n"...)
}

// isOneLineJSON: data can be embedded verbatim and decoded back to the same
// bytes. A decoder drops whitespace around a value, so data must not have any.
func isOneLineJSON(data []byte) bool {
	return len(data) > 0 && !isSpace(data[0]) && !isSpace(data[len(data)-1]) &&
		bytes.IndexByte(data, '\n') < 0 && utf8.Valid(data) && json.Valid(data)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// sealLines closes encoded lines with the footer.
func sealLines(lines []byte, n int) []byte {
	sum := sha256.Sum256(lines)
	f, _ := json.Marshal(struct {
		End footer `json:"end"`
	}{footer{N: n, SHA256: hex.EncodeToString(sum[:])}})
	out := make([]byte, 0, len(lines)+len(f)+1)
	out = append(out, lines...)
	out = append(out, f...)
	return append(out, '\n')
}

func encodeEntries(entries []history.Entry) []byte {
	var buf []byte
	for _, e := range entries {
		buf = encodeLine(buf, e)
	}
	return sealLines(buf, len(entries))
}

// maxInflated bounds a decompressed segment (a guard against gzip bombs).
const maxInflated = 1 << 30

// compress gzips an encoded segment. Readers recognise gzip by its magic
// bytes: JSON lines always start with '{'.
func compress(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

func isGzip(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// decodeEntries verifies the footer and decodes every entry.
func decodeEntries(data []byte) ([]history.Entry, error) {
	if isGzip(data) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%w: segment: %w", history.ErrCorrupt, err)
		}
		if data, err = io.ReadAll(io.LimitReader(zr, maxInflated)); err != nil {
			return nil, fmt.Errorf("%w: segment: %w", history.ErrCorrupt, err)
		}
	}
	body := bytes.TrimSuffix(data, []byte("\n"))
	cut := bytes.LastIndexByte(body, '\n') + 1
	var f line
	if err := json.Unmarshal(body[cut:], &f); err != nil || f.End == nil {
		return nil, fmt.Errorf("%w: segment has no footer", history.ErrCorrupt)
	}
	lines := data[:cut]
	sum := sha256.Sum256(lines)
	if hex.EncodeToString(sum[:]) != f.End.SHA256 {
		return nil, fmt.Errorf("%w: segment checksum mismatch", history.ErrCorrupt)
	}
	// The count is not under the checksum: check it before trusting it.
	if f.End.N < 0 || f.End.N != bytes.Count(lines, []byte("\n")) {
		return nil, fmt.Errorf("%w: segment footer counts %d entries", history.ErrCorrupt, f.End.N)
	}
	entries := make([]history.Entry, 0, f.End.N)
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		var l line
		if err := json.Unmarshal(lines[:i], &l); err != nil {
			return nil, fmt.Errorf("%w: segment line: %w", history.ErrCorrupt, err)
		}
		e := history.Entry{Seq: l.Seq, ID: l.ID, Data: l.B64}
		if l.JSON != nil {
			e.Data = l.JSON
		}
		if e.Data == nil {
			e.Data = []byte{}
		}
		entries = append(entries, e)
		lines = lines[i+1:]
	}
	if len(entries) != f.End.N {
		return nil, fmt.Errorf("%w: segment holds %d entries, footer says %d", history.ErrCorrupt, len(entries), f.End.N)
	}
	return entries, nil
}

// footerSize bounds the encoded footer's length.
const footerSize = 96
