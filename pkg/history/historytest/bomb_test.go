package historytest_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/parley-dev/parley/pkg/history/historytest"
)

// The bomb is what it says: a gzip member that inflates to n bytes, the start of an entry line
// and zeros, its checksum and declared size true, about a thousandth of n long.
func TestGzipBomb(t *testing.T) {
	const head = `{"s":1,"id":"bomb","b":"`
	for _, n := range []int64{int64(len(head)), 1 << 20, 3<<20 + 17} {
		bomb := historytest.GzipBomb(n)
		zr, err := gzip.NewReader(bytes.NewReader(bomb))
		if err != nil {
			t.Fatal(err)
		}
		var zeros int64
		start := make([]byte, len(head))
		if _, err := io.ReadFull(zr, start); err != nil || string(start) != head {
			t.Fatalf("bomb of %d bytes starts with %q (%v)", n, start, err)
		}
		buf := make([]byte, 64<<10)
		for {
			k, err := zr.Read(buf)
			zeros += int64(k - len(bytes.TrimLeft(buf[:k], "\x00")))
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("bomb of %d bytes: %v", n, err)
			}
		}
		if zeros != n-int64(len(head)) {
			t.Fatalf("bomb of %d bytes inflated to %d zeros after its head", n, zeros)
		}
		if n >= 1<<20 && int64(len(bomb)) > n/500 {
			t.Fatalf("bomb of %d bytes takes %d compressed", n, len(bomb))
		}
	}
}
