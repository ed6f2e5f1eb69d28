package engine

import (
	"bytes"
	"compress/gzip"
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

// encodeLine returns one entry's line.
func encodeLine(e history.Entry) []byte {
	id, _ := json.Marshal(e.ID)
	buf := make([]byte, 0, len(id)+len(e.Data)*4/3+48) // base64 at worst
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

// sealLines closes encoded lines with the footer; n is the number of entries among them. It
// appends to lines (which the caller owns) rather than copying them.
func sealLines(lines []byte, n int) []byte {
	f, _ := json.Marshal(struct {
		End footer `json:"end"`
	}{footer{N: n, SHA256: footerSum(lines)}})
	return append(append(lines, f...), '\n')
}

func encodeEntries(entries []history.Entry) []byte {
	return joinLines(encodeAll(entries))
}

// encodeAll returns each entry's line.
func encodeAll(entries []history.Entry) [][]byte {
	lines := make([][]byte, len(entries))
	for i, e := range entries {
		lines[i] = encodeLine(e)
	}
	return lines
}

// joinLines is the object holding lines, closed by the footer: one allocation.
func joinLines(lines [][]byte) []byte {
	n := footerSize
	for _, l := range lines {
		n += len(l)
	}
	buf := make([]byte, 0, n)
	for _, l := range lines {
		buf = append(buf, l...)
	}
	return sealLines(buf, len(lines))
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
	lines, n, err := verifyFooter(data)
	if err != nil {
		return nil, fmt.Errorf("segment: %w", err)
	}
	entries := make([]history.Entry, 0, n)
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		e, err := decodeLine(lines[:i])
		if err != nil {
			return nil, fmt.Errorf("segment: %w", err)
		}
		entries = append(entries, e)
		lines = lines[i+1:]
	}
	if len(entries) != n {
		return nil, fmt.Errorf("%w: segment holds %d entries, footer says %d", history.ErrCorrupt, len(entries), n)
	}
	return entries, nil
}

// verifyFooter checks the footer line that closes data against the lines before it and
// returns those lines and the count the footer gives (the number of lines it covers). The
// footer ends with a newline, as sealLines writes it: an object cut there is corrupt, and every
// line of an accepted one, the footer's too, ends with its newline.
func verifyFooter(data []byte) (lines []byte, n int, err error) {
	body, closed := bytes.CutSuffix(data, []byte("\n"))
	if !closed {
		return nil, 0, fmt.Errorf("%w: no footer", history.ErrCorrupt)
	}
	cut := bytes.LastIndexByte(body, '\n') + 1
	var f line
	if err := json.Unmarshal(body[cut:], &f); err != nil || f.End == nil {
		return nil, 0, fmt.Errorf("%w: no footer", history.ErrCorrupt)
	}
	lines = data[:cut]
	if footerSum(lines) != f.End.SHA256 {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", history.ErrCorrupt)
	}
	// The count is not under the checksum: check it before trusting it.
	if f.End.N < 0 || f.End.N > bytes.Count(lines, []byte("\n")) {
		return nil, 0, fmt.Errorf("%w: footer counts %d entries", history.ErrCorrupt, f.End.N)
	}
	return lines, f.End.N, nil
}

// decodeLine decodes one entry's line (without its newline).
func decodeLine(l []byte) (history.Entry, error) {
	var ln line
	if err := json.Unmarshal(l, &ln); err != nil {
		return history.Entry{}, fmt.Errorf("%w: line: %w", history.ErrCorrupt, err)
	}
	if ln.End != nil {
		return history.Entry{}, fmt.Errorf("%w: a footer where an entry belongs", history.ErrCorrupt)
	}
	e := history.Entry{Seq: ln.Seq, ID: ln.ID, Data: ln.B64}
	if ln.JSON != nil {
		e.Data = ln.JSON
	}
	if e.Data == nil {
		e.Data = []byte{}
	}
	return e, nil
}

// footerSize bounds the encoded footer's length.
const footerSize = 96
