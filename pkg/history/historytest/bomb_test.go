package historytest_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/parley-dev/parley/pkg/history/historytest"
)

// The bomb is what it says: a gzip member that inflates to n zero bytes, its checksum and
// declared size true, about a thousandth of n long.
func TestGzipBomb(t *testing.T) {
	for _, n := range []int64{5, 1 << 20, 3<<20 + 17} {
		bomb := historytest.GzipBomb(n)
		zr, err := gzip.NewReader(bytes.NewReader(bomb))
		if err != nil {
			t.Fatal(err)
		}
		var zeros int64
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
		if zeros != n {
			t.Fatalf("bomb of %d bytes inflated to %d zeros", n, zeros)
		}
		if n >= 1<<20 && int64(len(bomb)) > n/500 {
			t.Fatalf("bomb of %d bytes takes %d compressed", n, len(bomb))
		}
	}
}
