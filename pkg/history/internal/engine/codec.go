package engine

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
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

// gzipTrailerSize is the size a gzip member declares in its last four bytes (ISIZE: the
// inflated length modulo 2^32). compress writes a single member, so the last four bytes are
// its trailer.
func gzipTrailerSize(data []byte) int64 {
	if len(data) < 18 { // a header and a trailer at least
		return 0
	}
	t := data[len(data)-4:]
	return int64(t[0]) | int64(t[1])<<8 | int64(t[2])<<16 | int64(t[3])<<24 // little-endian
}

// decodeEntries verifies the footer and decodes every entry of an object of at most limit
// bytes (inflated, when it is a compressed segment). See bounds.go for why nothing here may
// grow past limit.
func decodeEntries(data []byte, limit int64) ([]history.Entry, error) {
	return decodeSegment(data, limit, math.MaxInt)
}

// decodeBound is the most an object of a store whose objects are at most limit bytes may
// inflate to: its length, or, compressed, the size its gzip trailer declares. An honest segment
// inflates to exactly that size, so a larger one is corrupt and decoding stops there; a trailer
// that declares more than limit is refused before anything is inflated.
func decodeBound(data []byte, limit int64) (int64, error) {
	if !isGzip(data) {
		if int64(len(data)) > limit {
			return 0, fmt.Errorf("%w: segment of %d bytes, the limit is %d", history.ErrCorrupt, len(data), limit)
		}
		return int64(len(data)), nil
	}
	if limit >= 1<<32 { // the trailer holds the size modulo 2^32
		return limit, nil
	}
	declared := gzipTrailerSize(data)
	if declared > limit {
		return 0, fmt.Errorf("%w: compressed segment declares %d bytes, the limit is %d", history.ErrCorrupt, declared, limit)
	}
	return declared, nil
}

// decodeSegment is decodeEntries of an object that may hold no more than most entries:
// decoding stops with ErrCorrupt at the next one, so what it holds stays within decodeCost.
func decodeSegment(data []byte, limit int64, most int) ([]history.Entry, error) {
	bound, err := decodeBound(data, limit)
	if err != nil {
		return nil, err
	}
	if !isGzip(data) {
		return decodeLines(bytes.NewReader(data), bound, most)
	}
	src := bytes.NewReader(data)
	zr, err := gzip.NewReader(src)
	if err != nil {
		return nil, fmt.Errorf("%w: segment: %w", history.ErrCorrupt, err)
	}
	zr.Multistream(false) // one member, as compress writes it
	entries, err := decodeLines(zr, bound, most)
	if err != nil {
		return nil, err
	}
	if src.Len() > 0 {
		return nil, fmt.Errorf("%w: %d bytes after the compressed segment", history.ErrCorrupt, src.Len())
	}
	return entries, nil
}

// decodeLines reads the lines of an object as they come (r may be an inflating reader) and
// decodes each entry, so the object is never held whole; it stops with ErrCorrupt once more
// than limit bytes, or more than most entries, came. The footer, the last line, must hold the
// number of entries and the checksum of the lines before it, and end with its newline (an
// object cut there is corrupt).
func decodeLines(r io.Reader, limit int64, most int) ([]history.Entry, error) {
	src := &io.LimitedReader{R: r, N: limit + 1}
	br := bufio.NewReaderSize(src, lineBuffer)
	sum := sha256.New()
	var entries []history.Entry
	var long []byte // a line longer than br's buffer, gathered
	for {
		// Every line this codec writes starts as an entry or the footer does: refuse anything
		// else before gathering it (a bomb of one endless line of junk ends here).
		if head, _ := br.Peek(len(footerStart)); len(head) == len(footerStart) &&
			!bytes.HasPrefix(head, entryStart) && !bytes.HasPrefix(head, footerStart) {
			return nil, fmt.Errorf("%w: segment: a line that is neither an entry nor the footer", history.ErrCorrupt)
		}
		// A line is at most what is left of the object: what br holds and what src may still give.
		l, err := readLine(br, &long, int64(br.Buffered())+src.N)
		if src.N <= 0 {
			return nil, fmt.Errorf("%w: segment holds more than %d bytes", history.ErrCorrupt, limit)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: no footer", history.ErrCorrupt)
			}
			return nil, fmt.Errorf("%w: segment: %w", history.ErrCorrupt, err)
		}
		var ln line
		if err := json.Unmarshal(l[:len(l)-1], &ln); err != nil {
			return nil, fmt.Errorf("%w: segment: line: %w", history.ErrCorrupt, err)
		}
		if ln.End != nil {
			if err := closeLines(br, ln.End, sum, len(entries)); err != nil {
				return nil, err
			}
			return entries, nil
		}
		if len(entries) == most {
			return nil, fmt.Errorf("%w: segment holds more than the %d entries its key names", history.ErrCorrupt, most)
		}
		sum.Write(l)
		entries = append(entries, entryOf(ln))
	}
}

// lineBuffer is the decoder's read buffer: lines up to its size are decoded in place.
const lineBuffer = 64 << 10

// How encodeLine and sealLines start their lines.
var entryStart, footerStart = []byte(`{"s":`), []byte(`{"end"`)

// closeLines checks the footer f read after n entries whose lines sum holds: nothing may follow it.
func closeLines(br *bufio.Reader, f *footer, sum hash.Hash, n int) error {
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		if err == nil {
			return fmt.Errorf("%w: segment: a footer where an entry belongs", history.ErrCorrupt)
		}
		return fmt.Errorf("%w: segment: %w", history.ErrCorrupt, err)
	}
	if hex.EncodeToString(sum.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("%w: segment: checksum mismatch", history.ErrCorrupt)
	}
	if f.N != n {
		return fmt.Errorf("%w: segment holds %d entries, footer says %d", history.ErrCorrupt, n, f.N)
	}
	return nil
}

// readLine returns the next line with its newline; io.EOF when the object ends, also in the
// middle of a line. A line longer than br's buffer is gathered in *long, which is allocated once
// at room, the most the line can be (what is left of the object), rather than grown by
// doubling: the decode then holds one copy of its longest line, and a bomb's endless line costs
// no garbage besides. The line is valid until the next call.
func readLine(br *bufio.Reader, long *[]byte, room int64) ([]byte, error) {
	l, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	if int64(cap(*long)) < room {
		*long = make([]byte, 0, room)
	}
	*long = (*long)[:0]
	for {
		*long = append(*long, l...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		l, err = br.ReadSlice('\n')
	}
	if err != nil {
		return nil, err
	}
	return *long, nil
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
	return entryOf(ln), nil
}

// entryOf is the entry a decoded line holds.
func entryOf(ln line) history.Entry {
	e := history.Entry{Seq: ln.Seq, ID: ln.ID, Data: ln.B64}
	if ln.JSON != nil {
		e.Data = ln.JSON
	}
	if e.Data == nil {
		e.Data = []byte{}
	}
	return e
}

// footerSize bounds the encoded footer's length.
const footerSize = 96
