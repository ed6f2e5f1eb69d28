package engine

import (
	"crypto/rand"
	"fmt"
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
	return fmt.Sprintf("%s.s.%0*d-%0*d", tag, seqDigits, first, seqDigits, last)
}

func tailKey(tag string, first, last uint64) string {
	return fmt.Sprintf("%s.t.%0*d-%0*d.%s", tag, seqDigits, first, seqDigits, last, newNonce(8))
}

func sealedPrefix(tag string) string { return tag + ".s." }

// dataKey is a parsed segment or tail key.
type dataKey struct {
	tag         string
	tail        bool
	first, last uint64
}

func parseDataKey(key string) (dataKey, bool) {
	parts := strings.Split(key, ".")
	if len(parts) < 3 || (parts[1] != "s" && parts[1] != "t") {
		return dataKey{}, false
	}
	var k dataKey
	k.tag, k.tail = parts[0], parts[1] == "t"
	if _, err := fmt.Sscanf(parts[2], "%d-%d", &k.first, &k.last); err != nil || k.first == 0 || k.last < k.first {
		return dataKey{}, false
	}
	return k, true
}
