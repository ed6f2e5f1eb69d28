package engine

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
)

// Object keys. An epoch tag ("e3-k2x9qa") names one epoch and is never
// reused, so the leftovers of an abandoned epoch can never be mistaken for
// the data of a later one.
//
//	index                                  the manifest, moved by compare-and-swap
//	<tag>.s.<first>-<last>                 sealed segment (committed records only)
//	<tag>.t.<first>-<last>.<nonce>         tail object written by one commit attempt
//	ckpt.<sha256 hex>                      checkpoint
const (
	indexKey         = "index"
	checkpointPrefix = "ckpt."
	seqDigits        = 12
)

func newNonce(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func newEpochTag(epoch uint64) string { return fmt.Sprintf("e%d-%s", epoch, newNonce(6)) }

func sealedKey(tag string, first, last uint64) string {
	return tag + ".s." + seqString(first) + "-" + seqString(last)
}

func tailKey(tag string, first, last uint64) string {
	return tag + ".t." + seqString(first) + "-" + seqString(last) + "." + newNonce(8)
}

func seqString(n uint64) string { return fmt.Sprintf("%0*d", seqDigits, n) }

func sealedPrefix(tag string) string { return tag + ".s." }

// dataKey is a parsed segment or tail key.
type dataKey struct {
	tag         string
	tail        bool
	first, last uint64
}

// parseDataKey accepts a key only in the form the keys above write: readers
// and Retain rebuild sealed keys from the parsed range, so a key read in
// another form ("e1-x.s.1-2", a suffix) would name an object that does not
// exist, or be mistaken for a segment.
func parseDataKey(key string) (dataKey, bool) {
	parts := strings.Split(key, ".")
	var k dataKey
	switch {
	case len(parts) == 3 && parts[1] == "s":
	case len(parts) == 4 && parts[1] == "t" && parts[3] != "":
		k.tail = true
	default:
		return dataKey{}, false
	}
	k.tag = parts[0]
	first, last, ok := strings.Cut(parts[2], "-")
	if k.tag == "" || !ok {
		return dataKey{}, false
	}
	var err1, err2 error
	k.first, err1 = strconv.ParseUint(first, 10, 64)
	k.last, err2 = strconv.ParseUint(last, 10, 64)
	if err1 != nil || err2 != nil || k.first == 0 || k.last < k.first ||
		seqString(k.first) != first || seqString(k.last) != last {
		return dataKey{}, false
	}
	return k, true
}
