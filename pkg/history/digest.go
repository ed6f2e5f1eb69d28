package history

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const digestPrefix = "sha256:"

// DigestOf returns the digest of a checkpoint's bytes.
func DigestOf(data []byte) Digest {
	sum := sha256.Sum256(data)
	return Digest(digestPrefix + hex.EncodeToString(sum[:]))
}

// Hex returns the 64 hex digits of a well-formed digest, or "" otherwise.
func (d Digest) Hex() string {
	h, ok := strings.CutPrefix(string(d), digestPrefix)
	if !ok || len(h) != sha256.Size*2 {
		return ""
	}
	if _, err := hex.DecodeString(h); err != nil || strings.ToLower(h) != h {
		return ""
	}
	return h
}
