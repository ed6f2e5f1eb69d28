package historytest

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
)

// bombHead starts a bomb as an entry line of a segment starts, so a reader cannot refuse it
// from its first bytes: it has to read on, and the line never ends.
const bombHead = `{"s":1,"id":"bomb","b":"`

// GzipBomb returns a gzip member that inflates to n bytes (at least len(bombHead)) while it is
// about a thousandth of that long: the hostile segment a tenant who can write a history's
// bucket or ConfigMaps might plant. It inflates to the start of an entry line followed by zero
// bytes, and its trailer declares the true size (modulo 2^32). It is built from a few
// compressed chunks repeated, so making one costs far less than compressing n bytes.
func GzipBomb(n int64) []byte {
	const chunk = 1 << 20
	zeros := make([]byte, chunk)
	var out bytes.Buffer
	out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}) // deflate, no name, no time
	// The first chunk starts the stream; each later one may refer back to the zeros before it
	// (a window of 32 KiB), so one compressed copy stands for every full chunk after the first.
	// Each ends with a flush, which aligns it to a byte.
	first := min(n, chunk)
	head := append([]byte(bombHead), zeros[:first-int64(len(bombHead))]...)
	out.Write(deflateZeros(head, nil))
	full, rest := (n-first)/chunk, (n-first)%chunk
	if full > 0 {
		body := deflateZeros(zeros, zeros[:32<<10])
		for range full {
			out.Write(body)
		}
	}
	if rest > 0 {
		out.Write(deflateZeros(zeros[:rest], zeros[:32<<10]))
	}
	out.Write([]byte{1, 0, 0, 0xff, 0xff}) // the last block: stored, empty

	crc := crc32.Update(0, crc32.IEEETable, head)
	for left := n - first; left > 0; left -= chunk {
		crc = crc32.Update(crc, crc32.IEEETable, zeros[:min(left, chunk)])
	}
	out.Write(binary.LittleEndian.AppendUint32(nil, crc))
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
	return out.Bytes()
}

// deflateZeros compresses data (zeros, after a first chunk) as a stretch of a deflate stream that follows dict, flushed so it
// ends on a byte boundary and leaves the stream open.
func deflateZeros(data, dict []byte) []byte {
	var buf bytes.Buffer
	var fw *flate.Writer
	if dict == nil {
		fw, _ = flate.NewWriter(&buf, flate.BestCompression)
	} else {
		fw, _ = flate.NewWriterDict(&buf, flate.BestCompression, dict)
	}
	_, _ = fw.Write(data)
	_ = fw.Flush()
	return buf.Bytes()
}

// HideSize returns a copy of a gzip member whose trailer declares a size of 0, as a hostile
// writer may: only inflating it tells how large it is.
func HideSize(gz []byte) []byte { return DeclareSize(gz, 0) }

// DeclareSize returns a copy of a gzip member whose trailer declares n bytes (modulo 2^32): a
// bomb declaring the largest size its store accepts is inflated that far before it is found
// out, the costliest object a hostile writer can plant.
func DeclareSize(gz []byte, n int64) []byte {
	out := bytes.Clone(gz)
	binary.LittleEndian.PutUint32(out[len(out)-4:], uint32(n))
	return out
}
